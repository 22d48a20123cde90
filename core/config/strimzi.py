"""A Strimzi ``KafkaMirrorMaker2`` resource as the MM2 connectors Strimzi's operator would create from it.

Read from Strimzi's own API model and operator (``KafkaMirrorMaker2Spec``, ``KafkaMirrorMaker2Connectors``,
``KafkaMirrorMaker2Cluster.validateAndUpdateToNewAPI``), releases 0.48 to 1.x:

* ``kafka.strimzi.io/v1beta2`` has two layouts. The original one lists every cluster in ``spec.clusters[]``
  and names the Connect cluster (``spec.connectCluster``, the target) and each mirror's ``sourceCluster`` /
  ``targetCluster`` by alias. Strimzi 0.49 added ``spec.target`` (the target and Connect cluster) and
  ``spec.mirrors[].source`` (each mirror's source cluster, inline), and the operator converts the original
  layout to that one. ``heartbeatConnector`` exists only in v1beta2.
* ``kafka.strimzi.io/v1`` (served since 0.49, the only version since 1.0) has only ``spec.target`` and
  ``spec.mirrors[].source``, no heartbeat connector, and no ``oauth`` authentication type.
* A cluster's connection becomes ``source.cluster.*`` / ``target.cluster.*`` connector settings:
  ``bootstrapServers``; ``tls`` means SSL, its ``trustedCertificates`` (``secretName`` with ``certificate``
  or a glob ``pattern``) the truststore; ``authentication`` of type ``tls`` (``certificateAndKey``),
  ``scram-sha-256``, ``scram-sha-512``, ``plain`` (``username`` and ``passwordSecret``), ``oauth`` (client
  credentials against ``tokenEndpointUri``) or ``custom`` (its ``config``, ``sasl``); then the cluster's
  ``config`` under the same prefix.
* Each mirror has up to three connectors, named ``<source>-><target>.MirrorSourceConnector`` (and
  ``…MirrorCheckpointConnector``, ``…MirrorHeartbeatConnector``), each created only when its spec is present.
  The connector's ``config`` is laid over the cluster settings, then ``topicsPattern``,
  ``topicsExcludePattern``, ``groupsPattern`` and ``groupsExcludePattern`` become ``topics``,
  ``topics.exclude``, ``groups`` and ``groups.exclude`` in every connector.

Strimzi mounts the Secrets and passes them through config providers; mm2ctl reads the same Secrets from
``--secrets`` (:mod:`mm2ctl.core.config.k8s_secrets`) and puts the values in place, in memory only (truststores and
keys as inline PEM, SASL credentials in ``sasl.jaas.config``). OAuth becomes Kafka's own OIDC client settings
(:mod:`mm2ctl.core.security.oauth`), which mm2ctl's clients read.

Every error is a ConfigError naming the resource file, the line and the field (``spec.mirrors[0].source.alias``).
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import yaml

from mm2ctl.core.config.connector_configs import MirrorConnector
from mm2ctl.core.config.k8s_secrets import SecretLookupError, SecretStore
from mm2ctl.core.config.properties import Property
from mm2ctl.core.errors import ConfigError
from mm2ctl.core.security.oauth import KAFKA_LOGIN_HANDLER, LOGIN_MODULE

GROUP = "kafka.strimzi.io"
KIND = "KafkaMirrorMaker2"
API_VERSIONS = (f"{GROUP}/v1beta2", f"{GROUP}/v1")
AUTH_TYPES = ("tls", "scram-sha-256", "scram-sha-512", "plain", "oauth", "custom")
CONNECTOR_SUFFIXES = {
    "source": ".MirrorSourceConnector",
    "checkpoint": ".MirrorCheckpointConnector",
    "heartbeat": ".MirrorHeartbeatConnector",
}
_CONNECTOR_FIELDS = {
    "source": "sourceConnector",
    "checkpoint": "checkpointConnector",
    "heartbeat": "heartbeatConnector",
}
_PATTERNS = (
    ("topicsPattern", "topics"),
    ("topicsExcludePattern", "topics.exclude"),
    ("groupsPattern", "groups"),
    ("groupsExcludePattern", "groups.exclude"),
)
_LEGACY_PATTERNS = (("topicsBlacklistPattern", "topics.exclude"), ("groupsBlacklistPattern", "groups.exclude"))
_OAUTH_UNSUPPORTED = ("accessToken", "refreshToken", "passwordSecret", "clientAssertion", "accessTokenLocation")
_ALIAS = re.compile(r"[a-zA-Z0-9._\-]{1,100}")


# --- YAML with lines ------------------------------------------------------------------------------


@dataclass
class Node:
    """A YAML value with the line it starts on (1-based), and its children's nodes."""

    value: Any
    line: int
    children: dict[Any, Node] = field(default_factory=dict)

    def get(self, key: Any) -> Node | None:
        return self.children.get(key)


