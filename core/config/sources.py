"""Where the MM2 setup comes from, and the one function that turns any of those into the resolved model.

MM2 runs in three shapes, and mm2ctl meets each where it is:

* a ``connect-mirror-maker.properties`` file (``--mm2-config FILE``);
* a Strimzi ``KafkaMirrorMaker2`` resource (``--mm2-config FILE``, told apart from a properties file by its
  ``apiVersion``/``kind``), whose Secret references resolve from ``--secrets PATH``;
* the MM2 connectors running on a Kafka Connect cluster (``--from-connect URL``).

Each is an adapter producing the properties of the equivalent MM2 file (:mod:`mm2ctl.core.config.strimzi` and
:mod:`mm2ctl.core.config.connector_configs` for the last two), and :func:`resolve_config` hands them to
``core.config.mm2_config``, which resolves flows, names and client settings the same way for all three. Past this point
nothing knows where a value came from, except ``mm2ctl config show``, which reports each value's origin.

A :class:`ConfigSource` is what the user gave (paths and a URL, never a secret), so a plan can record it and
apply can resolve the same setup again.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path

import yaml

from mm2ctl.core.config import strimzi
from mm2ctl.core.config.connector_configs import MirrorConnector, connectors_to_properties, overlay_from, role_of
from mm2ctl.core.config.k8s_secrets import SecretStore, load_secrets, parse_secret_manifests
from mm2ctl.core.config.mm2_config import POLICY_NAMING_KEY, MM2Config, parse_mm2_config
from mm2ctl.core.config.naming import NAMING_SCHEMES
from mm2ctl.core.config.properties import Property, format_properties, load_properties
from mm2ctl.core.errors import ConfigError
from mm2ctl.core.security.redaction import display_url

#: Reads the connectors of a Connect cluster: name -> config (the ``GET /connectors?expand=info`` content).
ConnectorReader = Callable[[str], Mapping[str, Mapping[str, str]]]


@dataclass(frozen=True, slots=True, kw_only=True)
class ConfigSource:
    """What describes the MM2 setup: exactly one of ``mm2_config`` and ``from_connect``, and the options that
    go with it. Paths are absolute once :meth:`absolute` ran (what a plan records)."""

    #: A properties file or a KafkaMirrorMaker2 resource.
    mm2_config: str | None = None
    #: A Kafka Connect REST URL whose MM2 connectors describe the setup.
    from_connect: str | None = None
    #: Secrets: Kubernetes Secret manifests or a ``<secretName>/<key>`` folder (a resource, or connectors
    #: whose values Strimzi put behind its config providers), or a properties file of values the connectors
    #: hide (``--from-connect``).
    secrets: str | None = None
    #: How a custom replication policy class names topics (``--policy-naming``).
    policy_naming: str | None = None

    def __post_init__(self) -> None:
        if (self.mm2_config is None) == (self.from_connect is None):
            raise ConfigError(
                "give the MM2 setup with one of --mm2-config FILE (a properties file or a KafkaMirrorMaker2 "
                "resource) and --from-connect URL"
            )
        if self.policy_naming is not None and self.policy_naming not in NAMING_SCHEMES:
            raise ConfigError(f"--policy-naming must be default or identity, not {self.policy_naming!r}")

    def absolute(self) -> ConfigSource:
        """The same source with absolute paths (a plan records it; apply may run from another folder)."""
        return replace(
            self,
            mm2_config=None if self.mm2_config is None else os.path.abspath(self.mm2_config),
            secrets=None if self.secrets is None else os.path.abspath(self.secrets),
        )

    def describe(self) -> str:
        """One line for people: what the setup was read from (a URL without credentials)."""
        if self.from_connect is not None:
            what = f"the MM2 connectors of {display_url(self.from_connect)}"
        else:
            what = str(self.mm2_config)
        return what + (f" with secrets {self.secrets}" if self.secrets else "")


def _read_text(path: str) -> str:
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        raise ConfigError("file not found", path=path) from None
    except IsADirectoryError:
        raise ConfigError(
            "is a directory, not an MM2 properties file or a KafkaMirrorMaker2 resource", path=path
        ) from None
    except OSError as exc:
        raise ConfigError(f"cannot read file: {exc.strerror or exc}", path=path) from None
    if b"\x00" in data:
        return ""  # a binary file: the properties reader names the problem
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return ""


def _resource_docs(path: str) -> list[strimzi.Node] | None:
    """The YAML documents of ``path`` when it is a Kubernetes resource, None when it is a properties file."""
    text = _read_text(path)
    if not text.strip():
        return None
    try:
        docs = strimzi.load_yaml_documents(text)
    except yaml.YAMLError:
        return None  # not YAML: a properties file (the properties reader reports its own problems)
    return docs if strimzi.looks_like_resource(docs) else None


def _connect_secrets(path: str) -> tuple[SecretStore | None, dict[str, Property]]:
    """``--secrets`` with ``--from-connect``: Kubernetes Secrets (for Strimzi's references) or an overlay."""
    if Path(path).is_dir():
        return load_secrets(path), {}
    text = _read_text(path)
    try:
        docs = list(yaml.safe_load_all(text))
        is_manifests = any(isinstance(d, Mapping) and d.get("kind") in ("Secret", "List") for d in docs)
    except yaml.YAMLError:
        is_manifests = False
    if is_manifests:
        return SecretStore(path, parse_secret_manifests(text, path=path)), {}
    return None, overlay_from(load_properties(path))


def connectors_from_configs(configs: Mapping[str, Mapping[str, str]], url: str) -> list[MirrorConnector]:
    """The MM2 connectors among a Connect cluster's connectors (others are left alone)."""
    out = []
    for name in sorted(configs):
        config = configs[name]
        role = role_of(config.get("connector.class", ""))
        if role is None:
            continue
        props = {k: Property(str(v), None, f"connector {name}: {k}") for k, v in config.items()}
        out.append(MirrorConnector(name=name, role=role, config=props))
    if not out:
        raise ConfigError(f"the Connect cluster at {display_url(url)} runs no MirrorMaker 2 connector")
    return out


def resolve_config(source: ConfigSource, *, read_connectors: ConnectorReader | None = None) -> MM2Config:
    """The resolved MM2 setup, from whichever source the user gave. ``read_connectors`` is needed for
    ``from_connect`` (the CLI passes the Connect client's reader: clients are passed in)."""
    source = source.absolute()
    naming = source.policy_naming
    if source.from_connect is not None:
        if read_connectors is None:
            raise ConfigError("--from-connect needs a Connect client")
        url = source.from_connect
        store, overlay = _connect_secrets(source.secrets) if source.secrets else (None, {})
        path = f"Connect {display_url(url)}"
        props, warnings = connectors_to_properties(
            connectors_from_configs(read_connectors(url), url),
            path=path,
            resolve=strimzi.strimzi_reference_resolver(store),
            overlay=overlay,
        )
        config = parse_mm2_config(props, policy_naming=naming, source=source, shape="connect")
        return _with_warnings(config, warnings)
    assert source.mm2_config is not None
    path = source.mm2_config
    docs = _resource_docs(path)
    if docs is None:
        if source.secrets is not None:
            raise ConfigError(
                "--secrets is for a KafkaMirrorMaker2 resource or --from-connect; "
                f"{path} is a properties file, which holds its own credentials"
            )
        return parse_mm2_config(load_properties(path), policy_naming=naming, source=source)
    store = load_secrets(source.secrets) if source.secrets else None
    resource = strimzi.read_resource(strimzi.find_resource(docs, path=path), path=path, secrets=store)
    props, warnings = connectors_to_properties(
        resource.connectors,
        path=path,
        resolve=strimzi.strimzi_reference_resolver(store),
        release=resource.kafka_version,
    )
    return _with_warnings(parse_mm2_config(props, policy_naming=naming, source=source, shape="resource"), warnings)


def _with_warnings(config: MM2Config, warnings: list[str]) -> MM2Config:
    object.__setattr__(config, "warnings", (*warnings, *config.warnings))  # frozen, as parse_mm2_config does
    return config


def write_properties_file(config: MM2Config, path: str | os.PathLike[str]) -> Path:
    """The resolved setup as an MM2 properties file only this user can read (it holds the credentials), for
    code that reads a file: the drill edits a copy to make a cluster unreachable."""
    target = Path(path)
    values = config.as_properties()
    naming = config.source.policy_naming if config.source is not None else None
    if naming is not None:  # --policy-naming wins over the setup's own declarations, flow by flow
        values.update({f"{pair.name}.{POLICY_NAMING_KEY}": naming for pair in config.pairs(enabled_only=False)})
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(format_properties(values, f"The MM2 setup of {config.path}, resolved by mm2ctl."))
    return target


def is_resource(path: str) -> bool:
    """True when ``path`` holds a Kubernetes resource (a KafkaMirrorMaker2) rather than MM2 properties."""
    return _resource_docs(path) is not None
