"""The Kafka Connect worker a plan was made against.

A plan that stops, deletes or rewrites connectors is only valid for the worker whose state it read, so it
records which one, by the Kafka cluster id the worker reports, and apply refuses another. The URLs are
recorded for the operator and never carry credentials (:func:`mm2ctl.core.security.redaction.strip_url_credentials`).
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit

from mm2ctl.core.errors import PlanError
from mm2ctl.plans.validation import check_str, freeze_tuple


@dataclass(frozen=True, slots=True, kw_only=True)
class ConnectTarget:
    """The Connect worker a plan was made against: URLs (no credentials), its Kafka cluster id, version.

    ``kafka_cluster_id`` (from ``GET /``) is what identifies the Connect cluster; apply compares it, not the
    URL, because the same URL can front another cluster after a migration and vice versa.
    """

    urls: tuple[str, ...]
    kafka_cluster_id: str
    version: str

    def __post_init__(self) -> None:
        freeze_tuple(self, "urls")
        if not self.urls:
            raise PlanError("urls: must list at least one Connect URL")
        for i, u in enumerate(self.urls):
            check_str(u, f"urls[{i}]")
            parts = urlsplit(u)
            if parts.scheme not in ("http", "https") or not parts.hostname:
                raise PlanError(f"urls[{i}]: not an http(s) URL")
            if parts.username is not None or parts.password is not None or parts.query or parts.fragment:
                raise PlanError(
                    f"urls[{i}]: must not carry credentials, a query or a fragment (use strip_url_credentials)"
                )
        check_str(self.kafka_cluster_id, "kafka_cluster_id")
        check_str(self.version, "version")