def _node(yaml_node: yaml.Node, loader: yaml.SafeLoader) -> Node:
    line = yaml_node.start_mark.line + 1
    if isinstance(yaml_node, yaml.MappingNode):
        out = Node({}, line)
        for k, v in yaml_node.value:
            key = loader.construct_object(k, deep=True)
            child = _node(v, loader)
            out.value[key] = child.value
            out.children[key] = child
        return out
    if isinstance(yaml_node, yaml.SequenceNode):
        out = Node([], line)
        for i, v in enumerate(yaml_node.value):
            child = _node(v, loader)
            out.value.append(child.value)
            out.children[i] = child
        return out
    return Node(loader.construct_object(yaml_node, deep=True), line)


def load_yaml_documents(text: str) -> list[Node]:
    """Every document of ``text`` with line numbers. Only the safe loader is used; raises yaml.YAMLError."""
    loader = yaml.SafeLoader(text)
    try:
        docs = []
        while loader.check_node():
            composed = loader.get_node()
            if composed is not None:
                docs.append(_node(composed, loader))
        return docs
    finally:
        loader.dispose()


def looks_like_resource(docs: list[Node]) -> bool:
    """True when the YAML is a Kubernetes resource (a mapping with ``apiVersion`` or ``kind``), not properties."""
    return any(isinstance(d.value, Mapping) and ("apiVersion" in d.value or "kind" in d.value) for d in docs)


# --- reading the resource -------------------------------------------------------------------------


