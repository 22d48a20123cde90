"""The one way into an inspection: ``open_inspection`` takes the options and yields an open ``Inspector``.

Every entry point goes through it (``mm2ctl inspect`` and ``--watch``, the exporter, ``report``, the
spark-submit job), so each gets the same steps in the same order:

1. the setup is checked (``inspection.preflight``: the flows exist, every cluster answers) before Spark starts;
2. the driver JVM is sized: a live session (the exporter, ``--watch``) keeps decoded state for its whole life,
   so its heap is sized from the clusters' state, read first; a one-shot run only picks the collector and
   compiler by a quick probe, and reads the state while Spark starts (``session.SessionStart``), its groups'
   committed offsets in that JVM once it is up;
3. the session starts: embedded, on a cluster master, under ``spark-submit``, or on a Spark Connect server;
   or, for a small inspection on the embedded engine (``engine`` auto), not yet: its runs read the internal
   topics through librdkafka and classify on the driver, and Spark starts only if a run needs it
   (``inspector.inspection.Inspector``, ``fits_on_driver``);
4. the cluster state is read once and handed to the inspector's first run, with the Structured Streaming
   queries' positions (``--spark-checkpoint``: a local checkpoint read before Spark starts, one on another file
   system through the session's Hadoop file system);
5. on the way out the inspector is always closed; a live session's JVM is stopped (the exporter's SIGTERM
   ends Spark too), and a one-shot run that made the class archive keeps it (``SessionStart.finish``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pyspark.sql import SparkSession

from mm2ctl.connect_client import ConnectClient
from mm2ctl.core.config.mm2_config import MM2Config
from mm2ctl.core.errors import ConfigError
from mm2ctl.core.progress import Progress, no_progress
from mm2ctl.core.spark_checkpoints.query_sources import QuerySource
from mm2ctl.inspector.driver_sizing import (
    Probe,
    driver_java_options_for,
    driver_memory_for,
    fits_on_driver,
    live_driver_environment,
    live_python_memory,
    probe,
)
from mm2ctl.inspector.inspection import InspectOptions, Inspector, Preflight, preflight
from mm2ctl.inspector.reads.pair_admin import this_process_jvm
from mm2ctl.inspector.reads.run_reads import ClusterState, read_cluster_state
from mm2ctl.inspector.reads.spark_query_rows import all_local, read_queries
from mm2ctl.inspector.reads.typed_groups import GroupListings
from mm2ctl.inspector.spark.lazy_session import LazySession
from mm2ctl.inspector.spark.remote import remote_url
from mm2ctl.inspector.spark.session import (
    DRIVER_JAVA_OPTIONS,
    DRIVER_MEMORY,
    SHUFFLE_PARTITIONS,
    SessionStart,
    stop_session,
    submitted_shuffle_partitions,
    under_spark_submit,
)

#: What an inspection on a Spark Connect server leaves to the server (``inspector.spark.remote``).
REMOTE_LIMITS = (
    "its tasks' progress and Spark's log lines are the server's, and --format parquet writes on its filesystem"
)


#: ``--engine``: ``auto`` runs a small inspection on the driver with no Spark session unless it needs one
#: (embedded Spark only: a master, a Spark Connect server or Spark settings named are always used); ``spark``
#: always runs Spark.
ENGINES = ("auto", "spark")
#: The environment variable that gives the engine when the command line does not.
ENGINE_ENV = "MM2CTL_ENGINE"


def _engine_of_environment() -> str:
    return os.environ.get(ENGINE_ENV) or "auto"


@dataclass(frozen=True, slots=True)
class SparkPlace:
    """Where Spark runs: a master (default: embedded ``local[*]``) with ``--spark-conf`` settings, or a Spark
    Connect server (``remote``, an ``sc://`` address); and the ``engine`` (``ENGINES``)."""

    master: str | None = None
    conf: Mapping[str, str] = field(default_factory=dict)
    remote: str | None = None
    engine: str = field(default_factory=_engine_of_environment)

    def __post_init__(self) -> None:
        if self.engine not in ENGINES:
            raise ConfigError(f"--engine {self.engine!r}: expected one of {', '.join(ENGINES)}")

    @classmethod
    def of(
        cls, master: str | None, conf: Mapping[str, str], remote: str | None, engine: str | None = None
    ) -> SparkPlace:
        """``--spark-master``, ``--spark-conf``, ``--remote`` (else ``$SPARK_REMOTE``) and ``--engine`` (else
        ``$MM2CTL_ENGINE``, else auto), checked together."""
        url = remote_url(remote)
        if url is not None and master is not None:
            raise ConfigError("--remote and --spark-master both name where Spark runs: give one")
        return cls(master, dict(conf), url, engine or _engine_of_environment())

    @property
    def embedded_local(self) -> bool:
        return self.remote is None and (self.master or "local").startswith("local") and not under_spark_submit()

    @property
    def driver_allowed(self) -> bool:
        """Whether a small inspection may run on the driver (module docstring): the engine is auto, and Spark would
        be embedded with the default master and no setting of the user's (``--spark-conf`` asks for Spark)."""
        return self.engine == "auto" and self.master is None and not self.conf and self.embedded_local


def _sized(
    config: MM2Config,
    checked: Preflight,
    options: InspectOptions,
    place: SparkPlace,
    *,
    live: bool,
    connect: ConnectClient | None,
    queries: Sequence[QuerySource],
    listings: GroupListings | None,
    sizes: Probe | None,
) -> tuple[dict[str, str], ClusterState | None]:
    """The Spark settings with the driver JVM's sizing added (the user's own win), and the cluster state when
    sizing had to read it first. A live session's embedded JVM also gets its malloc arenas bounded
    (``inspector.driver_sizing.live_driver_environment``). ``sizes``: a one-off run's probe, if it made one."""
    conf = dict(place.conf)
    if place.remote is not None or under_spark_submit():
        return conf, None
    if live:
        live_driver_environment(os.environ)
        if DRIVER_MEMORY in conf and DRIVER_JAVA_OPTIONS in conf:
            return conf, None
        state = read_cluster_state(
            config, checked.pairs, options.selection, connect=connect, queries=queries, listings=listings
        )
        conf.setdefault(DRIVER_MEMORY, driver_memory_for(state))
        conf.setdefault(DRIVER_JAVA_OPTIONS, driver_java_options_for(state))
        return conf, state
    if DRIVER_JAVA_OPTIONS not in conf and place.embedded_local:
        conf[DRIVER_JAVA_OPTIONS] = (sizes or probe(config, checked.pairs)).java_options  # C1 only when small
    return conf, None


def _driver_possible(options: InspectOptions, place: SparkPlace, *, early: bool) -> bool:
    """Whether the run may go on the driver, if small: ``SparkPlace.driver_allowed``, no ``--exact``, and no
    Structured Streaming checkpoint to read through Spark (``early``: every one is local)."""
    return place.driver_allowed and early and not options.exact


def _driver_probe(
    config: MM2Config, checked: Preflight, options: InspectOptions, place: SparkPlace, *, live: bool, early: bool
) -> Probe | None:
    """A one-off run's probe of its size, made when the run may go on the driver (``_driver_possible``); a live
    session reads its state instead."""
    if live or not _driver_possible(options, place, early=early):
        return None
    return probe(config, checked.pairs)


class _LaterStart:
    """Spark's start for a run on the driver, made only if a run asks for the session (``LazySession``)."""

    def __init__(self, start: Callable[[], SessionStart], progress: Progress) -> None:
        self._start = start
        self._progress = progress
        self.started: SessionStart | None = None

    def __call__(self) -> SparkSession:
        self._progress("starting Spark (this run needs it)")
        self.started = self._start()
        return self.started.result()


@contextlib.contextmanager
def open_inspection(
    config: MM2Config,
    options: InspectOptions,
    place: SparkPlace,
    *,
    connect: ConnectClient | None = None,
    progress: Progress = no_progress,
    live: bool = False,
    jvm_log: Path | None = None,
) -> Iterator[Inspector]:
    """An ``Inspector`` ready to ``run``, its first run on the state read here (module docstring). ``live``:
    a session that runs again and again (it maps no class archive, and its JVM stops on the way out)."""
    progress("reaching the clusters")
    checked = preflight(config, options)
    if SHUFFLE_PARTITIONS in place.conf:
        options = dataclasses.replace(options, size_shuffles=False)
    # Local checkpoints are read before Spark starts (a bad one fails at once); the others need the session.
    early = all_local(options.spark_checkpoints)
    queries = read_queries(options.spark_checkpoints) if early else ()
    listings = GroupListings() if live else None  # a live session's Java client, kept from its first read on
    if live:
        live_python_memory()  # before the session allocates what it keeps
    try:
        sizes = _driver_probe(config, checked, options, place, live=live, early=early)
        conf, state = _sized(
            config, checked, options, place, live=live, connect=connect, queries=queries, listings=listings, sizes=sizes
        )
        known = sizes if sizes is not None else state
        on_driver = _driver_possible(options, place, early=early) and known is not None and fits_on_driver(known)
        later: _LaterStart | None = None
        if on_driver:
            later = _LaterStart(
                lambda: SessionStart(place.master, conf, jvm_log=jvm_log, share_classes=not live), progress
            )
            session, start = LazySession(None, later), None
        else:
            session, start = None, _start(place, conf, jvm_log=jvm_log, live=live, progress=progress)
            if not early:
                progress("reading the Structured Streaming checkpoints through Spark")
                queries, state = read_queries(options.spark_checkpoints, start.result), None
        if state is None:
            state = read_cluster_state(
                config,
                checked.pairs,
                options.selection,
                connect=connect,
                progress=progress,
                driver_jvm=start.gateway if start is not None else this_process_jvm,
                queries=queries,
                listings=listings,
            )
        if on_driver and not fits_on_driver(state):  # the probe's few groups held more partitions than it takes
            on_driver, later, session = False, None, None
            start = _start(place, conf, jvm_log=jvm_log, live=live, progress=progress)
        if on_driver:
            progress("small enough to inspect on the driver: Spark starts only if a run needs it")
        if session is None:
            assert start is not None
            session = LazySession(start.result())
    except BaseException:
        if listings is not None:
            listings.close()
        raise
    spark = session.started
    if spark is not None and under_spark_submit() and submitted_shuffle_partitions(spark):
        options = dataclasses.replace(options, size_shuffles=False)
    inspector = Inspector(
        session, config, options, checked, connect=connect, live=live, listings=listings, on_driver=on_driver
    )
    inspector.prime(state)
    try:
        yield inspector
    except BaseException:
        _leave(inspector, live=live)
        raise
    if live:
        _leave(inspector, live=True)
    else:
        inspector.close()
        made = start if start is not None else later.started if later is not None else None
        if made is not None:
            made.finish(progress)  # the first embedded run: its JVM writes the class archive as it exits


def _start(
    place: SparkPlace, conf: Mapping[str, str], *, jvm_log: Path | None, live: bool, progress: Progress
) -> SessionStart:
    """Spark's session, starting on a thread of its own while the caller reads the clusters."""
    if place.remote is None:
        progress("starting Spark")
    else:
        progress(f"on the Spark Connect server at {place.remote}: {REMOTE_LIMITS}")
    return SessionStart(place.master, conf, jvm_log=jvm_log, share_classes=not live, remote=place.remote)


def _leave(inspector: Inspector, *, live: bool) -> None:
    """Let go of the inspector after an error, or of a live session: its JVM stops first (a run that did not
    stop in time fails at once instead of being waited for), then what the session kept is released. Spark may
    be what failed, or be gone: the first error is the one to see."""
    spark = inspector.started_spark
    if live and spark is not None:
        stop_session(spark)
    with contextlib.suppress(Exception):
        inspector.close()
