"""Spark Structured Streaming queries in a failover plan (``--spark-checkpoint``): each query's last committed
batch is read from its checkpoint (``core.spark_checkpoints.read``), its Kafka sources' positions are translated with
the groups' rows (the same rule, content proof and timestamp fallback), and a ``spark_query_write`` step writes
the result beside the checkpoint in one of two forms (docs/design.md, "Spark queries"):

- ``json``: the ``startingOffsets`` of a new query on the target's topics (a new checkpoint, so no state). Any
  replication policy, any translation method.
- ``checkpoint``: a copy of the checkpoint that resumes at the translated offsets, so a stateful query keeps its
  state. Offered only where it is safe: every partition translated exactly (the state holds exactly the records
  before the position), the identity policy (the query keeps its topic names, and state keyed on them), each
  topic on the target with exactly the partitions the checkpoint names, and what the checkpoint alone decides
  (``core.spark_checkpoints.copy_form.copy_refusals``).

``auto`` (the default) takes the checkpoint form where it is offered, the JSON otherwise. A query whose
partitions are not all translated gets no step: it cannot start on the target without an offset for each.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from mm2ctl.core.config.mm2_config import PairConfig
from mm2ctl.core.errors import ConfigError, NotCopiedError, PlanError, SparkCheckpointError
from mm2ctl.core.spark_checkpoints.copy_form import copy_refusals
from mm2ctl.core.spark_checkpoints.query_sources import (
    QuerySource,
    batch_digest,
    local_files,
    query_sources,
    require_mirrored,
)
from mm2ctl.core.spark_checkpoints.read import read_checkpoint
from mm2ctl.core.spark_checkpoints.write import output_paths
from mm2ctl.plans.payloads import EXACT_METHODS, SparkNewPartition, SparkOffsetRow, SparkQueryWrite
from mm2ctl.plans.planners.builder import PlanBuilder
from mm2ctl.plans.planners.failover.rows import FailoverRow
from mm2ctl.plans.preconditions import SparkCheckpointAt
from mm2ctl.plans.steps import StepKind
from mm2ctl.plans.targets import SparkQueryTarget

#: ``--spark-form``'s choices.
FORMS = ("auto", "json", "checkpoint")


@dataclass(frozen=True)
class SparkRequest:
    """``--spark-checkpoint`` (the checkpoints' locations), ``--spark-form`` and ``--spark-output`` (the folder
    the results go to; default: each checkpoint's own parent folder)."""

    checkpoints: tuple[str, ...] = ()
    form: str = "auto"
    output_dir: str | None = None

    def __post_init__(self) -> None:
        if self.form not in FORMS:
            raise ConfigError(f"--spark-form {self.form!r}: choose {', '.join(FORMS)}")


@dataclass
class PlannedQuery:
    """One checkpoint as the plan decided it, for ``--json`` and the table."""

    location: str
    query_id: str | None
    batch_id: int
    uncommitted_batch_id: int | None
    form: str
    output: str
    refusals: list[str]
    rows: list[FailoverRow] = field(default_factory=list)
    untranslated_sources: list[int] = field(default_factory=list)
    #: Each row name's source index in the checkpoint's offset log.
    source_indexes: dict[str, int] = field(default_factory=dict)


def read_queries(request: SparkRequest, moves: Callable[[str], bool], flow: PairConfig) -> list[QuerySource]:
    """Each checkpoint's Kafka sources (local folders or ``file:`` URIs), every topic one the plan ``moves``
    across ``flow`` (a topic it mirrors on a failover, a remote topic of it on a failback)."""
    reads = [read_checkpoint(local_files(location)) for location in request.checkpoints]
    sources = query_sources(reads)
    require_mirrored(sources, moves, flow.name)
    return sources


def split_rows(
    rows: Sequence[FailoverRow], sources: Sequence[QuerySource]
) -> tuple[list[FailoverRow], list[FailoverRow]]:
    """(the groups' rows, the queries' rows), told apart by the names of the queries read."""
    names = {qs.name for qs in sources}
    return [r for r in rows if r.group not in names], [r for r in rows if r.group in names]


def methods_note(rows: Sequence[FailoverRow]) -> str:
    """The plan's note counting every row's translation method, the groups' and the queries' alike."""
    methods = Counter(row.method.value for row in rows if row.method is not None)
    return "translation methods: " + (", ".join(f"{m}={n}" for m, n in sorted(methods.items())) or "none")


def plan_queries(
    b: PlanBuilder,
    destination: str,
    request: SparkRequest,
    sources: Sequence[QuerySource],
    rows: Sequence[FailoverRow],
) -> list[PlannedQuery]:
    """A ``spark_query_write`` step per checkpoint, from its sources' ``rows`` translated to ``destination`` (the
    cluster the queries move to), and its notes."""
    by_name = {qs.name: qs for qs in sources}
    topics = b.live.admin(destination).list_topics() if sources else {}
    planned: list[PlannedQuery] = []
    claimed: set[Path] = set()
    for location in dict.fromkeys(qs.read.location for qs in sources):
        mine = [qs for qs in sources if qs.read.location == location]
        query_rows = [r for r in rows if by_name[r.group].read.location == location]
        planned.append(_plan_one(b, destination, request, mine, query_rows, topics, claimed))
    return planned


def _plan_one(
    b: PlanBuilder,
    destination: str,
    request: SparkRequest,
    sources: Sequence[QuerySource],
    rows: Sequence[FailoverRow],
    target_topics: Mapping[str, int],
    claimed: set[Path],
) -> PlannedQuery:
    read = sources[0].read
    deferred = [r for r in rows if r.deferred]
    if deferred:
        raise NotCopiedError(
            f"MM2 has not copied up to the position of the Spark query at {read.location} on {len(deferred)} "
            "partition(s): wait until it has (inspect shows it) and plan again; a query's position is written "
            "beside its checkpoint at planning's translation, not after the catch-up"
        )
    missing = [r for r in rows if r.target_offset is None or r.method is None]
    if missing:
        shown = ", ".join(f"{r.source_topic}/{r.partition} ({r.detail})" for r in missing[:3])
        raise PlanError(
            f"the Spark query at {read.location} has {len(missing)} partition(s) with no translated position: "
            f"{shown}; the query cannot start on the target without an offset for each"
        )
    refusals = copy_refusals(read, local_files(read.location)) + _flow_refusals(destination, rows, target_topics)
    form = _form(request.form, refusals, read.location)
    output = _output(request, read.location, destination, form)
    _claim(output, form, [qs.source.index for qs in sources], claimed)
    payload_rows = tuple(
        SparkOffsetRow(
            source_index=_source_of(r, sources).source.index,
            source_topic=r.source_topic,
            target_topic=r.target_topic,
            partition=r.partition,
            source_offset=r.source_offset,
            target_offset=r.target_offset,
            method=r.method,
        )
        for r in rows
        if r.target_offset is not None and r.method is not None
    )
    new_partitions = _new_partitions(payload_rows, target_topics) if form == "json" else ()
    if new_partitions:
        b.notes.append(
            f"Spark query at {read.location}: {len(new_partitions)} partition(s) on {destination} are not in its "
            "checkpoint; startingOffsets starts them at their earliest offset (-2), as Spark starts a partition "
            "it discovers (a query that assigns partitions drops them)"
        )
    digest = batch_digest(local_files(read.location), read.batch_id)
    b.add(
        StepKind.SPARK_QUERY_WRITE,
        SparkQueryTarget(location=read.location),
        SparkQueryWrite(
            form=form, output=output, batch_id=read.batch_id, rows=payload_rows, new_partitions=new_partitions
        ),
        SparkCheckpointAt(location=read.location, batch_id=read.batch_id, digest=digest),
        before={"batch_id": read.batch_id, "query_id": read.query_id},
        after={"form": form, "output": output},
        description=f"write the Spark query's position on {destination} "
        + ("as startingOffsets" if form == "json" else "as a copy of its checkpoint")
        + f" to {output}, and read it back",
    )
    _notes(b, read.location, read.uncommitted_batch_id, read.other_sources, form, refusals)
    return PlannedQuery(
        location=read.location,
        query_id=read.query_id,
        batch_id=read.batch_id,
        uncommitted_batch_id=read.uncommitted_batch_id,
        form=form,
        output=output,
        refusals=refusals,
        rows=list(rows),
        untranslated_sources=[o.index for o in read.other_sources],
        source_indexes={qs.name: qs.source.index for qs in sources},
    )


def _claim(output: str, form: str, indexes: list[int], claimed: set[Path]) -> None:
    """Refuse an output that exists, or that another checkpoint of the same plan writes."""
    for path in output_paths(output, form, indexes):
        if path.exists():
            raise SparkCheckpointError(str(path), "exists already: mm2ctl never writes over it (choose --spark-output)")
        if path in claimed:
            raise SparkCheckpointError(str(path), "two checkpoints of this plan would write here: name them apart")
        claimed.add(path)


def _new_partitions(rows: Sequence[SparkOffsetRow], target_topics: Mapping[str, int]) -> tuple[SparkNewPartition, ...]:
    """The partitions of each translated topic on the target that the rows do not name, per source."""
    named: dict[tuple[int, str], set[int]] = {}
    for r in rows:
        named.setdefault((r.source_index, r.target_topic), set()).add(r.partition)
    return tuple(
        SparkNewPartition(source_index=index, target_topic=topic, partition=p)
        for (index, topic), parts in sorted(named.items())
        for p in range(target_topics.get(topic, 0))
        if p not in parts
    )


def _source_of(row: FailoverRow, sources: Sequence[QuerySource]) -> QuerySource:
    return next(qs for qs in sources if qs.name == row.group)


def _flow_refusals(destination: str, rows: Sequence[FailoverRow], target_topics: Mapping[str, int]) -> list[str]:
    """Why the move to ``destination`` does not allow the checkpoint form for these rows (the checkpoint's own
    reasons aside)."""
    reasons = []
    inexact = sorted({r.method.value for r in rows if r.method is not None and r.method.value not in EXACT_METHODS})
    if inexact:
        reasons.append(
            f"some partitions are not translated exactly ({', '.join(inexact)}): the query's state would count "
            "records twice or never"
        )
    renamed = sorted({r.source_topic for r in rows if r.target_topic != r.source_topic})
    if renamed:
        reasons.append(
            f"the replication policy renames {', '.join(renamed)} on {destination}: a copy would need the query "
            "changed, and state keyed on the topic would split"
        )
    named: dict[str, set[int]] = {}
    for r in rows:
        named.setdefault(r.target_topic, set()).add(r.partition)
    for topic, parts in sorted(named.items()):
        if target_topics.get(topic) != len(parts) or parts != set(range(len(parts))):
            reasons.append(
                f"{topic} has {target_topics.get(topic, 0)} partition(s) on {destination}, the checkpoint names "
                f"{len(parts)}"
            )
    return reasons


def _form(asked: str, refusals: Sequence[str], location: str) -> str:
    if asked == "checkpoint" and refusals:
        raise SparkCheckpointError(location, "no checkpoint copy can be made safely: " + "; ".join(refusals))
    if asked == "auto":
        return "json" if refusals else "checkpoint"
    return asked


def _output(request: SparkRequest, location: str, target: str, form: str) -> str:
    root = Path(location.rstrip("/"))
    folder = Path(request.output_dir).expanduser().absolute() if request.output_dir else root.parent
    name = f"{root.name}.{target}"
    return str(folder / (f"{name}.starting-offsets.json" if form == "json" else name))


def _notes(
    b: PlanBuilder, location: str, uncommitted: int | None, others: Sequence[object], form: str, refusals: list[str]
) -> None:
    if uncommitted is not None:
        b.notes.append(
            f"Spark query at {location}: batch {uncommitted} was planned but never committed; the query resumes "
            "after the last committed batch, which this plan uses"
        )
    if others:
        b.notes.append(
            f"Spark query at {location}: {len(others)} source(s) are not Kafka sources; their offsets are not "
            "translated"
        )
    if form == "json" and refusals:
        b.notes.append(
            f"Spark query at {location}: startingOffsets for a new query (its state starts empty), not a "
            "checkpoint copy: " + "; ".join(refusals)
        )
