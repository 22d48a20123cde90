"""Releasing what an inspection holds in Spark: cached frames and local checkpoints alike.

``DataFrame.unpersist`` drops a cached frame's blocks, but a local checkpoint (``localCheckpoint``) is not in
Spark's cache: its blocks belong to the checkpointed RDD and would go only when the JVM's garbage collector
finds that RDD unreachable. A live session replaces its kept frames every run, so it drops each old one's
blocks at once (``release``), and the memory it holds is what it keeps, not what it kept.
"""

from __future__ import annotations

from pyspark.sql import DataFrame


def release(frame: DataFrame) -> None:
    """Drop ``frame``'s blocks now: its cache, or the RDD of a local checkpoint (in a classic session; a Spark
    Connect server releases a checkpoint when the client lets go of the frame)."""
    frame.unpersist(blocking=False)
    jdf = getattr(frame, "_jdf", None)
    if jdf is None:
        return
    plan = jdf.queryExecution().analyzed()
    if plan.getClass().getSimpleName() == "LogicalRDD":
        plan.rdd().unpersist(False)