def _java_string(value: Any) -> str:
    """A config value as Strimzi hands it to Connect: ``Object.toString()`` (``true``, ``-1``, ``0.5``)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _jaas_quote(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


class _ResourceReader:
    def __init__(self, path: str, secrets: SecretStore | None) -> None:
        self.path = path
        self.secrets = secrets

    def err(self, where: str, node: Node | None, message: str) -> ConfigError:
        return ConfigError(message, path=self.path, line=node.line if node else None, key=where)

    def mapping(self, node: Node | None, where: str, parent: Node | None = None) -> Node:
        if node is None:
            raise self.err(where, parent, "is required")
        if not isinstance(node.value, Mapping):
            raise self.err(where, node, "expected a mapping")
        return node

    def string(self, node: Node, key: str, where: str, *, required: bool = True) -> str | None:
        child = node.get(key)
        if child is None or child.value is None or (isinstance(child.value, str) and not child.value.strip()):
            if required:
                raise self.err(f"{where}.{key}", child or node, "is required")
            return None
        if isinstance(child.value, (Mapping, list)):
            raise self.err(f"{where}.{key}", child, "expected a string")
        return _java_string(child.value).strip()

    def prop(self, value: str, node: Node | None, where: str) -> Property:
        return Property(value, node.line if node else None, where)

    def secret(self, name: str, key: str, where: str, node: Node) -> str:
        if self.secrets is None:
            raise self.err(
                where,
                node,
                f"refers to Secret {name!r} key {key!r}: pass the Secrets with --secrets PATH "
                "(kubectl get secret NAME -o yaml output, or a <secretName>/<key> folder)",
            )
        try:
            return self.secrets.get(name, key)
        except SecretLookupError as exc:
            raise self.err(where, node, str(exc)) from None

    def secret_ref(self, node: Node, key: str, where: str, value_key: str) -> tuple[str, Node]:
        ref = self.mapping(node.get(key), f"{where}.{key}", node)
        name = self.string(ref, "secretName", f"{where}.{key}")
        item = self.string(ref, value_key, f"{where}.{key}")
        assert name is not None and item is not None
        return self.secret(name, item, f"{where}.{key}", ref), ref

    # -- one cluster -------------------------------------------------------------------------------

    def trusted_certificates(self, tls: Node, where: str) -> str | None:
        certs = tls.get("trustedCertificates")
        if certs is None or not certs.value:
            return None
        if not isinstance(certs.value, list):
            raise self.err(f"{where}.trustedCertificates", certs, "expected a list")
        pems: list[str] = []
        for i, item in certs.children.items():
            here = f"{where}.trustedCertificates[{i}]"
            self.mapping(item, here)
            name = self.string(item, "secretName", here)
            assert name is not None
            certificate = self.string(item, "certificate", here, required=False)
            pattern = self.string(item, "pattern", here, required=False)
            if certificate is None and pattern is None:
                raise self.err(here, item, "needs certificate or pattern")
            if certificate is not None:
                pems.append(self.secret(name, certificate, here, item))
                continue
            assert pattern is not None
            if self.secrets is None:
                self.secret(name, pattern, here, item)  # raises the "pass --secrets" error
            assert self.secrets is not None
            try:
                keys = [k for k in self.secrets.keys(name) if fnmatch.fnmatchcase(k, pattern)]
            except SecretLookupError as exc:
                raise self.err(here, item, str(exc)) from None
            if not keys:
                raise self.err(f"{here}.pattern", item, f"no key of Secret {name!r} matches {pattern!r}")
            pems.extend(self.secrets.get(name, k) for k in keys)
        return "\n".join(p.strip() for p in pems) + "\n"

    def cluster(self, node: Node, where: str, prefix: str) -> tuple[str, dict[str, Property]]:
        self.mapping(node, where)
        alias_node = node.get("alias")
        alias = self.string(node, "alias", where)
        assert alias is not None
        if not _ALIAS.fullmatch(alias):
            raise self.err(f"{where}.alias", alias_node, f"{alias!r} is not a valid alias")
        out: dict[str, Property] = {f"{prefix}alias": self.prop(alias, alias_node, f"{where}.alias")}
        bootstrap = self.string(node, "bootstrapServers", where)
        assert bootstrap is not None
        bootstrap_node = node.get("bootstrapServers")
        out[f"{prefix}bootstrap.servers"] = self.prop(bootstrap, bootstrap_node, f"{where}.bootstrapServers")
        tls = node.get("tls")
        protocol, protocol_from = "PLAINTEXT", f"{where} (no tls)"
        if tls is not None and tls.value is not None:
            self.mapping(tls, f"{where}.tls")
            protocol, protocol_from = "SSL", f"{where}.tls"
            pem = self.trusted_certificates(tls, f"{where}.tls")
            if pem is not None:
                origin = f"{where}.tls.trustedCertificates"
                out[f"{prefix}ssl.truststore.type"] = self.prop("PEM", tls, origin)
                out[f"{prefix}ssl.truststore.certificates"] = self.prop(pem, tls.get("trustedCertificates"), origin)
        auth = node.get("authentication")
        if auth is not None and auth.value is not None:
            sasl = self.authentication(auth, f"{where}.authentication", prefix, out)
            if sasl:
                protocol = "SASL_SSL" if protocol == "SSL" else "SASL_PLAINTEXT"
                protocol_from += f" and {where}.authentication"
        out[f"{prefix}security.protocol"] = self.prop(protocol, tls or node, protocol_from)
        config = node.get("config")
        if config is not None and config.value:
            self.mapping(config, f"{where}.config")
            for key, child in config.children.items():
                out[f"{prefix}{key}"] = self.prop(_java_string(child.value), child, f"{where}.config.{key}")
        return alias, out

    def authentication(self, auth: Node, where: str, prefix: str, out: dict[str, Property]) -> bool:
        """Write the cluster's credentials into ``out``; True when the type uses SASL."""
        self.mapping(auth, where)
        kind = self.string(auth, "type", where)
        type_node = auth.get("type")
        if kind not in AUTH_TYPES:
            raise self.err(f"{where}.type", type_node, f"{kind!r} is not one of {', '.join(AUTH_TYPES)}")
        if kind == "tls":
            ck = self.mapping(auth.get("certificateAndKey"), f"{where}.certificateAndKey", auth)
            name = self.string(ck, "secretName", f"{where}.certificateAndKey")
            cert_key = self.string(ck, "certificate", f"{where}.certificateAndKey")
            key_key = self.string(ck, "key", f"{where}.certificateAndKey")
            assert name is not None and cert_key is not None and key_key is not None
            origin = f"{where}.certificateAndKey"
            out[f"{prefix}ssl.keystore.type"] = self.prop("PEM", ck, origin)
            out[f"{prefix}ssl.keystore.certificate.chain"] = self.prop(
                self.secret(name, cert_key, f"{origin}.certificate", ck), ck, origin
            )
            out[f"{prefix}ssl.keystore.key"] = self.prop(self.secret(name, key_key, f"{origin}.key", ck), ck, origin)
            return False
        if kind in ("scram-sha-256", "scram-sha-512", "plain"):
            username = self.string(auth, "username", where)
            assert username is not None
            password, ref = self.secret_ref(auth, "passwordSecret", where, "password")
            module = (
                "org.apache.kafka.common.security.plain.PlainLoginModule"
                if kind == "plain"
                else "org.apache.kafka.common.security.scram.ScramLoginModule"
            )
            mechanism = {"plain": "PLAIN", "scram-sha-256": "SCRAM-SHA-256", "scram-sha-512": "SCRAM-SHA-512"}[kind]
            out[f"{prefix}sasl.mechanism"] = self.prop(mechanism, type_node, f"{where}.type")
            jaas = f"{module} required username={_jaas_quote(username)} password={_jaas_quote(password)};"
            out[f"{prefix}sasl.jaas.config"] = self.prop(jaas, ref, f"{where}.username and {where}.passwordSecret")
            return True
        if kind == "oauth":
            return self.oauth(auth, where, prefix, out)
        config = auth.get("config")
        if config is not None and config.value:
            self.mapping(config, f"{where}.config")
            for key, child in config.children.items():
                out[f"{prefix}{key}"] = self.prop(_java_string(child.value), child, f"{where}.config.{key}")
        sasl = auth.get("sasl")
        return bool(sasl is not None and sasl.value)

    def oauth(self, auth: Node, where: str, prefix: str, out: dict[str, Property]) -> bool:
        for name in _OAUTH_UNSUPPORTED:
            if auth.get(name) is not None:
                raise self.err(
                    f"{where}.{name}",
                    auth.get(name),
                    "this OAuth grant has no librdkafka equivalent; use clientId and clientSecret",
                )
        endpoint = self.string(auth, "tokenEndpointUri", where)
        client_id = self.string(auth, "clientId", where)
        assert endpoint is not None and client_id is not None
        secret, ref = self.secret_ref(auth, "clientSecret", where, "key")
        scope = self.string(auth, "scope", where, required=False)
        options = f"clientId={_jaas_quote(client_id)} clientSecret={_jaas_quote(secret)}"
        if scope:
            options += f" scope={_jaas_quote(scope)}"
        type_node = auth.get("type")
        out[f"{prefix}sasl.mechanism"] = self.prop("OAUTHBEARER", type_node, f"{where}.type")
        out[f"{prefix}sasl.login.callback.handler.class"] = self.prop(KAFKA_LOGIN_HANDLER, type_node, f"{where}.type")
        out[f"{prefix}sasl.oauthbearer.token.endpoint.url"] = self.prop(
            endpoint, auth.get("tokenEndpointUri"), f"{where}.tokenEndpointUri"
        )
        out[f"{prefix}sasl.jaas.config"] = self.prop(
            f"{LOGIN_MODULE} required {options};", ref, f"{where}.clientId and {where}.clientSecret"
        )
        return True


