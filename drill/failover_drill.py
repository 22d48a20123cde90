"""The failover drill a DR plan asks every team to run: count what a consumer loses or reads twice when it
moves from the source to the target, for each way of choosing its target position, on the same data.

Why a drill and not a unit test: MM2 translates offsets from sparse syncs that it writes under load, at
transaction markers and after retention, so the honest answer comes only from a real MirrorMaker 2 copying a
real, awkward log. The source is made awkward on purpose, so offset *numbers* differ between clusters:

- **Retention ate the head.** ``head`` records per partition are produced and the first ``deleted`` of them
  are removed with DeleteRecords *before* the MM2 flow exists, so MM2 starts copying at the source's log
  start and the target's offsets begin at 0 while the source's begin at ``deleted``.
- **Transactions.** While MM2 runs, a transactional producer writes small transactions (1 to 3 records per
  partition); every commit marker takes a source offset that MM2 does not replicate, so the source advances
  faster than the target.
- **Aborted transactions** (``DrillOptions.aborted_transactions``): every other transaction of a partition is
  aborted. Its records stay in the source log, no consumer of the source reads them, and MM2 copies them to
  the target as ordinary records unless its source consumer reads committed records only. Each partition's
  commit point is moved to just before an aborted transaction, where a position that counts offsets resumes
  on those copies.

Every record carries its partition's sequence number (``seq=N`` in the value, ``seq`` header). A group
consumes part of the stream on the source, commits, and leaves. Producers keep going for a while (MM2 lags
behind), then stop (a planned migration). The strategies then put the group on the target:

- (a) ``raw``: the committed source offset *number* copied as is (replication without translation);
- (b) ``mm2``: what MM2's own ``sync.group.offsets`` wrote on the target;
- (c) ``conservative``: ``mm2ctl plan failover --source-unavailable`` (the one rule, docs/design.md,
  "Translation", from syncs and checkpoints only), planned with the source's address replaced by a closed port
  to prove it needs nothing from it;
- (d) ``verified``: ``mm2ctl plan failover --stop-mirroring`` (verified exact translation), which also waits
  for MM2 to catch up and stops the flow's connectors;
- (e) ``failback``: the round trip. A copy of the group starts on the target where (d) put it, consumes more
  there, and ``mm2ctl plan failback`` moves it back to the source;
- (f) ``timestamp``: the offset syncs of partition 0 are truncated (only on a flow the drill owns), and a
  copy of the group is failed over with ``--fallback timestamp``: that partition has no sync at all;
- (g) ``behind``: MM2's copy is throttled (a client quota on its producer; only on the lab), and once the
  traffic stops a burst of larger numbered records is produced, which MM2 copies only slowly; a copy of the
  group committed in the middle of the burst is planned with ``--stop-mirroring`` then, the throttle is
  lifted, and apply waits for MM2, stops it, translates the rows it had not copied and writes. The flow's
  connectors are resumed afterwards, so (b) and (d) see MM2 as before.

(c) and (d) are planned and applied for real on the group itself and read back, (e), (f) and (g) on copies of
it (``<group>.drill-e``, ``<group>.drill-f``, ``<group>.drill-g``); each strategy's offsets are then committed
to a copy of the group (``<group>.drill-<strategy>``), and a real consumer resumes from the committed positions
(``auto.offset.reset=latest``, Kafka's default) and reads to the end: on the target, or for (e) on the source.
LOST are sequence numbers at or after the commit point it never sees; DUPLICATED are sequence numbers before
the commit point it reads again; ABORTED are records of aborted transactions (their copies) it reads before its
first record at or after the commit point: what its position made it read, which no consumer of the source
ever saw. Copies MM2 made of transactions aborted later lie further on, where every consumer of the target
reads them whatever its position; the drill notes them. The commit point is the group's on the source, for
(e) the copy's on the target after it consumed more there, for (g) the copy's in the middle of the burst.

The drill is split by what each part owns: ``drill.context`` (its options, the flow, what every step reads),
``drill.load`` (the records produced and the consumers that read them), ``drill.strategies`` (where each
strategy puts the group), ``drill.truth`` (what a resumed consumer lost, read twice or read from aborted
transactions) and ``drill.result`` (the outcome the CLI renders). This module runs them in order.

This module never prints: it reports through ``progress`` and returns a ``DrillResult``.
"""

