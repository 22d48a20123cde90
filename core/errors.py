"""The one error tree of mm2ctl.

Every failure a user can meet is one of these. Third-party exceptions (confluent-kafka, requests, yaml,
subprocess) are caught at the boundary that called them and re-raised as one of ours with the cause
chained (``raise X(...) from exc``), so the CLI needs a single handler that maps an error to a one-line
message and an exit code. The message never carries a secret: callers pass names, never values, of
sensitive settings.

    Mm2ctlError
    ├── ConfigError ............. a malformed MM2 properties file or option (file, line, key)
    ├── KafkaClusterError ....... a broker or admin call failed (keeps confluent-kafka's KafkaError code)
    ├── ConnectError ............ the Connect REST API answered an error (keeps status and error_code)
    │   ├── ConnectTransportError  no worker answered (connection refused, timeout, TLS)
    │   ├── ConnectConflictError . 409: a rebalance is pending (the only retried status)
    │   └── ConnectNotFoundError . 404: no such connector
    ├── LabError ................ the local Kafka/Connect/MM2 lab could not be resolved, started or stopped
    ├── InspectError ............ the Spark inspection could not run
    │   └── KafkaSourceUnresolvedError  Spark's Kafka source resolves from none of the repositories tried
    ├── InspectionFileError ..... a saved inspection given to ``report`` is missing, unreadable or of the wrong kind
    ├── SparkCheckpointError .... a Spark query's checkpoint is missing, unreadable, malformed or in another format
    ├── PlanError ............... a plan file is unreadable or invalid
    │   ├── ForeignPlanError ..... the plan was made for other clusters or another Connect worker
    │   ├── StalePlanError ....... live state changed since the plan was made
    │   ├── PreconditionError .... a step's precondition does not hold
    │   ├── UntranslatableError .. the plan leaves group partitions untranslatable (apply --allow-untranslatable)
    │   └── NotCopiedError ....... MM2 has not copied up to some groups' positions (--stop-mirroring, --accept-cautious)
    ├── ApplyError .............. a step failed while applying; the journal says how far it got
    ├── ApprovalRequiredError ... a write needs confirmation and there is no terminal (use --auto-approve)
    ├── LockError ............... another apply holds the lock
    └── JournalError ............ a journal is unreadable, or cannot be resumed/rolled back
"""

from __future__ import annotations

from mm2ctl.core.exit_codes import ExitCode


class Mm2ctlError(Exception):
    """Base of every error mm2ctl raises on purpose."""

    exit_code: ExitCode = ExitCode.ERROR

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


class ConfigError(Mm2ctlError):
    """A malformed MM2 properties file or setting. Names the file, the line and the key when known."""

    exit_code = ExitCode.CONFIG

    def __init__(
        self,
        message: str,
        *,
        path: str | None = None,
        line: int | None = None,
        key: str | None = None,
    ) -> None:
        self.path = path
        self.line = line
        self.key = key
        where = ""
        if path is not None:
            where = path
            if line is not None:
                where += f":{line}"
            where += ": "
        what = f"{key}: " if key else ""
        super().__init__(f"{where}{what}{message}")


class KafkaClusterError(Mm2ctlError):
    """A Kafka client or admin call failed. ``code`` is confluent-kafka's ``KafkaError`` code name.

    Named apart from confluent-kafka's ``KafkaError`` (the librdkafka error it was built from), so a module
    can use both without an alias.
    """

    exit_code = ExitCode.KAFKA

    def __init__(self, message: str, *, code: str | None = None, retriable: bool = False) -> None:
        self.code = code
        self.retriable = retriable
        super().__init__(f"{message} [{code}]" if code else message)


class ConnectError(Mm2ctlError):
    """The Kafka Connect REST API answered with an error; keeps Connect's own ``error_code`` and message."""

    exit_code = ExitCode.CONNECT

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        error_code: int | None = None,
        url: str | None = None,
    ) -> None:
        self.status = status
        self.error_code = error_code
        self.url = url
        prefix = f"Connect {status}" if status is not None else "Connect"
        target = f" {url}" if url else ""
        super().__init__(f"{prefix}{target}: {message}")