@dataclass(frozen=True)
class Mirror:
    """One ``spec.mirrors[]`` entry, resolved: its source cluster node and where to name it."""

    index: int
    node: Node
    source: Node
    source_where: str


def _mirrors(r: _ResourceReader, spec: Node, api: str) -> tuple[Node, str, list[Mirror]]:
    """The target cluster node (and its field path) and each mirror's source, in either layout."""
    mirrors = spec.get("mirrors")
    if mirrors is None or not mirrors.value:
        raise r.err("spec.mirrors", mirrors or spec, "is required: list at least one mirror")
    if not isinstance(mirrors.value, list):
        raise r.err("spec.mirrors", mirrors, "expected a list")
    target, clusters = spec.get("target"), spec.get("clusters")
    if api.endswith("/v1") and (clusters is not None or spec.get("connectCluster") is not None):
        node = clusters or spec.get("connectCluster")
        raise r.err("spec.clusters", node, f"is not part of {api}: use spec.target and spec.mirrors[].source")
    by_alias: dict[str, tuple[Node, str]] = {}
    if target is None:
        if clusters is None or spec.get("connectCluster") is None:
            raise r.err("spec.target", spec, "is required (or, in v1beta2, spec.connectCluster and spec.clusters)")
        if not isinstance(clusters.value, list) or not clusters.value:
            raise r.err("spec.clusters", clusters, "expected a list of clusters")
        for i, c in clusters.children.items():
            r.mapping(c, f"spec.clusters[{i}]")
            alias = r.string(c, "alias", f"spec.clusters[{i}]")
            assert alias is not None
            if not _ALIAS.fullmatch(alias):
                raise r.err(f"spec.clusters[{i}].alias", c.get("alias"), f"{alias!r} is not a valid alias")
            by_alias[alias] = (c, f"spec.clusters[{i}]")
        connect = r.string(spec, "connectCluster", "spec")
        assert connect is not None
        if connect not in by_alias:
            raise r.err("spec.connectCluster", spec.get("connectCluster"), f"{connect!r} is not in spec.clusters")
        target, target_where = by_alias[connect]
    else:
        target_where = "spec.target"
        r.mapping(target, target_where)
    target_alias = r.string(target, "alias", target_where)
    out: list[Mirror] = []
    for i, m in mirrors.children.items():
        where = f"spec.mirrors[{i}]"
        r.mapping(m, where)
        source = m.get("source")
        if source is not None:
            out.append(Mirror(i, m, source, f"{where}.source"))
        else:
            if not by_alias:
                raise r.err(f"{where}.source", m, "is required")
            name = r.string(m, "sourceCluster", where)
            assert name is not None
            if name not in by_alias:
                raise r.err(f"{where}.sourceCluster", m.get("sourceCluster"), f"{name!r} is not in spec.clusters")
            node, node_where = by_alias[name]
            out.append(Mirror(i, m, node, node_where))
        declared = r.string(m, "targetCluster", where, required=False)
        if declared is not None and declared != target_alias:
            same = by_alias.get(declared)
            if same is None or _bootstrap(same[0]) != _bootstrap(target):
                raise r.err(
                    f"{where}.targetCluster",
                    m.get("targetCluster"),
                    f"{declared!r} is not the Connect (target) cluster {target_alias!r}",
                )
    return target, target_where, out