from __future__ import annotations

import contextlib
import tempfile
import time
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from mm2ctl.core.config.mm2_config import load_mm2_config
from mm2ctl.core.errors import ConfigError, Mm2ctlError
from mm2ctl.core.kafka.admin import KafkaAdmin
from mm2ctl.core.polling import poll_until
from mm2ctl.core.progress import Progress, no_progress
from mm2ctl.drill import strategies, truth
from mm2ctl.drill.context import DEFAULT_OPTIONS, DrillContext, DrillOptions, DrillTarget, FlowFactory
from mm2ctl.drill.load import SequenceProducer, produce_head, read_seqs, traffic_then_commit
from mm2ctl.drill.result import DrillResult, Strategy, StrategyOutcome
from mm2ctl.drill.strategies import Placement
from mm2ctl.drill.truth import Log, score
from mm2ctl.plans.live_state import open_live_state

if TYPE_CHECKING:
    from mm2ctl.lab.control import LabInfo

# Re-exported, the public names this module had before the drill was split: ``cli.render`` imports DrillResult
# and Strategy from here.
__all__ = [
    "DrillOptions",
    "DrillResult",
    "DrillTarget",
    "Strategy",
    "StrategyOutcome",
    "drill_on_clusters",
    "drill_on_lab",
    "run_drill",
    "score",
]


def run_drill(
    source_conf: Mapping[str, str],
    make_flow: FlowFactory,
    *,
    topic: str,
    group: str,
    options: DrillOptions = DEFAULT_OPTIONS,
    workdir: Path | None = None,
    progress: Progress = no_progress,
) -> DrillResult:
    """Run the whole drill on ``topic`` (created here, on the source) and ``group``; see the module docstring.

    ``make_flow`` is called once the source topic has lost its head, so MM2 starts mirroring after
    retention, as it would in production; it returns the flow to drill through.
    """
    t0 = time.monotonic()
    o = options
    if not 0 <= o.deleted < o.head:
        raise ConfigError(f"the drill deletes {o.deleted} of {o.head} head records: need 0 <= deleted < head")
    own_dir = workdir is None
    wd = Path(tempfile.mkdtemp(prefix="mm2ctl-drill-")) if workdir is None else workdir
    wd.mkdir(parents=True, exist_ok=True)

    src_admin, producer = produce_head(source_conf, topic, o, progress)
    ctx = _open_flow(make_flow(), source_conf, src_admin, topic, group, o, wd, progress)
    produced = traffic_then_commit(ctx, producer)
    committed_tp = src_admin.committed_offsets([group])[group].offsets
    committed = {p: committed_tp[(topic, p)] for p in range(o.partitions) if (topic, p) in committed_tp}
    source_log = read_seqs(source_conf, topic, o.partitions)

    placements = _fail_over(ctx, producer, committed, source_log)
    target_log = read_seqs(ctx.dst_conf, ctx.remote, o.partitions)
    if (placed := strategies.failback(ctx, placements[Strategy.VERIFIED].offsets, target_log)) is not None:
        placements[Strategy.FAILBACK] = placed
    intervals = truth.intervals_at_commit(ctx, committed, source_log)
    if (placed := strategies.timestamp(ctx, committed)) is not None:
        placements[Strategy.TIMESTAMP] = placed
    aborted_copied = truth.aborted_copies(ctx) if o.aborted_transactions else 0

    outcomes = truth.measure(
        ctx,
        placements,
        committed=committed,
        source_log=source_log,
        target_log=target_log,
        produced=produced,
        intervals=intervals,
    )
    if own_dir:
        for f in wd.glob("*.properties"):
            f.unlink()
    return _result(ctx, producer, produced, outcomes, aborted_copied, time.monotonic() - t0)


