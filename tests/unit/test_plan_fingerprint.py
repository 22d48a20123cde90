"""Fingerprints: stable digests, diffs that name what changed, and foreign vs stale as distinct refusals."""

from __future__ import annotations

import pytest

from mm2ctl.core.errors import ForeignPlanError, PlanError, StalePlanError
from mm2ctl.core.exit_codes import ExitCode
from mm2ctl.plans.fingerprint import (
    Fingerprint,
    canonical_json,
    check_not_foreign,
    check_not_stale,
    check_plan_against_live,
    describe_diff,
    diff_fingerprints,
    digest_of,
    fingerprint_of,
)
from tests.unit.test_plan_samples import CLUSTERS, live_parts, sample_plan


def test_canonical_json_is_sorted_and_compact() -> None:
    assert canonical_json({"b": 1, "a": [1, {"d": None, "c": "é"}]}) == '{"a":[1,{"c":"é","d":null}],"b":1}'
    with pytest.raises(ValueError):
        canonical_json({"x": float("inf")})


def test_digest_does_not_depend_on_key_order() -> None:
    a = fingerprint_of({"x": {"a": 1, "b": 2}, "y": [1, 2]})
    b = fingerprint_of({"y": [1, 2], "x": {"b": 2, "a": 1}})
    assert a == b
    assert a.digest == digest_of(dict(a.parts))
    assert fingerprint_of({"y": [2, 1], "x": {"a": 1, "b": 2}}) != a  # list order is data


def test_diff_names_exactly_the_parts_that_changed() -> None:
    planned = fingerprint_of(live_parts())
    assert diff_fingerprints(planned, fingerprint_of(live_parts())) == []
    live = live_parts()
    live["topic:A:mm2-offset-syncs.B.internal:0:end"] = 4300
    del live["group:B:billing:offsets"]
    live["connector:mm2-checkpoint:state"] = "RUNNING"
    now = fingerprint_of(live)
    assert diff_fingerprints(planned, now) == [
        "connector:mm2-checkpoint:state",
        "group:B:billing:offsets",
        "topic:A:mm2-offset-syncs.B.internal:0:end",
    ]
    assert describe_diff(planned, now) == [
        "connector:mm2-checkpoint:state (new)",
        "group:B:billing:offsets (gone)",
        "topic:A:mm2-offset-syncs.B.internal:0:end (changed)",
    ]


def test_fingerprint_rejects_a_digest_that_does_not_match_its_parts() -> None:
    fp = fingerprint_of(live_parts())
    with pytest.raises(PlanError, match="does not match its parts"):
        Fingerprint(digest=fp.digest, parts={**fp.parts, "extra": "0" * 64})


def test_stale_plan_names_the_changed_parts() -> None:
    plan = sample_plan()
    live = live_parts()
    live[next(iter(live))] = "PAUSED"
    with pytest.raises(StalePlanError) as info:
        check_not_stale(plan.fingerprint, fingerprint_of(live))
    assert "connector:mm2-source:state (changed)" in str(info.value)
    assert not isinstance(info.value, ForeignPlanError)
    check_not_stale(plan.fingerprint, fingerprint_of(live_parts()))  # unchanged: no error


@pytest.mark.parametrize(
    ("clusters", "connect_id", "expected"),
    [
        ({**CLUSTERS, "A": "zzzz"}, CLUSTERS["B"], "cluster 'A' has id zzzz, the plan was made for"),
        ({"B": CLUSTERS["B"]}, CLUSTERS["B"], "cluster alias 'A' (planned id"),
        (CLUSTERS, "other-connect", "the Connect worker belongs to Kafka cluster other-connect"),
        (CLUSTERS, None, "but none was checked"),
    ],
)
def test_foreign_plan_is_refused(clusters: dict[str, str], connect_id: str | None, expected: str) -> None:
    with pytest.raises(ForeignPlanError) as info:
        check_not_foreign(sample_plan(), live_clusters=clusters, live_connect_cluster_id=connect_id)
    assert expected in str(info.value)
    assert not isinstance(info.value, StalePlanError)


def test_foreign_and_stale_are_distinct_errors_with_distinct_exit_codes() -> None:
    plan = sample_plan()
    changed = fingerprint_of({**live_parts(), "topic:A:mm2-offset-syncs.B.internal:0:end": 1})
    # Both wrong: foreign wins, because re-planning would not fix it.
    with pytest.raises(ForeignPlanError):
        check_plan_against_live(
            plan,
            live_clusters={**CLUSTERS, "B": "other"},
            live_connect_cluster_id=CLUSTERS["B"],
            live_fingerprint=changed,
        )
    with pytest.raises(StalePlanError):
        check_plan_against_live(
            plan, live_clusters=CLUSTERS, live_connect_cluster_id=CLUSTERS["B"], live_fingerprint=changed
        )
    check_plan_against_live(
        plan,
        live_clusters=CLUSTERS,
        live_connect_cluster_id=CLUSTERS["B"],
        live_fingerprint=fingerprint_of(live_parts()),
    )
    assert ForeignPlanError.exit_code == ExitCode.FOREIGN_PLAN != StalePlanError.exit_code == ExitCode.STALE
