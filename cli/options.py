"""Options that several commands share, declared once: the Connect connection, the MM2 setup, ``--pair`` and
``--json``.

A command takes them as ``Annotated`` aliases (``connect_url: ConnectUrls = None``), so the flag, its help
and its checks are written here and nowhere else, and ``ConnectOptions.of(...)`` turns the six Connect
values into one typed object.

The MM2 setup is given one of three ways (``--mm2-config`` a properties file or a KafkaMirrorMaker2 resource,
with ``--secrets``; or ``--from-connect URL``), plus ``--policy-naming`` for a custom replication policy.
``SetupOptions.of(...)`` gathers them and resolves them through the one core function,
``core.config.sources.resolve_config``; every command that takes ``--mm2-config`` takes all four.

``--pair`` runs ``core.config.flows.parse_flow`` as a click callback: a malformed flow is a ``ConfigError``
(exit 3) while the options are parsed, before the command reads a file or reaches a cluster.

Secrets (``--connect-password`` / ``MM2CTL_CONNECT_PASSWORD``) go straight into the client factory and are
never echoed, written or logged.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from mm2ctl.core.config.flows import parse_flow
from mm2ctl.core.config.sources import ConfigSource
from mm2ctl.core.errors import ConfigError
from mm2ctl.core.patterns import WHOLE_NAME_RULE

if TYPE_CHECKING:
    from mm2ctl.connect_client import ConnectClient
    from mm2ctl.core.config.mm2_config import MM2Config as ResolvedMM2Config
    from mm2ctl.plans.live_state import LiveState

#: Read by typer itself; the same name the Connect client factory documents for URLs.
PASSWORD_ENV = "MM2CTL_CONNECT_PASSWORD"
URL_ENV = "MM2CTL_CONNECT_URL"


def check_flows(ctx: typer.Context, value: str | list[str] | None) -> str | list[str] | None:
    """The ``--pair`` callback: every given flow must parse (``ConfigError``, exit 3, otherwise).

    Shell completion parses the command line resiliently; then nothing is checked."""
    if ctx.resilient_parsing or value is None:
        return value
    for name in [value] if isinstance(value, str) else value:
        parse_flow(name)
    return value


def pair_option(help_text: str) -> Any:
    """A ``--pair`` option checked by :func:`check_flows`; commands word its help for what the flow is to them."""
    return typer.Option("--pair", callback=check_flows, metavar="SOURCE->TARGET", help=help_text)


def mm2_config_option(help_text: str) -> Any:
    """A ``--mm2-config`` option (the MirrorMaker 2 properties file)."""
    return typer.Option("--mm2-config", metavar="FILE", help=help_text)


#: The flow a command works on, required.
Pair = Annotated[str, pair_option("The MM2 flow to work on, SOURCE->TARGET (as in the MM2 file's A->B.enabled).")]
#: A flow that narrows which MM2 connectors a command works on.
ConnectorsPair = Annotated[
    str | None, pair_option("The MM2 connectors of this flow, SOURCE->TARGET (instead of, or with, --connector).")
]
#: The MM2 setup as a file: a properties file or a Strimzi KafkaMirrorMaker2 resource (or --from-connect).
MM2Config = Annotated[
    str | None,
    mm2_config_option(
        "The MirrorMaker 2 setup: a connect-mirror-maker.properties file, or a Strimzi KafkaMirrorMaker2 "
        "resource (YAML; its Secrets with --secrets). Or give --from-connect instead."
    ),
]
#: For commands that start from a plan or journal, which names its own MM2 setup.
MM2ConfigOverride = Annotated[
    str | None,
    mm2_config_option(
        "The MirrorMaker 2 properties file or KafkaMirrorMaker2 resource. Default: the setup the plan was made from."
    ),
]
#: The MM2 setup as the MM2 connectors running on a Connect cluster.
FromConnect = Annotated[
    str | None,
    typer.Option(
        "--from-connect",
        metavar="URL",
        help="Read the MirrorMaker 2 setup from the MM2 connectors running on this Kafka Connect cluster "
        "(instead of --mm2-config). Its auth: the --connect-* options.",
    ),
]
#: The Secrets of a KafkaMirrorMaker2 resource, or values the live connectors hide.
Secrets = Annotated[
    str | None,
    typer.Option(
        "--secrets",
        metavar="PATH",
        help="The Secrets a KafkaMirrorMaker2 resource refers to: `kubectl get secret NAME -o yaml` output, or "
        "a folder laid out <secretName>/<key>. With --from-connect also a properties file of the values the "
        "connectors hide behind config providers (keyed as in an MM2 file: A.sasl.jaas.config).",
    ),
]
#: How a custom replication policy class names topics.
PolicyNaming = Annotated[
    str | None,
    typer.Option(
        "--policy-naming",
        metavar="default|identity",
        help="How a custom replication.policy.class names topics, as DefaultReplicationPolicy (default) or "
        "IdentityReplicationPolicy (identity). Wins over mm2ctl.replication.policy.naming in the setup.",
    ),
]
#: The flows an inspection covers (``inspect``, ``exporter``, ``report``).
InspectPairs = Annotated[
    list[str] | None,
    pair_option("A flow to inspect, SOURCE->TARGET; repeatable. Default: every enabled flow of the MM2 setup."),
]
#: ``--groups`` and ``--topics``: one meaning in every command (``core.patterns``).
Groups = Annotated[
    str | None,
    typer.Option(
        "--groups",
        metavar="REGEX",
        help=f"Only the consumer groups whose name matches, {WHOLE_NAME_RULE}. Default: every group MM2's "
        "groups filter admits.",
    ),
]
Topics = Annotated[
    str | None,
    typer.Option(
        "--topics",
        metavar="REGEX",
        help=f"Only the flow's source topics (their names on the source cluster) whose name matches, "
        f"{WHOLE_NAME_RULE}. Default: every topic MM2's topics filter admits.",
    ),
]
ActiveOnly = Annotated[
    bool,
    typer.Option(
        "--active-only", help="Only groups with active members (default: every group with committed offsets)."
    ),
]
Exact = Annotated[
    bool,
    typer.Option(
        "--exact",
        help="Read records on both clusters for every row whose translation is not exact, so "
        "replay_if_failover_now and skip_if_failover_now are true counts (slower: it reads per partition).",
    ),
]
NoCache = Annotated[
    bool,
    typer.Option(
        "--no-cache",
        help="Read MM2's internal topics in full and save nothing (by default a run starts from what the last run "
        "decoded of them, saved under $MM2CTL_CACHE/inspect-state, and reads only the records written since).",
    ),
]
LagThreshold = Annotated[
    int,
    typer.Option(
        "--lag-threshold",
        min=0,
        metavar="RECORDS",
        help="A replicated partition with more records than this waiting to be copied is 'lagging'.",
    ),
]
LagSecondsThreshold = Annotated[
    float,
    typer.Option(
        "--lag-seconds-threshold",
        min=0.0,
        metavar="SECONDS",
        help="A replicated partition whose oldest record waiting to be copied is older than this is 'lagging'.",
    ),
]
SparkMaster = Annotated[
    str | None, typer.Option("--spark-master", help="Spark master URL (default: local[*], embedded).")
]
Engine = Annotated[
    str | None,
    typer.Option(
        "--engine",
        metavar="auto|spark",
        help="auto (default, else $MM2CTL_ENGINE): a small inspection (up to 50,000 group partitions and 200,000 "
        "records in MM2's internal topics) runs on this process with no Spark session unless it needs one; "
        "larger ones, --exact, --spark-master, --spark-conf and --remote run on Spark. spark: always run on Spark.",
    ),
]
SparkConf = Annotated[list[str] | None, typer.Option("--spark-conf", help="Extra Spark setting k=v; repeatable.")]
SparkRemote = Annotated[
    str | None,
    typer.Option(
        "--remote",
        metavar="sc://HOST:PORT",
        help="Run the inspection on this Spark Connect server (default: $SPARK_REMOTE, else embedded Spark). "
        "The server needs Spark's Kafka source (README, 'Running on a Spark cluster').",
    ),
]
#: Structured Streaming checkpoints whose Kafka sources get rows (``inspect``) or moves (the plans) like a group's.
SparkCheckpoints = Annotated[
    list[str] | None,
    typer.Option(
        "--spark-checkpoint",
        metavar="PATH",
        help="A Structured Streaming query's checkpoint; its Kafka sources get rows like a group's, named "
        "spark:<query id>. inspect reads any Hadoop file system URI, the plans a local folder or file: URI. "
        "Repeatable.",
    ),
]
#: The form of a Spark query's translated position (``plans.planners.failover.spark_queries``).
SparkForm = Annotated[
    str,
    typer.Option(
        "--spark-form",
        metavar="auto|json|checkpoint",
        help="json: a startingOffsets file for a new query on the target; checkpoint: a copy of the checkpoint "
        "that resumes at the translated offsets with its state (identity policy, exact translations only); "
        "auto: the checkpoint where it is safe, else json.",
    ),
]
#: Where a Spark query's translated position is written.
SparkOutput = Annotated[
    Path | None,
    typer.Option(
        "--spark-output",
        metavar="DIR",
        help="Folder for each query's <checkpoint name>.<target>[.starting-offsets.json] (default: beside the "
        "checkpoint). Never written over.",
    ),
]
#: No progress on stderr.
Quiet = Annotated[bool, typer.Option("--quiet", "-q", help="No progress on stderr.")]
#: Print the command's result as one JSON document on stdout instead of text.
JsonOutput = Annotated[
    bool,
    typer.Option(
        "--json",
        help="Print the result as one JSON document on stdout, with exit_code and exit_meaning. "
        "On an error stdout stays empty: the one-line message on stderr and the exit code tell it.",
    ),
]

ConnectUrls = Annotated[
    list[str] | None,
    typer.Option(
        "--connect-url",
        metavar="URL",
        help=f"A Kafka Connect worker's REST URL; repeatable. Default: ${URL_ENV} (comma separated), "
        "then the workers the plan names. Omit for dedicated-mode MM2, which has no REST API.",
    ),
]
ConnectUser = Annotated[str | None, typer.Option("--connect-user", help="Basic-auth user for the Connect REST API.")]
ConnectPassword = Annotated[
    str | None,
    typer.Option(
        "--connect-password",
        envvar=PASSWORD_ENV,
        show_default=False,
        show_envvar=True,
        help="Basic-auth password for the Connect REST API (prefer the environment variable: "
        "a command line is visible to other users).",
    ),
]
ConnectCa = Annotated[
    str | None, typer.Option("--connect-ca", metavar="PEM", help="CA bundle to verify the Connect workers' TLS.")
]
ConnectCert = Annotated[
    str | None,
    typer.Option("--connect-cert", metavar="PEM", help="Client certificate for mutual TLS with Connect."),
]
ConnectKey = Annotated[
    str | None,
    typer.Option("--connect-key", metavar="PEM", help="Client key for mutual TLS (when not inside --connect-cert)."),
]


@dataclass(frozen=True)
class ConnectOptions:
    """How to reach the Kafka Connect REST API, as the shared options gave it."""

    urls: tuple[str, ...]
    user: str | None = None
    password: str | None = None
    ca: str | None = None
    cert: str | None = None
    key: str | None = None

    @classmethod
    def of(
        cls,
        urls: list[str] | None,
        user: str | None,
        password: str | None,
        ca: str | None,
        cert: str | None,
        key: str | None,
    ) -> ConnectOptions:
        return cls(tuple(urls or ()), user, password, ca, cert, key)

    def resolved_urls(self, fallback: tuple[str, ...] = ()) -> list[str]:
        """``--connect-url``, else ``$MM2CTL_CONNECT_URL``, else ``fallback`` (the workers a plan names)."""
        from mm2ctl.connect_client.factory import connect_urls_from_env

        return list(self.urls) or connect_urls_from_env() or list(fallback)

    def client(self, fallback: tuple[str, ...] = ()) -> ConnectClient | None:
        """A Connect client for ``resolved_urls(fallback)``; None when there is none (dedicated-mode MM2)."""
        from mm2ctl.connect_client.factory import build_connect_client

        urls = self.resolved_urls(fallback)
        if not urls:
            return None
        return build_connect_client(
            urls, username=self.user, password=self.password, ca_file=self.ca, cert_file=self.cert, key_file=self.key
        )

    def live_state(self, mm2_config: str | ResolvedMM2Config, fallback_urls: tuple[str, ...] = ()) -> LiveState:
        """The live-state reader over the MM2 setup and (unless dedicated mode) these Connect workers."""
        from mm2ctl.plans.live_state import open_live_state

        return open_live_state(
            mm2_config,
            connect_urls=self.resolved_urls(fallback_urls),
            username=self.user,
            password=self.password,
            ca_file=self.ca,
            cert_file=self.cert,
            key_file=self.key,
        )


@dataclass(frozen=True)
class SetupOptions:
    """The MM2 setup as the shared options gave it: ``--mm2-config``, ``--from-connect``, ``--secrets`` and
    ``--policy-naming``."""

    mm2_config: str | None = None
    from_connect: str | None = None
    secrets: str | None = None
    policy_naming: str | None = None

    @classmethod
    def of(
        cls, mm2_config: str | None, from_connect: str | None, secrets: str | None, policy_naming: str | None
    ) -> SetupOptions:
        return cls(mm2_config, from_connect, secrets, policy_naming)

    @property
    def given(self) -> bool:
        """Did the user describe the setup at all (commands working from a plan fall back to the plan's)?"""
        return any(v is not None for v in (self.mm2_config, self.from_connect, self.secrets, self.policy_naming))

    def source(self) -> ConfigSource:
        if self.mm2_config is not None and self.from_connect is not None:
            raise ConfigError("give --mm2-config or --from-connect, not both")
        return ConfigSource(
            mm2_config=self.mm2_config,
            from_connect=self.from_connect,
            secrets=self.secrets,
            policy_naming=self.policy_naming,
        )

    def resolve(self, connect: ConnectOptions | None = None, source: ConfigSource | None = None) -> ResolvedMM2Config:
        """The resolved setup, through ``core.config.sources.resolve_config`` (``source`` overrides these
        options: the setup a plan recorded). ``connect`` gives ``--from-connect`` its auth."""
        from mm2ctl.connect_client.factory import connector_config_reader
        from mm2ctl.core.config.sources import resolve_config

        c = connect or ConnectOptions(())
        reader = connector_config_reader(
            username=c.user, password=c.password, ca_file=c.ca, cert_file=c.cert, key_file=c.key
        )
        return resolve_config(source or self.source(), read_connectors=reader)

    def live_state(self, connect: ConnectOptions, fallback_urls: tuple[str, ...] = ()) -> LiveState:
        """The live-state reader over the resolved setup. The Connect workers are ``--connect-url`` (or its
        environment variable), else ``fallback_urls``, else the ``--from-connect`` cluster."""
        config = self.resolve(connect)
        extra = (self.from_connect,) if self.from_connect is not None else ()
        return connect.live_state(config, fallback_urls or extra)


def parse_spark_conf(pairs: list[str] | None) -> dict[str, str]:
    """``--spark-conf`` values as settings."""
    conf: dict[str, str] = {}
    for item in pairs or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"--spark-conf expects key=value, got {item!r}")
        conf[key.strip()] = value.strip()
    return conf