def _open_flow(
    target: DrillTarget,
    source_conf: Mapping[str, str],
    src_admin: KafkaAdmin,
    topic: str,
    group: str,
    options: DrillOptions,
    workdir: Path,
    progress: Progress,
) -> DrillContext:
    """The drill's context once ``target``'s flow exists; refuses a flow that does not mirror the topic and group."""
    mm2 = load_mm2_config(target.mm2_config)
    flow = mm2.pair(target.pair)
    if not flow.replicates_topic(topic) or not flow.group_filter.matches(group):
        raise ConfigError(
            f"{target.pair} in {target.mm2_config} does not mirror topic {topic} and group "
            f"{group}: choose names its topics/groups filters accept"
        )
    live = open_live_state(target.mm2_config, connect_urls=[target.connect_url])
    return DrillContext(
        options=options,
        target=target,
        flow=flow,
        live=live,
        source_conf=source_conf,
        src_admin=src_admin,
        dst_conf=live.kafka_config(flow.target),
        dst_admin=live.admin(flow.target),
        topic=topic,
        remote=flow.remote_topic(topic),
        group=group,
        workdir=workdir,
        progress=progress,
    )


def _fail_over(
    ctx: DrillContext, producer: SequenceProducer, committed: Mapping[int, int], source_log: Log
) -> dict[Strategy, Placement]:
    """(g) first, while MM2 is still throttled behind its burst; then, once MM2 copied every record, (a), (b),
    (d) and (c) on the group itself."""
    placements: dict[Strategy, Placement] = {}
    if ctx.target.throttle is not None:
        placements[Strategy.BEHIND] = strategies.behind(ctx, committed, source_log)
    _await_mirroring(ctx, producer, source_log)
    placements[Strategy.RAW] = Placement({p: c for p, c in committed.items()}, "no translation")
    placements[Strategy.MM2] = strategies.mm2_alone(ctx, committed)
    placements[Strategy.VERIFIED] = strategies.verified(ctx, committed)
    placements[Strategy.CONSERVATIVE] = strategies.conservative(ctx, committed)
    return placements


def _await_mirroring(ctx: DrillContext, producer: SequenceProducer, source_log: Log) -> None:
    """Wait until MM2 copied every record of the source (noted at the deadline)."""
    o, remote = ctx.options, ctx.remote
    # MM2 copies the records of aborted transactions too, unless its source consumer reads committed ones only.
    copied_aborted = producer.aborted_records if ctx.flow.copies_aborted_records else [0] * o.partitions
    expected = {p: len(source_log[p]) + copied_aborted[p] for p in range(o.partitions)}

    def caught_up() -> bool:
        b = ctx.dst_admin.partition_bounds([(remote, p) for p in range(o.partitions)])
        return all(
            v.error is None and v.latest is not None and v.earliest is not None and v.latest - v.earliest >= expected[p]
            for (_t, p), v in b.items()
        )

    ctx.progress("waiting for MM2 to copy every record")
    if not poll_until(caught_up, timeout_s=o.settle_timeout_s, interval_s=0.5):
        ctx.notes.append(f"MM2 had not copied every record of {ctx.topic} within {o.settle_timeout_s:g}s")


def _result(
    ctx: DrillContext,
    producer: SequenceProducer,
    produced: list[int],
    outcomes: list[StrategyOutcome],
    aborted_copied: int,
    seconds: float,
) -> DrillResult:
    o, flow = ctx.options, ctx.flow
    return DrillResult(
        replication_policy="identity" if flow.replication_policy.is_identity else "default",
        pair=ctx.target.pair,
        topic=ctx.topic,
        remote_topic=ctx.remote,
        group=ctx.group,
        partitions=o.partitions,
        records=sum(produced),
        deleted_before_mirroring=o.deleted * o.partitions,
        transactions=producer.transactions,
        offset_lag_max=flow.offset_lag_max,
        strategies=tuple(outcomes),
        seconds=round(seconds, 1),
        notes=tuple(ctx.notes),
        aborted_transactions=producer.aborted_transactions,
        aborted_records=sum(producer.aborted_records),
        aborted_copied=aborted_copied,
    )


