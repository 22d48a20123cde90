"""What ``inspect`` makes of a flow's configured conditions (``core.config.flow_conditions``): the notes it prints,
the rows of a flow whose offset syncs are disabled, and the internal topics such a flow never writes.

The job calls three things here, each a hook a new engine can call the same way:

- ``observe`` (driver, with the admin state): the flow's conditions, sampling its source partitions for
  transactions when MM2's source consumer reads uncommitted records (``core.kafka.transactional_data``);
- ``with_offset_syncs_disabled`` (DataFrame → DataFrame, on a classified pair): rows that are missing syncs
  only because the flow disables them become ``offset_syncs_disabled``, an ok status;
- ``expected_absent`` (a note filter): "topic does not exist" is no news for the offset-syncs and checkpoints
  topics of such a flow.
"""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from mm2ctl.core.config.flow_conditions import FlowCondition, needs_sample, observed_conditions
from mm2ctl.core.config.mm2_config import MM2Config, PairConfig
from mm2ctl.core.errors import Mm2ctlError
from mm2ctl.core.kafka.admin import TP, KafkaAdmin
from mm2ctl.core.kafka.transactional_data import sample_transactions
from mm2ctl.core.progress import Progress, no_progress
from mm2ctl.inspector.statuses import OFFSET_SYNCS_DISABLED_MESSAGE, Status

#: The explanation an ``offset_syncs_disabled`` row carries.
OFFSET_SYNCS_DISABLED_EXPLANATION = (
    "emit.offset-syncs.enabled=false on this flow: mm2ctl plan failover --fallback timestamp translates it"
)


def observe(
    config: MM2Config, pair: PairConfig, source_partitions: pa.Table, *, progress: Progress = no_progress
) -> list[FlowCondition]:
    """The flow's conditions; ``source_partitions`` are the inspected source partitions
    (``schemas.SOURCE_PARTITIONS_SCHEMA``), sampled for transactions when it matters."""
    samples = []
    error: str | None = None
    if needs_sample(pair):
        bounds: dict[TP, tuple[int, int]] = {}
        for row in source_partitions.to_pylist():
            earliest, latest = row["earliest_offset"], row["latest_offset"]
            if row["error"] is None and earliest is not None and latest is not None and latest > earliest:
                bounds[(row["topic"], row["partition"])] = (earliest, latest)
        if bounds:
            progress(f"{pair.name}: sampling {len(bounds)} source partition(s) for transactions")
            kafka = config.kafka_config(pair.source, pair.name)
            try:
                samples = sample_transactions(KafkaAdmin.connect(kafka, name=pair.source), kafka, bounds)
            except Mm2ctlError as exc:  # a principal without READ on the topics: the rows do not need it
                error = str(exc)
    return observed_conditions(config, pair, samples, sample_error=error)


def with_offset_syncs_disabled(classified: DataFrame) -> DataFrame:
    """A classified pair whose flow runs with ``emit.offset-syncs.enabled=false``: its rows that would be
    ``no_offset_syncs`` or ``not_synced``, or ``synced`` with no translation, are ``offset_syncs_disabled``
    (ok, no blocking component, their own message and explanation). Other statuses stay: an error, a missing
    remote topic, an empty source partition, a group too old, an active target group or an offset ahead of
    checkpoints written before are what they were."""
    status = F.col("status")
    disabled = status.isin(Status.NO_OFFSET_SYNCS.value, Status.NOT_SYNCED.value) | (
        (status == Status.SYNCED.value) & F.col("translated_offset").isNull()
    )

    def when_disabled(value: object, column: str) -> Column:
        return F.when(disabled, F.lit(value)).otherwise(F.col(column))

    return classified.withColumns(
        {
            "is_ok": when_disabled(True, "is_ok"),
            "blocking_component": F.when(disabled, F.lit(None).cast("string")).otherwise(F.col("blocking_component")),
            "message": when_disabled(OFFSET_SYNCS_DISABLED_MESSAGE, "message"),
            "explanation": when_disabled(OFFSET_SYNCS_DISABLED_EXPLANATION, "explanation"),
            "status": when_disabled(Status.OFFSET_SYNCS_DISABLED.value, "status"),
        }
    )


def expected_absent(pair: PairConfig, topic: str) -> bool:
    """Whether ``topic`` may rightly be missing for this flow: MM2 writes no offset syncs, and no checkpoints
    (its checkpoint connector cannot run), when the flow disables offset syncs."""
    return not pair.emit_offset_syncs_enabled and topic in (pair.offset_syncs_topic, pair.checkpoints_topic)


def condition_notes(conditions: Sequence[FlowCondition]) -> list[tuple[str, str, str, str]]:
    """(cluster pair, topic, cluster, message) for each condition: ``inspect``'s note lines."""
    return [(c.flow, c.topic, c.cluster, c.message) for c in conditions]


__all__ = ["condition_notes", "expected_absent", "observe", "with_offset_syncs_disabled"]