class ConnectTransportError(ConnectError):
    """No Connect worker answered (connection refused, timeout, TLS failure)."""


class ConnectConflictError(ConnectError):
    """409 Conflict: a rebalance is pending. Retried by the client's single retry policy."""


class ConnectNotFoundError(ConnectError):
    """404 Not Found: the connector (or endpoint) does not exist."""


class LabError(Mm2ctlError):
    """The local lab could not resolve its jars, start, answer in time, or stop."""

    exit_code = ExitCode.LAB


class InspectError(Mm2ctlError):
    """The Spark inspection could not run at all (per-row problems are data, not this)."""

    exit_code = ExitCode.ERROR


class KafkaSourceUnresolvedError(InspectError):
    """Spark's Kafka source for the installed Spark, and every older patch release of its minor line, resolves
    from none of the repositories Spark's Ivy would use: decided before the driver JVM starts (a failed package
    resolution kills it). Names the artifact, the repositories tried and the remedies."""

    exit_code = ExitCode.KAFKA_SOURCE_UNRESOLVED


class InspectionFileError(Mm2ctlError):
    """A saved inspection (the Parquet folder or JSON lines ``inspect`` writes) is missing, unreadable, or holds
    other rows than the ones asked for. Names the path."""

    exit_code = ExitCode.INSPECTION_FILE

    def __init__(self, path: str, problem: str) -> None:
        self.path = path
        super().__init__(f"{path}: {problem}")


class SparkCheckpointError(Mm2ctlError):
    """A Spark Structured Streaming checkpoint (``--spark-checkpoint``) is missing, unreadable, malformed, holds no
    committed batch, or is in a format this mm2ctl does not read (a Spark release whose offset or commit log
    version differs). Names the checkpoint and, when one file is at fault, that file."""

    exit_code = ExitCode.SPARK_CHECKPOINT

    def __init__(self, location: str, problem: str) -> None:
        self.location = location
        self.problem = problem
        super().__init__(f"{location}: {problem}")


class PlanError(Mm2ctlError):
    """A plan file is unreadable, of an unknown schema version, or invalid."""

    exit_code = ExitCode.PLAN_INVALID


class ForeignPlanError(PlanError):
    """The plan was made for other clusters (cluster id) or another Connect worker."""

    exit_code = ExitCode.FOREIGN_PLAN


class StalePlanError(PlanError):
    """Live state no longer matches the fingerprint the plan recorded."""

    exit_code = ExitCode.STALE


class PreconditionError(PlanError):
    """A step's precondition does not hold against live state."""

    exit_code = ExitCode.STALE


class UntranslatableError(PlanError):
    """A failover or failback plan leaves group partitions untranslatable, and apply was not told to accept it."""

    exit_code = ExitCode.UNTRANSLATABLE


class UnhostedGroupTypeError(PlanError):
    """A share or streams group would move to a cluster too old for its type (Kafka before 4.2)."""

    exit_code = ExitCode.UNHOSTED_GROUP_TYPE


class NotCopiedError(PlanError):
    """``plan failover`` without ``--stop-mirroring``: some groups' positions lie past what MM2 has copied, so
    only MM2's cautious answer is known, and the user did not accept it."""

    exit_code = ExitCode.NOT_COPIED


class ApplyError(Mm2ctlError):
    """A step failed during apply. The journal holds everything done so far."""

    exit_code = ExitCode.APPLY_FAILED


class ApprovalRequiredError(Mm2ctlError):
    """apply/rollback would write, stdin is not a terminal to confirm on, and --auto-approve was not given."""

    exit_code = ExitCode.APPROVAL_REQUIRED


class LockError(Mm2ctlError):
    """Another apply or rollback holds the lock."""

    exit_code = ExitCode.LOCKED


class JournalError(Mm2ctlError):
    """A journal is unreadable, torn beyond its last complete entry, or cannot be resumed."""

    exit_code = ExitCode.JOURNAL