# --------------------------------------------------------------------------------------------- lab


def drill_on_lab(
    info: LabInfo,
    *,
    replication_policy: str,
    options: DrillOptions = DEFAULT_OPTIONS,
    keep: bool = False,
    workdir: Path | None = None,
    progress: Progress = no_progress,
) -> DrillResult:
    """The drill on a running lab, through an isolated flow of its own (``lab.add_flow``), so the lab's
    ``mm2-primary-backup-*`` connectors are never touched.

    The flow keeps its offset syncs on the *target* (the layout a DR setup should use: the syncs survive
    the source), so (c) plans from the syncs with the source unreachable. Its connectors are deleted at the
    end unless ``keep``; the topics keep their unique names.
    """
    from mm2ctl.connect_client import build_connect_client
    from mm2ctl.lab import control as lab_core
    from mm2ctl.lab.quotas import set_producer_quota, task_producer_client_id

    name = "drill" + uuid.uuid4().hex[:8]
    topic, group = f"iso-{name}-seq", f"iso-{name}-app"
    created: list[str] = []
    throttled: list[str] = []

    def make_flow() -> DrillTarget:
        progress(f"creating MM2 flow {name}src->{name}dst ({replication_policy} policy, syncs on the target)")
        flow = lab_core.add_flow(info, name, replication_policy=replication_policy, offset_syncs_location="target")
        created.extend(flow.connectors.values())
        producer_id = task_producer_client_id(flow.connectors["source"])
        throttled.append(producer_id)
        return DrillTarget(
            mm2_config=flow.mm2_config,
            pair=f"{flow.source_alias}->{flow.target_alias}",
            connect_url=info.connect_url,
            topic=topic,
            group=group,
            stop_mirroring=True,
            owns_flow=True,
            throttle=lambda rate: set_producer_quota(info, producer_id, rate),
        )

    try:
        return run_drill(
            {"bootstrap.servers": info.source.bootstrap},
            make_flow,
            topic=topic,
            group=group,
            options=options,
            workdir=workdir,
            progress=progress,
        )
    finally:
        for producer_id in throttled:  # a failed drill may leave MM2 throttled: lift it (no-op when lifted)
            with contextlib.suppress(Mm2ctlError):
                set_producer_quota(info, producer_id, None)
        if not keep and created:
            with build_connect_client([info.connect_url]) as connect:
                for c in created:
                    try:
                        connect.delete(c)
                    except Mm2ctlError:
                        progress(f"could not delete connector {c}; delete it by hand")


def drill_on_clusters(
    mm2_config: str,
    pair: str,
    connect_url: str,
    *,
    name_prefix: str = "mm2ctl-drill",
    stop_mirroring: bool = False,
    options: DrillOptions = DEFAULT_OPTIONS,
    workdir: Path | None = None,
    progress: Progress = no_progress,
) -> DrillResult:
    """The drill on given clusters and an MM2 flow that already runs: it must mirror ``<prefix>-<id>`` and
    group ``<prefix>-<id>-app``. MM2 discovers the topic after its head is deleted (within
    ``refresh.topics.interval.seconds``, so the retention effect shows only if that is longer than the few
    seconds the head takes). The pair's connectors are stopped in (d) only with ``stop_mirroring``.
    """
    mm2 = load_mm2_config(mm2_config)
    flow = mm2.pair(pair)
    topic = f"{name_prefix}-{uuid.uuid4().hex[:8]}"
    group = f"{topic}-app"
    if not flow.replicates_topic(topic) or not flow.group_filter.matches(group):
        raise ConfigError(
            f"{pair} in {mm2_config} does not mirror topic {topic} or group {group}: pass a "
            "--name-prefix its topics and groups filters accept"
        )
    target = DrillTarget(
        mm2_config=mm2_config,
        pair=pair,
        connect_url=connect_url,
        topic=topic,
        group=group,
        stop_mirroring=stop_mirroring,
    )
    return run_drill(
        mm2.kafka_config(flow.source),
        lambda: target,
        topic=topic,
        group=group,
        options=options,
        workdir=workdir,
        progress=progress,
    )
