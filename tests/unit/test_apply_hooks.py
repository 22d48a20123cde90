"""``engine.ApplyHooks``: the points of an apply where a caller may act (the crash and fault tests'
``tests/integration/faulty_apply.py`` kills or holds apply there), and what the journal holds at each."""

from __future__ import annotations

from pathlib import Path

from mm2ctl.remediate import engine, group_batches
from mm2ctl.remediate.journal import read_journal
from tests.unit.test_group_batches import FakeCluster, failover_plan, groups, live_of


def test_each_hook_runs_where_the_journal_says_what_it_documents(tmp_path: Path) -> None:
    n = group_batches.BATCH_GROUPS + 10  # two batches of writes, then two of read-backs
    journal = tmp_path / "j.jsonl"
    seen: list[tuple[str, list[int], frozenset[int], frozenset[int]]] = []

    def recorder(name: str):  # type: ignore[no-untyped-def]
        def hook(path: Path, indices: list[int]) -> None:
            assert path == journal
            state = read_journal(path)
            seen.append((name, list(indices), frozenset(state.in_progress_steps), frozenset(state.completed_steps)))

        return hook

    hooks = engine.ApplyHooks(
        before_send=recorder("before_send"), journaled=recorder("journaled"), group_written=recorder("group_written")
    )
    engine.apply_plan(
        failover_plan(groups(n), {}),
        live_of(FakeCluster(), tmp_path),
        journal_path=journal,
        state_dir=tmp_path,
        hooks=hooks,
    )

    batches = [
        list(range(0, group_batches.BATCH_GROUPS)),
        list(range(group_batches.BATCH_GROUPS, n)),
        list(range(n, n + group_batches.BATCH_GROUPS)),
        list(range(n + group_batches.BATCH_GROUPS, 2 * n)),
    ]
    assert [i for name, i, _, _ in seen if name == "before_send"] == batches
    assert [i for name, i, _, _ in seen if name == "journaled"] == batches
    # One call per group Kafka acknowledged, writes only, each before its batch's outcomes are journaled.
    assert [i for name, i, _, _ in seen if name == "group_written"] == [[i] for i in range(n)]
    for name, indices, in_progress, completed in seen:
        if name == "journaled":
            assert set(indices) <= completed, (name, indices)
        else:  # before-states durable, outcomes not yet
            assert set(indices) <= in_progress and not set(indices) & completed, (name, indices)
    # A batch: its before-states, then every write acknowledged, then its outcomes.
    first = [name for name, _, _, _ in seen[: group_batches.BATCH_GROUPS + 2]]
    assert first == ["before_send", *["group_written"] * group_batches.BATCH_GROUPS, "journaled"]


def test_the_shipped_package_reads_no_fault_switch() -> None:
    import mm2ctl

    root = Path(mm2ctl.__file__).parent
    wrong = [str(p.relative_to(root)) for p in sorted(root.rglob("*.py")) if "MM2CTL_FAULT" in p.read_text("utf-8")]
    assert not wrong, wrong
