"""Plan files: round-trip for every step kind, and a precise PlanError (never a traceback) for bad input."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from mm2ctl.core.errors import PlanError, UntranslatableError
from mm2ctl.core.exit_codes import ExitCode
from mm2ctl.core.security.redaction import REDACTED
from mm2ctl.plans.document import SetupSource, UntranslatablePartition
from mm2ctl.plans.serialize import (
    dump_plan,
    dump_plan_json,
    load_plan,
    plan_document_digest,
    plan_from_json,
    plan_to_json,
    write_plan_file,
)
from mm2ctl.plans.steps import StepKind
from tests.unit.test_plan_samples import SECRET_PASSWORD, every_step, sample_plan

KINDS = [s.kind for s in every_step()]


@pytest.mark.parametrize("kind", KINDS, ids=[k.value for k in KINDS])
def test_yaml_round_trip_for_every_step_kind(kind: StepKind) -> None:
    steps = every_step()
    upto = next(i for i, s in enumerate(steps) if s.kind is kind)
    # A prefix keeps the plan valid (a truncate needs its backup earlier in the plan).
    plan = sample_plan(steps=tuple(steps[: upto + 1]))
    text = dump_plan(plan)
    again = load_plan(text)
    assert again == plan
    assert again.steps[-1].kind is kind
    assert type(again.steps[-1].payload) is type(plan.steps[-1].payload)
    assert dump_plan(again) == text  # stable: writing what was read changes nothing


@pytest.mark.parametrize("kind", KINDS, ids=[k.value for k in KINDS])
def test_json_view_round_trip_for_every_step_kind(kind: StepKind) -> None:
    steps = every_step()
    upto = next(i for i, s in enumerate(steps) if s.kind is kind)
    plan = sample_plan(steps=tuple(steps[: upto + 1]))
    doc = json.loads(dump_plan_json(plan))
    assert plan_from_json(doc) == plan
    assert load_plan(dump_plan_json(plan)) == plan  # JSON is YAML: one reader for both


def test_yaml_and_json_views_carry_the_same_data() -> None:
    plan = sample_plan()
    assert yaml.safe_load(dump_plan(plan)) == json.loads(dump_plan_json(plan)) == plan_to_json(plan)


def test_yaml_starts_with_a_reviewer_header() -> None:
    text = dump_plan(sample_plan())
    header = [line for line in text.splitlines() if line.startswith("#")]
    assert text.startswith("# mm2ctl plan (schema_version 1)")
    assert any("pair: A->B" in line for line in header)
    assert any("#6 offset_syncs_truncate" in line for line in header)


def test_header_cannot_be_broken_by_a_newline_in_an_id() -> None:
    plan = sample_plan(
        clusters={"A": "aaa\nsteps: []", "B": "bbb"}, connect=None, steps=tuple(s for s in every_step()[:0])
    )
    assert load_plan(dump_plan(plan)) == plan


def test_plan_file_write_and_read_by_path(tmp_path: Path) -> None:
    plan = sample_plan()
    path = write_plan_file(plan, tmp_path / "plan.yaml")
    assert load_plan(path) == plan
    assert list(tmp_path.iterdir()) == [path]  # no temp file left behind


def test_document_digest_identifies_the_exact_plan() -> None:
    plan = sample_plan()
    assert plan_document_digest(load_plan(dump_plan(plan))) == plan_document_digest(plan)
    assert plan_document_digest(sample_plan(description="other")) != plan_document_digest(plan)


def test_no_secret_reaches_the_plan_file() -> None:
    text = dump_plan(sample_plan()) + dump_plan_json(sample_plan())
    assert SECRET_PASSWORD not in text
    assert "PlainLoginModule" not in text
    assert REDACTED in text
    assert "${file:/etc/kafka/secrets.properties:ks}" in text  # a provider reference is not a secret


# --------------------------------------------------------------------------------------------- malformed


def _doc() -> dict[str, Any]:
    return copy.deepcopy(plan_to_json(sample_plan()))


def _set(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def mutate(doc: dict[str, Any]) -> None:
        *parents, last = path.split("/")
        node: Any = doc
        for p in parents:
            node = node[int(p)] if isinstance(node, list) else node[p]
        if isinstance(node, list):
            node[int(last)] = value
        else:
            node[last] = value

    return mutate


def _delete(path: str) -> Callable[[dict[str, Any]], None]:
    def mutate(doc: dict[str, Any]) -> None:
        *parents, last = path.split("/")
        node: Any = doc
        for p in parents:
            node = node[int(p)] if isinstance(node, list) else node[p]
        del node[last]

    return mutate


def _drop_backup_step(doc: dict[str, Any]) -> None:
    del doc["steps"][5]
    for i, s in enumerate(doc["steps"]):
        s["index"] = i


MALFORMED: list[tuple[str, Callable[[dict[str, Any]], None], str]] = [
    ("missing-schema-version", _delete("schema_version"), "plan: schema_version: missing"),
    ("newer-schema", _set("schema_version", 2), "schema_version: 2 is newer than this mm2ctl understands"),
    ("older-schema", _set("schema_version", 0), "schema_version: 0 is not supported"),
    ("schema-as-string", _set("schema_version", "1"), "schema_version: expected an integer, got string"),
    ("missing-plan-id", _delete("plan_id"), "plan: missing field 'plan_id'"),
    ("bad-uuid", _set("plan_id", "not-a-uuid"), "plan: plan_id: 'not-a-uuid' is not a UUID"),
    ("naive-time", _set("created_at", "2025-01-02T03:04:05"), "created_at: must be a UTC timestamp"),
    ("unknown-plan-kind", _set("kind", "teleport"), "plan: kind: unknown value 'teleport'"),
    ("unknown-top-field", _set("colour", "red"), "plan: unknown field(s) colour"),
    ("pair-alias-unknown", _set("pair", "A->C"), "pair: alias 'C' has no entry in clusters"),
    ("pair-malformed", _set("pair", "A=>B"), "pair: 'A=>B' is not a flow name; write it as SOURCE->TARGET"),
    ("clusters-not-mapping", _set("clusters", ["A"]), "plan: clusters: expected a mapping, got list"),
    (
        "url-with-credentials",
        _set("connect/urls/0", "http://admin:pw@connect:8083"),
        "connect.urls[0]: must not carry credentials",
    ),
    ("steps-not-list", _set("steps", {"a": 1}), "plan: steps: expected a list, got mapping"),
    ("step-index-type", _set("steps/0/index", "zero"), "steps[0].index: expected an integer, got string"),
    ("step-index-bool", _set("steps/0/index", True), "steps[0].index: expected an integer, got boolean"),
    ("step-index-gap", _set("steps/1/index", 5), "steps[1].index: is 5; step indices must run 0, 1, 2"),
    (
        "unknown-step-kind",
        _set("steps/0/kind", "connector_explode"),
        "steps[0].kind: unknown value 'connector_explode'",
    ),
    ("step-missing-kind", _delete("steps/0/kind"), "steps[0]: missing field 'kind'"),
    ("step-unknown-field", _set("steps/0/colour", "red"), "steps[0]: unknown field(s) colour"),
    ("step-missing-precondition", _delete("steps/0/precondition"), "steps[0]: missing field 'precondition'"),
    (
        "unknown-precondition",
        _set("steps/0/precondition/kind", "moon_is_full"),
        "steps[0].precondition.kind: unknown kind 'moon_is_full'",
    ),
    (
        "unknown-connector-state",
        _set("steps/0/precondition/states", ["SLEEPING"]),
        "steps[0].precondition.states[0]: unknown value 'SLEEPING'",
    ),
    (
        "unknown-target-kind",
        _set("steps/0/target/kind", "planet"),
        "steps[0].target.kind: unknown kind 'planet'",
    ),
    (
        "wrong-target-for-kind",
        _set("steps/0/target", {"kind": "group", "cluster": "B", "group": "g"}),
        "steps[0].target: a connector_pause step acts on a connector target, got group",
    ),
    (
        "payload-field-for-wrong-kind",
        _set("steps/0/payload", {"include_tasks": True}),
        "steps[0].payload: unknown field(s) include_tasks",
    ),
    (
        "payload-missing-field",
        _delete("steps/5/payload/backup_file"),
        "steps[5].payload: missing field 'backup_file'",
    ),
    (
        "payload-bad-type",
        _set("steps/10/payload/only_failed", "yes"),
        "steps[10].payload.only_failed: expected true/false, got string",
    ),
    (
        "bad-base64",
        _set("steps/4/payload/records/0/key_b64", "!!!"),
        "steps[4].payload.records[0].key_b64: not valid base64",
    ),
    (
        "tombstone-key-of-other-connector",
        _set("steps/4/payload/connector", "other"),
        "steps[4].payload.records[0].key_b64: key is not ['other', {...}]",
    ),
    (
        "tombstone-target-partitions",
        _set("steps/4/target/partitions", [7]),
        "steps[4].target.partitions: must be the records' partitions [7, 19]",
    ),
    (
        "syncs-partition-not-0",
        _set("steps/5/target/partitions", [1]),
        "steps[5].target.partitions: offset-syncs live in partition 0 only",
    ),
    (
        "negative-offset",
        _set("steps/13/payload/rows/0/offset", -1),
        "steps[13].payload.rows[0].offset: must be >= 0, got -1",
    ),
    (
        "unknown-translation-method",
        _set("steps/13/payload/rows/0/method", "guess"),
        "steps[13].payload.rows[0].method: unknown value 'guess'",
    ),
    (
        "duplicate-rows",
        _set("steps/13/payload/rows/1/partition", 0),
        "steps[13].payload.rows: duplicate entry ('A.orders', 0)",
    ),
    (
        "truncate-without-backup",
        _drop_backup_step,
        "steps[5]: truncating A:mm2-offset-syncs.B.internal needs",
    ),
    (
        "truncate-beyond-backup",
        _set("steps/6/payload/before_offset", 5000),
        "steps[6].payload.before_offset: 5000 but the backup covers up to 4242",
    ),
    (
        "truncate-reversible",
        _set("steps/6/reversible", True),
        "steps[6].irreversible_reason: must be null for a reversible step",
    ),
    (
        "truncate-claimed-undoable",
        lambda d: (_set("steps/6/reversible", True)(d), _set("steps/6/irreversible_reason", None)(d)),
        "steps[6].reversible: a offset_syncs_truncate step can never be undone",
    ),
    (
        "irreversible-without-reason",
        _set("steps/0/reversible", False),
        "steps[0].irreversible_reason: an irreversible step must say why",
    ),
    (
        "precondition-other-connector",
        _set("steps/0/precondition/connector", "other"),
        "steps[0].precondition: names connector 'other' but the step targets 'mm2-source'",
    ),
    (
        "step-cluster-unknown",
        _set("steps/13/target/cluster", "Z"),
        "steps[13]: cluster alias 'Z' has no entry in clusters",
    ),
    (
        "backup-file-path",
        _set("steps/5/payload/backup_file", "../../etc/passwd"),
        "steps[5].payload.backup_file: must be a bare file name",
    ),
    (
        "fingerprint-tampered",
        _set("fingerprint/parts/topic:A:mm2-offset-syncs.B.internal:0:end", "0" * 64),
        "fingerprint: fingerprint digest does not match its parts",
    ),
    ("fingerprint-not-hex", _set("fingerprint/digest", "xyz"), "fingerprint: fingerprint digest 'xyz'"),
    (
        "before-not-json",
        _set("steps/0/before", {"a": float("nan")}),
        "plan: steps[0].before.a: nan is not representable in JSON",
    ),
    (
        "wait-timeout-zero",
        _set("steps/11/payload/timeout_seconds", 0),
        "steps[11].payload.timeout_seconds: must be > 0",
    ),
]


@pytest.mark.parametrize(("mutate", "expected"), [(m, e) for _, m, e in MALFORMED], ids=[n for n, _, _ in MALFORMED])
def test_malformed_plan_gets_a_precise_plan_error(mutate: Callable[[dict[str, Any]], None], expected: str) -> None:
    doc = _doc()
    mutate(doc)
    text = yaml.safe_dump(doc, sort_keys=False)
    with pytest.raises(PlanError) as info:
        load_plan(text, name="plan")
    assert type(info.value) is PlanError
    assert expected in str(info.value), str(info.value)
    assert str(info.value).startswith("plan")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("schema_version: [1, 2\n", "plan.yaml:2:1: not valid YAML"),
        ("- 1\n- 2\n", "plan.yaml: not an mm2ctl plan (expected a mapping at the top level, got list)"),
        ("", "plan.yaml: not an mm2ctl plan (expected a mapping at the top level, got null)"),
        ("a: 1\n---\nb: 2\n", "plan.yaml:2:1: not valid YAML"),
        ("!!python/object:os.system {}\n", "plan.yaml:1:1: not valid YAML"),
    ],
)
def test_unparseable_text_is_a_plan_error(text: str, expected: str) -> None:
    with pytest.raises(PlanError) as info:
        load_plan(text, name="plan.yaml")
    assert expected in str(info.value)


def test_unreadable_files_are_plan_errors(tmp_path: Path) -> None:
    with pytest.raises(PlanError, match="cannot read plan file"):
        load_plan(tmp_path / "missing.yaml")
    binary = tmp_path / "binary.yaml"
    binary.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(PlanError, match="not a UTF-8 text file"):
        load_plan(binary)


def test_a_large_plan_is_written_in_flow_syntax_that_is_still_yaml(monkeypatch: pytest.MonkeyPatch) -> None:
    from mm2ctl.plans import serialize

    plan = sample_plan()
    block = dump_plan(plan)
    monkeypatch.setattr(serialize, "FLOW_STYLE_MIN_BYTES", 1)  # every plan counts as large now
    flow = dump_plan(plan)
    assert flow != block and flow.startswith("# mm2ctl plan (schema_version 1)")
    body = flow[flow.index("\n{") + 1 :]
    assert json.loads(body) == plan_to_json(plan)  # strict JSON after the comment header ...
    assert yaml.safe_load(flow) == plan_to_json(plan)  # ... and YAML to any YAML parser
    assert load_plan(flow) == plan
    assert dump_plan(load_plan(flow)) == flow


def test_flow_syntax_that_is_not_strict_json_is_read_as_yaml() -> None:
    text = dump_plan_json(sample_plan()).replace('"schema_version": 1', "schema_version: 1", 1)
    assert load_plan(text) == sample_plan()


@pytest.mark.parametrize(
    "source",
    [
        SetupSource(mm2_config="/etc/mm2/kmm2.yaml", secrets="/etc/mm2/secrets", policy_naming="identity"),
        SetupSource(from_connect="http://connect:8083"),
    ],
    ids=["resource", "connect"],
)
def test_the_setup_source_round_trips(source: SetupSource, tmp_path: Path) -> None:
    plan = sample_plan(mm2_source=source)
    write_plan_file(plan, tmp_path / "plan.yaml")
    assert load_plan(tmp_path / "plan.yaml").mm2_source == source


def test_a_setup_source_names_one_setup() -> None:
    doc = plan_to_json(sample_plan())
    doc["mm2_source"] = {"mm2_config": "/a.properties", "from_connect": "http://c:8083"}
    with pytest.raises(PlanError, match="mm2_source: give exactly one of mm2_config and from_connect"):
        plan_from_json(doc)


def test_untranslatable_partitions_round_trip_and_are_written_only_when_present() -> None:
    """A plan without them reads the same in an mm2ctl that predates the field; one with them is refused there
    as an unknown field, never half-understood."""
    plain = sample_plan()
    assert "untranslatable" not in plan_to_json(plain)
    rows = (
        UntranslatablePartition(
            group="g", topic="A.t", partition=3, position=150, reason="no offset sync at or below it"
        ),
    )
    plan = sample_plan(untranslatable=rows)
    doc = plan_to_json(plan)
    assert doc["untranslatable"] == [
        {"group": "g", "topic": "A.t", "partition": 3, "position": 150, "reason": "no offset sync at or below it"}
    ]
    again = load_plan(dump_plan(plan))
    assert again == plan and again.untranslatable == rows
    assert "# UNTRANSLATABLE: 1 group partition(s)" in dump_plan(plan)
    with pytest.raises(UntranslatableError) as err:
        again.check_untranslatable(allowed=False)
    assert err.value.exit_code == ExitCode.UNTRANSLATABLE == 19
    assert "g:A.t/3@150" in str(err.value) and "--allow-untranslatable" in str(err.value)
    again.check_untranslatable(allowed=True)
    plain.check_untranslatable(allowed=False)


def test_a_value_repeated_in_a_plan_decodes_to_one_object_and_is_still_checked_each_time() -> None:
    from mm2ctl.plans.offsets import GroupOffset
    from mm2ctl.plans.preconditions import iter_preconditions

    plan = load_plan(dump_plan(sample_plan()))
    offsets = [
        o
        for s in plan.steps
        for pre in iter_preconditions(s.precondition)
        for o in getattr(pre, "expected", ()) + getattr(pre, "offsets", ())
        if isinstance(o, GroupOffset)
    ]
    assert offsets
    by_value: dict[GroupOffset, GroupOffset] = {}
    for o in offsets:
        assert by_value.setdefault(o, o) is o  # equal values are the same object
    doc = plan_to_json(sample_plan())
    step = next(s for s in doc["steps"] if s["kind"] == "group_offsets_verify")
    step["payload"]["expected"].append({**step["payload"]["expected"][0], "partition": True})
    with pytest.raises(PlanError, match=r"payload\.expected\[\d+\]\.partition: expected an integer, got boolean"):
        plan_from_json(doc)
