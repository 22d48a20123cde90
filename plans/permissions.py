"""The Kafka ACLs a plan's steps need, and the check apply and rollback run before their first write.

A plan that fails half-way because one ACL is missing leaves a journal to resume or roll back; a plan refused
before it starts leaves nothing. Each step kind says here which operations on which resources its executor
performs (and its undo, for rollback), and :func:`check_permissions` asks the brokers which of them this
principal may do (``core.kafka.admin.KafkaAdmin.authorized_operations``). A missing one is an
``AuthorizationError``: one line, exit 4, nothing written. Connect REST steps need no Kafka ACL.

README.md's ACL table is this module's answer per command.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from mm2ctl.core.kafka.admin import ItemError
from mm2ctl.core.security.authorization import (
    AuthorizationError,
    Operation,
    Permission,
    ResourceType,
    is_denial,
    principal_of,
)
from mm2ctl.plans.document import Plan
from mm2ctl.plans.live_state import LiveState
from mm2ctl.plans.payloads import (
    ConnectOffsetsTombstone,
    GroupOffsetsVerify,
    GroupOffsetsWrite,
    OffsetSyncsBackup,
    OffsetSyncsTruncate,
    TranslateAfterCatchUp,
    WaitForCatchUp,
)
from mm2ctl.plans.steps import Step
from mm2ctl.plans.targets import GroupTarget, TopicPartitionsTarget

TOPIC, GROUP = ResourceType.TOPIC, ResourceType.GROUP
READ, WRITE, DELETE, DESCRIBE = Operation.READ, Operation.WRITE, Operation.DELETE, Operation.DESCRIBE


def step_permissions(step: Step, *, undo: bool = False) -> Iterator[Permission]:
    """What running ``step`` (or, with ``undo``, rolling it back) asks of the brokers."""
    p, t = step.payload, step.target
    if isinstance(p, GroupOffsetsWrite) and isinstance(t, GroupTarget):
        # Committing offsets (OffsetCommit) needs READ on the group and on each topic. Undoing restores the
        # earlier offsets the same way, and deletes the group when it had none (DeleteGroups: DELETE).
        yield Permission(t.cluster, GROUP, t.group, READ)
        if undo and any(r.before_offset is None for r in p.rows):
            yield Permission(t.cluster, GROUP, t.group, DELETE)
        for topic in sorted({r.topic for r in p.rows}):
            yield Permission(t.cluster, TOPIC, topic, READ)
    elif isinstance(p, GroupOffsetsVerify) and isinstance(t, GroupTarget) and not undo:
        yield Permission(t.cluster, GROUP, t.group, DESCRIBE)
        for topic in sorted({o.topic for o in p.expected}):
            yield Permission(t.cluster, TOPIC, topic, DESCRIBE)
    elif isinstance(p, OffsetSyncsBackup) and isinstance(t, TopicPartitionsTarget) and not undo:
        yield Permission(t.cluster, TOPIC, t.topic, READ)
    elif isinstance(p, OffsetSyncsTruncate) and isinstance(t, TopicPartitionsTarget):
        # DeleteRecords needs DELETE; the undo re-produces the backed-up records.
        yield Permission(t.cluster, TOPIC, t.topic, WRITE if undo else DELETE)
    elif isinstance(p, ConnectOffsetsTombstone) and isinstance(t, TopicPartitionsTarget):
        yield Permission(t.cluster, TOPIC, t.topic, READ)
        yield Permission(t.cluster, TOPIC, t.topic, WRITE)
    elif isinstance(p, WaitForCatchUp) and not undo:
        for topic in sorted({c.topic for c in p.targets}):
            yield Permission(p.source_cluster, TOPIC, topic, DESCRIBE)
            yield Permission(p.source_cluster, TOPIC, topic, READ)  # the last records: the mark to wait for
    elif isinstance(p, TranslateAfterCatchUp) and not undo:
        # The records on both sides prove each translation (the offset syncs' own topic is read as planning
        # read it).
        for topic in sorted({r.source_topic for r in p.rows}):
            yield Permission(p.source_cluster, TOPIC, topic, READ)
        for topic in sorted({r.target_topic for r in p.rows}):
            yield Permission(p.target_cluster, TOPIC, topic, READ)


def plan_permissions(plan: Plan, *, undo: bool = False, steps: Iterable[int] | None = None) -> list[Permission]:
    """Every permission the plan's steps (or only ``steps``, by index) need, sorted and without repeats."""
    wanted = None if steps is None else set(steps)
    found = {
        perm
        for step in plan.steps
        if wanted is None or step.index in wanted
        for perm in step_permissions(step, undo=undo)
    }
    return sorted(found)


def check_permissions(live: LiveState, permissions: Iterable[Permission]) -> None:
    """Raise ``AuthorizationError`` for the first permission the brokers do not grant this principal.

    A resource that does not exist (a target group apply will create) is no denial; the step deals with it.
    """
    by_cluster: dict[str, list[Permission]] = {}
    for perm in permissions:
        by_cluster.setdefault(perm.cluster, []).append(perm)
    for cluster, perms in sorted(by_cluster.items()):
        topics = sorted({p.name for p in perms if p.resource_type is TOPIC})
        groups = sorted({p.name for p in perms if p.resource_type is GROUP})
        granted = live.admin(cluster).authorized_operations(topics=topics, groups=groups)
        principal = principal_of(live.kafka_config(cluster))
        for perm in sorted(perms):
            answer = granted.get((str(perm.resource_type), perm.name))
            if isinstance(answer, ItemError):
                if not is_denial(answer.code):
                    continue
            elif answer is None or "ALL" in answer or str(perm.operation) in answer:
                continue
            raise AuthorizationError(
                principal=principal,
                operation=str(perm.operation),
                resource_type=str(perm.resource_type),
                name=perm.name,
                cluster=cluster,
                code=f"{str(perm.resource_type).upper()}_AUTHORIZATION_FAILED",
            )