def _bootstrap(node: Node) -> Any:
    return node.value.get("bootstrapServers") if isinstance(node.value, Mapping) else None


@dataclass(frozen=True)
class StrimziResource:
    """What a KafkaMirrorMaker2 resource describes: its connectors, as Strimzi would create them."""

    name: str
    api_version: str
    connectors: list[MirrorConnector]
    #: The Connect worker's offsets topic (``spec.target.offsetStorageTopic``), when the resource names it.
    offsets_topic: str | None
    #: The Kafka release the connectors run (``spec.version``), which decides the defaults of unset keys.
    kafka_version: str | None = None


def read_resource(doc: Node, *, path: str, secrets: SecretStore | None) -> StrimziResource:
    """The connectors a KafkaMirrorMaker2 resource makes; ConfigError (naming the field) for anything wrong."""
    r = _ResourceReader(path, secrets)
    r.mapping(doc, "(document)")
    api = r.string(doc, "apiVersion", "(resource)")
    kind = r.string(doc, "kind", "(resource)")
    if kind != KIND:
        raise r.err("kind", doc.get("kind"), f"{kind!r} is not {KIND}")
    if api not in API_VERSIONS:
        raise r.err("apiVersion", doc.get("apiVersion"), f"{api!r} is not one of {', '.join(API_VERSIONS)}")
    assert api is not None
    metadata = doc.get("metadata")
    name = metadata.value.get("name") if metadata is not None and isinstance(metadata.value, Mapping) else None
    spec = r.mapping(doc.get("spec"), "spec", doc)
    target, target_where, mirrors = _mirrors(r, spec, api)
    target_alias, target_props = r.cluster(target, target_where, "target.cluster.")
    offsets_topic = r.string(target, "offsetStorageTopic", target_where, required=False)
    if offsets_topic is None:
        target_config = target.get("config")
        settings = target_config.value if target_config is not None else None
        if isinstance(settings, Mapping) and settings.get("offset.storage.topic"):
            offsets_topic = _java_string(settings["offset.storage.topic"])
    connectors: list[MirrorConnector] = []
    seen_aliases = {target_alias: target_where}
    for mirror in mirrors:
        source_alias, source_props = r.cluster(mirror.source, mirror.source_where, "source.cluster.")
        here = f"spec.mirrors[{mirror.index}]"
        if source_alias == target_alias or (
            source_alias in seen_aliases and seen_aliases[source_alias] != mirror.source_where
        ):
            raise r.err(
                f"{mirror.source_where}.alias",
                mirror.source.get("alias"),
                f"{source_alias!r} is used twice: the target and source cluster aliases must be unique",
            )
        seen_aliases[source_alias] = mirror.source_where
        patterns: dict[str, Property] = {}
        for field_name, key in (*_LEGACY_PATTERNS, *_PATTERNS):  # the current names win over the deprecated ones
            value = r.string(mirror.node, field_name, here, required=False)
            if value is not None:
                patterns[key] = r.prop(value, mirror.node.get(field_name), f"{here}.{field_name}")
        for role, field_name in _CONNECTOR_FIELDS.items():
            spec_node = mirror.node.get(field_name)
            if spec_node is None:
                continue
            if role == "heartbeat" and api.endswith("/v1"):
                raise r.err(f"{here}.{field_name}", spec_node, f"is not part of {api}")
            config: dict[str, Property] = {**target_props, **source_props}
            connector_config = spec_node.get("config") if isinstance(spec_node.value, Mapping) else None
            if connector_config is not None and connector_config.value:
                r.mapping(connector_config, f"{here}.{field_name}.config")
                for key, child in connector_config.children.items():
                    origin = f"{here}.{field_name}.config.{key}"
                    config[str(key)] = r.prop(_java_string(child.value), child, origin)
            config.update(patterns)
            connectors.append(
                MirrorConnector(
                    name=f"{source_alias}->{target_alias}{CONNECTOR_SUFFIXES[role]}", role=role, config=config
                )
            )
    if not connectors:
        raise r.err(
            "spec.mirrors",
            spec.get("mirrors"),
            "no mirror has a sourceConnector, checkpointConnector or heartbeatConnector",
        )
    version = r.string(spec, "version", "spec", required=False)
    return StrimziResource(
        name=str(name or ""),
        api_version=api,
        connectors=connectors,
        offsets_topic=offsets_topic,
        kafka_version=version,
    )


