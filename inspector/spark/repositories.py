"""The repositories Spark's Ivy resolves ``spark.jars.packages`` from, and a cheap look whether one holds a module.

Without ``spark.jars.ivySettings``, Spark chains its resolvers (``MavenUtils.createRepoResolvers``): the
user's Maven cache (``~/.m2/repository``), the Ivy home's ``local`` repository, Maven Central (the root in
``$DEFAULT_ARTIFACT_REPOSITORY`` when set), spark-packages, then each URL of ``spark.jars.repositories``; the
Ivy home's ``cache`` is consulted before any of them. spark-packages hosts third-party packages only, never
``org.apache.spark``'s, so it is not asked here. With ``spark.jars.ivySettings`` the chain is the user's file,
which only Ivy itself reads (``inspector.spark.packages`` then asks Spark).

A repository holds a module when it has both its POM and its jar: files for a local one, ``GET`` of the POM and
``HEAD`` of the jar answered 200 for a remote one. 404 and 410 are a clear no; anything else (refused, timed
out, 401, 5xx) tells nothing. A module resolves when its direct compile and runtime dependencies (as its POM
lists them, less what the caller excludes) are somewhere too: a mirror can hold a release's Kafka source
without its sibling ``spark-token-provider-kafka-0-10``.
"""

from __future__ import annotations

import base64
import os
import urllib.error
import urllib.parse
import urllib.request
import xml.etree.ElementTree as ElementTree
from collections.abc import Collection
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path

#: Spark's default for its ``central`` resolver (``$DEFAULT_ARTIFACT_REPOSITORY`` replaces it).
MAVEN_CENTRAL = "https://repo1.maven.org/maven2/"

#: How long one ``HEAD`` may take.
HEAD_TIMEOUT_S = 10.0


class Presence(Enum):
    FOUND = "found"
    ABSENT = "absent"
    UNKNOWN = "unknown"


@dataclass(frozen=True, slots=True)
class Module:
    """A Maven module at one version (``group:artifact:version``)."""

    group: str
    artifact: str
    version: str

    @property
    def coordinate(self) -> str:
        return f"{self.group}:{self.artifact}:{self.version}"

    def maven_path(self, ext: str) -> str:
        """Its file ``ext`` (``pom``, ``jar``) in a Maven layout."""
        folder = f"{self.group.replace('.', '/')}/{self.artifact}/{self.version}"
        return f"{folder}/{self.artifact}-{self.version}.{ext}"


@dataclass(frozen=True, slots=True)
class Repository:
    """One repository of the chain: a Maven-layout ``root`` (a URL or a folder), or an Ivy home's ``local``."""

    name: str
    root: str
    ivy_layout: bool = False

    def shown(self) -> str:
        """The repository as a user reads it: its URL without credentials."""
        return f"{self.name} ({redacted(self.root)})"


@dataclass(frozen=True, slots=True)
class Look:
    """What was learnt of one module: where it is, or why it is not known to be anywhere (per repository)."""

    presence: Presence
    where: str = ""
    reasons: tuple[str, ...] = field(default_factory=tuple)


def redacted(url: str) -> str:
    """``url`` without a user name or password in it."""
    parts = urllib.parse.urlsplit(url)
    if parts.username is None and parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urllib.parse.urlunsplit(parts._replace(netloc=netloc))


def default_chain(ivy_home: Path, repositories: str | None) -> list[Repository]:
    """Spark's default resolvers but spark-packages, in Spark's order, then ``spark.jars.repositories``."""
    chain = [
        Repository("local-m2-cache", str(Path.home() / ".m2" / "repository")),
        Repository("local-ivy-cache", str(ivy_home / "local"), ivy_layout=True),
        Repository("central", os.environ.get("DEFAULT_ARTIFACT_REPOSITORY") or MAVEN_CENTRAL),
    ]
    words = [w.strip() for w in (repositories or "").split(",") if w.strip()]
    chain += [Repository(f"repo-{i}", url) for i, url in enumerate(words, start=1)]
    return chain


def in_ivy_cache(ivy_home: Path, module: Module) -> bool:
    """Whether the Ivy home's cache holds ``module`` resolved (its descriptor and its jar), as Ivy finds it
    without asking any repository."""
    folder = ivy_home / "cache" / module.group / module.artifact
    descriptor = folder / f"ivy-{module.version}.xml"
    jar = folder / "jars" / f"{module.artifact}-{module.version}.jar"
    return descriptor.is_file() and jar.is_file()


def look(
    chain: list[Repository],
    module: Module,
    *,
    ivy_home: Path | None = None,
    excluded: Collection[str] = (),
    timeout_s: float = HEAD_TIMEOUT_S,
) -> Look:
    """Whether ``module`` and its direct dependencies (but the ``group:artifact`` in ``excluded``) resolve: from
    the Ivy cache of ``ivy_home``, else a repository of ``chain``. FOUND (where the module is), ABSENT (some
    repository said no to each place asked), or UNKNOWN (none has it, and some could not say: why)."""
    seen, pom = _find(chain, module, ivy_home, timeout_s)
    if seen.presence is not Presence.FOUND:
        return seen
    for needed in dependencies(pom):
        if f"{needed.group}:{needed.artifact}" in excluded:
            continue
        found, _ = _find(chain, needed, ivy_home, timeout_s)
        if found.presence is not Presence.FOUND:
            why = f"{module.coordinate} needs {needed.coordinate}, found nowhere"
            return Look(found.presence, reasons=(why, *found.reasons))
    return seen


