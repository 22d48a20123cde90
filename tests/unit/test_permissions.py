"""Denials: who mm2ctl is to a broker, what each step needs, and the one line a missing ACL gets."""

from __future__ import annotations

from typing import Any

import pytest

from mm2ctl.core.exit_codes import ExitCode
from mm2ctl.core.kafka.admin import ItemError
from mm2ctl.core.security.authorization import AuthorizationError, Operation, Permission, ResourceType, principal_of
from mm2ctl.plans.permissions import check_permissions, plan_permissions
from tests.unit.test_plan_samples import sample_plan


@pytest.mark.parametrize(
    ("config", "principal"),
    [
        (
            {"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512", "sasl.username": "mm2ctl"},
            "User:mm2ctl",
        ),
        ({"security.protocol": "sasl_plaintext", "sasl.mechanism": "PLAIN", "sasl.username": "bob"}, "User:bob"),
        (
            {"security.protocol": "SASL_SSL", "sasl.mechanism": "OAUTHBEARER", "sasl.oauthbearer.client.id": "mm2ctl"},
            "the OAuth principal of client 'mm2ctl'",
        ),
        (
            {
                "security.protocol": "SASL_SSL",
                "sasl.mechanism": "OAUTHBEARER",
                "sasl.oauthbearer.config": "principal=alice scope=x",
            },
            "User:alice",
        ),
        ({"bootstrap.servers": "b:9092"}, "User:ANONYMOUS"),
        ({"security.protocol": "SSL"}, "the TLS client certificate's principal"),
    ],
)
def test_the_principal_a_broker_sees(config: dict[str, str], principal: str) -> None:
    assert principal_of(config) == principal


def test_a_denial_is_one_line_naming_principal_operation_and_resource() -> None:
    err = AuthorizationError(
        principal="User:mm2ctl",
        operation="READ",
        resource_type="group",
        name="billing",
        cluster="backup",
        code="GROUP_AUTHORIZATION_FAILED",
    )
    assert (
        str(err)
        == "User:mm2ctl is not authorized to READ group 'billing' on cluster backup [GROUP_AUTHORIZATION_FAILED]"
    )
    assert err.exit_code == ExitCode.KAFKA


def test_a_plans_permissions_for_apply_and_for_rollback() -> None:
    plan = sample_plan()
    applying = plan_permissions(plan)
    undoing = plan_permissions(plan, undo=True)
    kinds = {(p.resource_type, p.operation) for p in applying}
    assert (ResourceType.GROUP, Operation.READ) in kinds  # committing a group's offsets
    assert (ResourceType.TOPIC, Operation.DELETE) in kinds  # truncating offset syncs
    assert (ResourceType.TOPIC, Operation.WRITE) in {(p.resource_type, p.operation) for p in undoing}
    assert applying == sorted(set(applying))


class Admin:
    def __init__(self, answers: dict[tuple[str, str], Any]) -> None:
        self.answers = answers

    def authorized_operations(self, *, topics: Any = (), groups: Any = ()) -> dict[tuple[str, str], Any]:
        wanted = [("topic", t) for t in topics] + [("group", g) for g in groups]
        return {k: self.answers.get(k, frozenset({"ALL"})) for k in wanted}


class Live:
    def __init__(self, admin: Admin) -> None:
        self._admin = admin

    def admin(self, _cluster: str) -> Admin:
        return self._admin

    def kafka_config(self, _cluster: str) -> dict[str, str]:
        return {"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512", "sasl.username": "mm2ctl"}


NEEDED = [
    Permission("backup", ResourceType.GROUP, "billing", Operation.READ),
    Permission("backup", ResourceType.TOPIC, "primary.orders", Operation.READ),
]


@pytest.mark.parametrize(
    ("answers", "message"),
    [
        ({("group", "billing"): frozenset({"DESCRIBE"})}, "User:mm2ctl is not authorized to READ group 'billing'"),
        (
            {("topic", "primary.orders"): ItemError("TOPIC_AUTHORIZATION_FAILED", "denied")},
            "User:mm2ctl is not authorized to READ topic 'primary.orders' on cluster backup "
            "[TOPIC_AUTHORIZATION_FAILED]",
        ),
    ],
)
def test_a_missing_permission_is_refused(answers: dict[tuple[str, str], Any], message: str) -> None:
    with pytest.raises(AuthorizationError) as info:
        check_permissions(Live(Admin(answers)), NEEDED)  # type: ignore[arg-type]
    assert message in str(info.value)


@pytest.mark.parametrize(
    "answers",
    [
        {},
        {("group", "billing"): frozenset({"READ", "DESCRIBE"})},
        {("group", "billing"): None},  # the broker did not say: the step itself will tell
        {("group", "billing"): ItemError("GROUP_ID_NOT_FOUND", "no such group")},
    ],
)
def test_granted_or_unknown_is_no_denial(answers: dict[tuple[str, str], Any]) -> None:
    check_permissions(Live(Admin(answers)), NEEDED)  # type: ignore[arg-type]
