"""Kafka ACLs as mm2ctl meets them: who mm2ctl is to a cluster, what each of its calls needs, and the one line a
denial gets.

A broker that refuses a call answers ``TOPIC_AUTHORIZATION_FAILED``, ``GROUP_AUTHORIZATION_FAILED`` or
``CLUSTER_AUTHORIZATION_FAILED`` and nothing more; an operator then has to work out which ACL is missing.
mm2ctl knows what it was doing, so every denial becomes one line naming the principal, the operation and the
resource (``User:mm2ctl is not authorized to READ group 'billing' on cluster backup
[GROUP_AUTHORIZATION_FAILED]``), exit code 4. Before apply or rollback writes anything, the broker's own
answer to "which operations may I do on this group / topic" (KIP-430, ``include_authorized_operations``) is
checked against everything the plan will do, so a missing ACL stops the run before its first write.

The principal is what the broker will see, worked out from the client settings: ``User:<name>`` for PLAIN and
SCRAM, the certificate's subject for TLS client certificates, the OAuth client (the broker names it by the
token's ``sub`` claim, which mm2ctl does not see), ``User:ANONYMOUS`` otherwise.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import NoReturn

from mm2ctl.core.errors import KafkaClusterError

#: Kafka's authorization error codes (confluent-kafka names) and the resource type each concerns.
AUTHORIZATION_CODES = {
    "TOPIC_AUTHORIZATION_FAILED": "topic",
    "GROUP_AUTHORIZATION_FAILED": "group",
    "CLUSTER_AUTHORIZATION_FAILED": "cluster",
    "TRANSACTIONAL_ID_AUTHORIZATION_FAILED": "transactional id",
}


class Operation(StrEnum):
    """The ACL operations mm2ctl's calls need (Kafka's names)."""

    READ = "READ"
    WRITE = "WRITE"
    DELETE = "DELETE"
    DESCRIBE = "DESCRIBE"


class ResourceType(StrEnum):
    TOPIC = "topic"
    GROUP = "group"
    CLUSTER = "cluster"


@dataclass(frozen=True, order=True, slots=True)
class Permission:
    """One ACL a call needs: ``operation`` on the ``resource_type`` named ``name`` of cluster ``cluster`` (alias)."""

    cluster: str
    resource_type: ResourceType
    name: str
    operation: Operation

    def describe(self) -> str:
        return f"{self.operation} on {self.resource_type} {self.name!r} of {self.cluster}"


class AuthorizationError(KafkaClusterError):
    """A broker refused mm2ctl's principal an operation. The message is the one line that names the principal,
    the operation and the resource."""

    def __init__(
        self,
        *,
        principal: str,
        operation: str,
        resource_type: str,
        name: str | None,
        cluster: str | None,
        code: str,
    ) -> None:
        self.principal = principal
        self.operation = operation
        self.resource_type = resource_type
        self.resource_name = name
        self.cluster = cluster
        super().__init__(denial_text(principal, operation, resource_type, name, cluster), code=code)


def is_denial(code: str | None) -> bool:
    """True for Kafka's authorization error codes."""
    return code in AUTHORIZATION_CODES


def denial_text(principal: str, operation: str, resource_type: str, name: str | None, cluster: str | None) -> str:
    """``User:mm2ctl is not authorized to READ group 'billing' on cluster backup`` (the code is appended by
    the error)."""
    what = resource_type if name is None or resource_type == "cluster" else f"{resource_type} {name!r}"
    where = f" on cluster {cluster}" if cluster else ""
    return f"{principal} is not authorized to {operation} {what}{where}"


def _certificate_subject(config: Mapping[str, str]) -> str | None:
    from cryptography import x509

    pem = config.get("ssl.certificate.pem")
    if not pem and config.get("ssl.certificate.location"):
        with contextlib.suppress(OSError):
            pem = Path(config["ssl.certificate.location"]).read_text()
    if not pem:
        return None
    try:
        return x509.load_pem_x509_certificate(pem.encode()).subject.rfc4514_string()
    except ValueError:
        return None


def principal_of(config: Mapping[str, str]) -> str:
    """The principal a broker sees for a client with these confluent-kafka settings, as well as mm2ctl can tell."""
    protocol = config.get("security.protocol", "PLAINTEXT").upper()
    if protocol.startswith("SASL"):
        mechanism = config.get("sasl.mechanism", "").upper()
        if mechanism == "OAUTHBEARER":
            client = config.get("sasl.oauthbearer.client.id")
            if client:
                return f"the OAuth principal of client {client!r}"
            unsecured = config.get("sasl.oauthbearer.config", "")
            for part in unsecured.split():
                if part.startswith("principal="):
                    return f"User:{part.removeprefix('principal=')}"
            return "the OAuth principal"
        return f"User:{config.get('sasl.username', 'ANONYMOUS')}"
    if protocol == "SSL":
        subject = _certificate_subject(config)
        return f"User:{subject}" if subject else "the TLS client certificate's principal"
    return "User:ANONYMOUS"


def raise_for(
    code: str | None,
    message: str,
    *,
    principal: str,
    operation: str,
    resource_type: str,
    name: str | None,
    cluster: str | None,
) -> NoReturn:
    """Raise the error a failed call deserves: an :class:`AuthorizationError` for a denial, else
    ``KafkaClusterError(message)``. ``resource_type`` is what the call was about; the code may say better."""
    if is_denial(code):
        assert code is not None
        kind = AUTHORIZATION_CODES[code]
        raise AuthorizationError(
            principal=principal,
            operation=operation,
            resource_type=kind,
            name=name if kind == resource_type else None,
            cluster=cluster,
            code=code,
        )
    raise KafkaClusterError(message, code=code)