def dependencies(pom: str | None) -> list[Module]:
    """The direct compile and runtime dependencies a POM names with a plain version (a published POM's)."""
    if not pom:
        return []
    try:
        root = ElementTree.fromstring(pom)
    except ElementTree.ParseError:
        return []
    ns = root.tag[: root.tag.index("}") + 1] if root.tag.startswith("{") else ""
    found = []
    for dep in root.findall(f"{ns}dependencies/{ns}dependency"):
        text = {key: (dep.findtext(f"{ns}{key}") or "").strip() for key in ("groupId", "artifactId", "version")}
        scope = (dep.findtext(f"{ns}scope") or "compile").strip()
        kind = (dep.findtext(f"{ns}type") or "jar").strip()
        optional = (dep.findtext(f"{ns}optional") or "").strip() == "true"
        plain = all(text.values()) and "${" not in "".join(text.values())
        if plain and scope in ("compile", "runtime") and kind == "jar" and not optional:
            found.append(Module(text["groupId"], text["artifactId"], text["version"]))
    return found


def _find(chain: list[Repository], module: Module, ivy_home: Path | None, timeout_s: float) -> tuple[Look, str | None]:
    """Where ``module`` is (the Ivy cache first), and its POM's text when it is a Maven one."""
    if ivy_home is not None and in_ivy_cache(ivy_home, module):
        original = ivy_home / "cache" / module.group / module.artifact / f"ivy-{module.version}.xml.original"
        pom = original.read_text(errors="replace") if original.is_file() else None
        return Look(Presence.FOUND, where=f"the Ivy cache {ivy_home / 'cache'}"), pom
    reasons: list[str] = []
    for repository in chain:
        presence, why, pom = _holds(repository, module, timeout_s)
        if presence is Presence.FOUND:
            return Look(Presence.FOUND, where=repository.shown()), pom
        if presence is Presence.UNKNOWN:
            reasons.append(f"{repository.shown()}: {why}")
    return Look(Presence.UNKNOWN if reasons else Presence.ABSENT, reasons=tuple(reasons)), None


def _holds(repository: Repository, module: Module, timeout_s: float) -> tuple[Presence, str, str | None]:
    if repository.ivy_layout:
        folder = Path(repository.root) / module.group / module.artifact / module.version
        jar = folder / "jars" / f"{module.artifact}.jar"
        found = (folder / "ivys" / "ivy.xml").is_file() and jar.is_file()
        return (Presence.FOUND if found else Presence.ABSENT), "", None
    pom, why, text = _fetch(repository.root, module.maven_path("pom"), timeout_s, body=True)
    if pom is not Presence.FOUND:
        return pom, why, None
    has_jar, why, _ = _fetch(repository.root, module.maven_path("jar"), timeout_s, body=False)
    return has_jar, why, text


def _fetch(root: str, path: str, timeout_s: float, *, body: bool) -> tuple[Presence, str, str | None]:
    """Whether the repository at ``root`` (a folder, ``file:`` or ``http(s):`` URL) has the file ``path``, why
    not when it cannot say, and the file's text when ``body``."""
    scheme = urllib.parse.urlsplit(root).scheme
    if scheme in ("", "file"):
        file = Path(urllib.parse.urlsplit(root).path if scheme else root) / path
        if not file.is_file():
            return Presence.ABSENT, "", None
        return Presence.FOUND, "", file.read_text(errors="replace") if body else None
    if scheme not in ("http", "https"):
        return Presence.UNKNOWN, f"a {scheme}: repository is not looked into", None
    parts = urllib.parse.urlsplit(root.rstrip("/") + "/" + path)
    url = urllib.parse.urlunsplit(parts._replace(netloc=_host(parts)))
    request = urllib.request.Request(url, method="GET" if body else "HEAD")
    if parts.username is not None:  # credentials in the URL, as Ivy takes them: basic authentication
        user = urllib.parse.unquote(parts.username)
        password = urllib.parse.unquote(parts.password or "")
        token = base64.b64encode(f"{user}:{password}".encode()).decode()
        request.add_header("Authorization", f"Basic {token}")
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as answer:
            if answer.status != 200:
                return Presence.UNKNOWN, f"HTTP {answer.status}", None
            return Presence.FOUND, "", answer.read(4 << 20).decode(errors="replace") if body else None
    except urllib.error.HTTPError as exc:
        return (Presence.ABSENT if exc.code in (404, 410) else Presence.UNKNOWN), f"HTTP {exc.code}", None
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        return Presence.UNKNOWN, " ".join(str(reason).split()) or type(exc).__name__, None


def _host(parts: urllib.parse.SplitResult) -> str:
    host = parts.hostname or ""
    if ":" in host:  # an IPv6 address
        host = f"[{host}]"
    return f"{host}:{parts.port}" if parts.port else host


__all__ = [
    "MAVEN_CENTRAL",
    "Look",
    "Module",
    "Presence",
    "Repository",
    "default_chain",
    "dependencies",
    "in_ivy_cache",
    "look",
    "redacted",
]