def find_resource(docs: list[Node], *, path: str) -> Node:
    """The one resource among ``docs`` (a ``kind: List`` is opened); ConfigError when there is none or several."""
    resources: list[Node] = []
    for doc in docs:
        if isinstance(doc.value, Mapping) and doc.value.get("kind") == "List" and doc.get("items") is not None:
            items = doc.get("items")
            assert items is not None
            resources.extend(items.children.values())
        elif doc.value is not None:
            resources.append(doc)
    mm2 = [d for d in resources if isinstance(d.value, Mapping) and d.value.get("kind") == KIND]
    if len(mm2) == 1:
        return mm2[0]
    if len(mm2) > 1:
        raise ConfigError(f"kind: the file holds {len(mm2)} {KIND} resources; give one", path=path)
    return resources[0]  # read_resource names what is wrong with it (its kind, apiVersion)


def strimzi_reference_resolver(secrets: SecretStore | None) -> Callable[[str], str | None]:
    """Resolves the config-provider references Strimzi writes into connector configs, from ``--secrets``.

    ``${strimzisecrets:<namespace>/<secret>:<key>}`` (Strimzi 0.49+) and
    ``${strimzidir:<mount root>/<alias>/<secret>:<key>}`` (earlier) name the Secret and key exactly. Any other
    reference is left to the caller, which asks for the value.
    """

    def resolve(ref: str) -> str | None:
        if secrets is None:
            return None
        match = re.fullmatch(r"\$\{strimzisecrets:[^/}]+/([^:}]+):([^}]+)\}", ref) or re.fullmatch(
            r"\$\{strimzidir:[^}]*/([^/:}]+):([^}]+)\}", ref
        )
        if match is None:
            return None
        try:
            return secrets.get(match.group(1), match.group(2))
        except SecretLookupError:
            return None

    return resolve
