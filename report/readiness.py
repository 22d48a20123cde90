"""Whether a consumer group is ready to cut over to the target, and if not, why: the one definition.

A group of a flow is **ready to cut over** when all four hold:

1. every one of its partitions is **exactly translated**: the inspection found the target position a consumer
   must resume at, not a bound of it (``translation_method`` is one of ``EXACT_TRANSLATION_METHODS``: a sync at
   the committed offset, or a position proven by comparing records, as ``inspect --exact`` does);
2. **MM2 has copied up to the group's position** on each of its partitions (no row is ``not_yet_copied``): the
   records the group read last are on the target, so its translation is current;
3. the group has **no active members on the target** (its target state is none of
   ``inspector.statuses.ACTIVE_GROUP_STATES``): a cutover writes its offsets there, and Kafka refuses that while
   members are in, and a live consumer would overwrite them;
4. MM2's **replication lag is known and at most the threshold** on each of its partitions (the replicated-
   partition rows' ``replication_lag_records``, ``--lag-threshold`` records): the records the group will read on
   the target are there.

Otherwise every failed condition is a reason, in that order (a lookup that failed comes first): the readiness
table shows them all. Pure Arrow compute and Python; no Spark.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from mm2ctl.inspector.statuses import ACTIVE_GROUP_STATES, Status
from mm2ctl.plans.payloads import EXACT_METHODS

#: Translation methods that give the exact target position (``plans.payloads.EXACT_METHODS``).
EXACT_TRANSLATION_METHODS = EXACT_METHODS

_GROUP_KEY = ["cluster_pair", "group"]
_PARTITION_KEY = ["cluster_pair", "topic", "partition"]


def _normal(state: str) -> str:
    """A group state as the clients spell it in any form (``Stable``, ``PREPARING_REBALANCE``) in one form."""
    return state.upper().replace("_", "").replace(" ", "")


_ACTIVE = sorted(_normal(s) for s in ACTIVE_GROUP_STATES)


def is_active_state(state: str | None) -> bool:
    """Does a group in this state have (or is it getting) members?"""
    return state is not None and _normal(state) in _ACTIVE


@dataclass(frozen=True, slots=True)
class GroupFacts:
    """What readiness is judged on, for one group of one flow."""

    flow: str
    group: str
    partitions: int
    #: Partitions whose row is ``error``: a lookup for it failed.
    not_inspected: int = 0
    #: Partitions with no translated offset, and the statuses of their rows.
    untranslatable: int = 0
    untranslatable_statuses: tuple[str, ...] = ()
    #: Partitions translated only to a bound.
    approximate: int = 0
    #: Partitions whose row is ``not_yet_copied``: MM2 has not copied up to the group's position.
    not_copied: int = 0
    #: The target group's state when it is active, else None.
    active_state: str | None = None
    #: Partitions whose MM2 lag is unknown; whether replicated-partition rows were given at all.
    lag_unknown: int = 0
    partition_rows_given: bool = True
    #: Partitions lagging more than the threshold, the largest lag and where it is (``topic/partition``).
    lagging: int = 0
    max_lag: int | None = None
    max_lag_at: str | None = None


@dataclass(frozen=True, slots=True)
class Readiness:
    ready: bool
    reasons: tuple[str, ...] = ()

    @property
    def text(self) -> str:
        return "ready to cut over" if self.ready else "; ".join(self.reasons)


def judge(facts: GroupFacts, lag_threshold: int) -> Readiness:
    """The readiness of one group (the module docstring's rule), with every reason it is not ready."""
    n = facts.partitions
    reasons: list[str] = []
    if facts.not_inspected:
        reasons.append(f"{facts.not_inspected} of {n} partition(s) not inspected: a lookup failed (see the rows)")
    if facts.untranslatable:
        why = ", ".join(facts.untranslatable_statuses)
        reasons.append(f"{facts.untranslatable} of {n} partition(s) untranslatable ({why})")
    if facts.approximate:
        reasons.append(
            f"{facts.approximate} of {n} partition(s) translated to a bound, not exactly "
            "(--exact reads records to find the position)"
        )
    if facts.not_copied:
        reasons.append(
            f"MM2 has not copied up to the group's position on {facts.not_copied} of {n} partition(s) (wait for "
            "MM2, or plan failover --stop-mirroring)"
        )
    if facts.active_state is not None:
        reasons.append(f"active members on the target (group {facts.active_state})")
    if facts.lagging:
        reasons.append(
            f"MM2 lags more than {lag_threshold:,} records on {facts.lagging} partition(s) "
            f"(most: {facts.max_lag:,} on {facts.max_lag_at})"
        )
    if not facts.partition_rows_given:
        reasons.append("MM2's replication lag unknown: no replicated-partition rows")
    elif facts.lag_unknown:
        reasons.append(
            f"MM2's replication lag unknown on {facts.lag_unknown} of {n} partition(s) "
            "(MM2's position unread: give --connect-url)"
        )
    return Readiness(ready=not reasons, reasons=tuple(reasons))


def _with_lag(groups: pa.Table, partitions: pa.Table | None) -> pa.Table:
    if partitions is None:
        return groups.append_column("replication_lag_records", pa.nulls(groups.num_rows, pa.int64()))
    lags = partitions.select([*_PARTITION_KEY, "replication_lag_records"])
    return groups.join(lags, keys=_PARTITION_KEY, join_type="left outer")


def group_facts(groups: pa.Table, partitions: pa.Table | None, lag_threshold: int) -> list[GroupFacts]:
    """``GroupFacts`` of every group in the group-partition rows, joined to the replicated-partition rows
    (``report.inputs`` schemas) for MM2's lag. Sorted by flow and group."""
    if groups.num_rows == 0:
        return []
    t = _with_lag(groups.select([*_GROUP_KEY, "topic", "partition", "status", "target_group_state",
                                  "translated_offset", "translation_method"]), partitions)  # fmt: skip
    error = pc.fill_null(pc.equal(t["status"], Status.ERROR.value), False)
    translated = pc.is_valid(t["translated_offset"])
    exact_methods = pa.array(sorted(EXACT_TRANSLATION_METHODS))
    exact = pc.fill_null(pc.is_in(t["translation_method"], value_set=exact_methods), False)
    untranslatable = pc.and_(pc.invert(translated), pc.invert(error))
    approximate = pc.and_(pc.and_(translated, pc.invert(exact)), pc.invert(error))
    not_copied = pc.fill_null(pc.equal(t["status"], Status.NOT_YET_COPIED.value), False)
    state = t["target_group_state"]
    spelled = pc.utf8_upper(pc.replace_substring_regex(state, "[_ ]", ""))
    active = pc.fill_null(pc.is_in(spelled, value_set=pa.array(_ACTIVE)), False)
    lag = t["replication_lag_records"]
    lagging = pc.fill_null(pc.greater(lag, lag_threshold), False)
    where = pc.binary_join_element_wise(t["topic"], pc.cast(t["partition"], pa.string()), "/")
    flags = pa.table(
        {
            "cluster_pair": t["cluster_pair"],
            "group": t["group"],
            "n": pa.array([1] * t.num_rows, pa.int64()),
            "error": pc.cast(error, pa.int64()),
            "untranslatable": pc.cast(untranslatable, pa.int64()),
            "untranslatable_status": pc.if_else(untranslatable, t["status"], pa.scalar(None, pa.string())),
            "approximate": pc.cast(approximate, pa.int64()),
            "not_copied": pc.cast(not_copied, pa.int64()),
            "active_state": pc.if_else(active, state, pa.scalar(None, pa.string())),
            "lag_unknown": pc.cast(pc.is_null(lag), pa.int64()),
            "lagging": pc.cast(lagging, pa.int64()),
            "lag": lag,
            "lag_at": where,
        }
    ).sort_by([("lag", "descending")])  # so "first" below names the partition with the largest lag
    per_group = flags.group_by(_GROUP_KEY, use_threads=False).aggregate(
        [
            ("n", "sum"),
            ("error", "sum"),
            ("untranslatable", "sum"),
            ("untranslatable_status", "distinct", pc.CountOptions(mode="only_valid")),
            ("approximate", "sum"),
            ("not_copied", "sum"),
            ("active_state", "max"),
            ("lag_unknown", "sum"),
            ("lagging", "sum"),
            ("lag", "max"),
            ("lag_at", "first"),
        ]
    )
    facts = [
        GroupFacts(
            flow=r["cluster_pair"],
            group=r["group"],
            partitions=r["n_sum"],
            not_inspected=r["error_sum"],
            untranslatable=r["untranslatable_sum"],
            untranslatable_statuses=tuple(sorted(r["untranslatable_status_distinct"] or ())),
            approximate=r["approximate_sum"],
            not_copied=r["not_copied_sum"],
            active_state=r["active_state_max"],
            lag_unknown=r["lag_unknown_sum"],
            partition_rows_given=partitions is not None,
            lagging=r["lagging_sum"],
            max_lag=r["lag_max"],
            max_lag_at=r["lag_at_first"] if r["lag_max"] is not None else None,
        )
        for r in per_group.to_pylist()
    ]
    return sorted(facts, key=lambda f: (f.flow, f.group))


def assess(groups: pa.Table, partitions: pa.Table | None, lag_threshold: int) -> Mapping[tuple[str, str], Readiness]:
    """(flow, group) -> its readiness, for every group of the rows."""
    return {(f.flow, f.group): judge(f, lag_threshold) for f in group_facts(groups, partitions, lag_threshold)}
