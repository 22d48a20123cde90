"""MM2's own topic and group filters, and the Java regexes they are written in.

A flow replicates a topic, and syncs a group's offsets, only when MM2's filter lets the name through. The
rules are Kafka's (``DefaultTopicFilter``, ``DefaultGroupFilter``, ``MirrorUtils.compilePatternList``,
``MirrorSourceConnector``):

* Each of ``topics``, ``topics.exclude``, ``groups`` and ``groups.exclude`` is a list of Java regexes, and a
  pattern matches a *whole* name (``Pattern.matches``, here ``re.fullmatch``), never a part of it: ``ord``
  does not match ``orders``.
* A name passes when it matches an include pattern and no exclude pattern. An empty list matches nothing:
  an empty include list lets no name through, an empty exclude list excludes none.
* The patterns are ``java.util.regex`` syntax. :func:`java_regex_to_python` rewrites the Java-only
  constructs for Python's ``re``; a pattern with no Python equivalent is a ``ConfigError``, as is one that
  does not compile.
* A flow replicates a source topic that passes its topic filter or is a heartbeats topic, unless the topic
  is internal to MM2 or came from the flow's target (a cycle): :func:`replicates_topic`.

These are MM2's filters, matched as MM2 matches them. The user's ``--groups`` and ``--topics`` options are
Python regexes matched anywhere in a name (``core.patterns``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from mm2ctl.core.config.naming import ReplicationPolicy
from mm2ctl.core.errors import ConfigError

# Kafka's own defaults (DefaultTopicFilter / DefaultGroupFilter, Kafka 3.x and 4.x). Kafka 2.x excluded
# ".*[\-\.]internal" instead of "mm2.*\.internal".
TOPICS_DEFAULT = ".*"
TOPICS_EXCLUDE_DEFAULT = r"mm2.*\.internal, .*\.replica, __.*"
GROUPS_DEFAULT = ".*"
GROUPS_EXCLUDE_DEFAULT = "console-consumer-.*, connect-.*, __.*"


# --- Java regexes ---------------------------------------------------------------------------------

_POSIX_CLASSES = {
    "Lower": "a-z",
    "Upper": "A-Z",
    "Alpha": "a-zA-Z",
    "Digit": "0-9",
    "Alnum": "a-zA-Z0-9",
    "XDigit": "0-9a-fA-F",
    "Space": r" \t\n\x0b\f\r",
    "Punct": r"!-/:-@\[-`{-~",
}


class _RegexTranslationError(ValueError):
    pass


def java_regex_to_python(pattern: str) -> str:
    """Rewrite the Java-only constructs of a ``java.util.regex`` pattern that Python's ``re`` spells
    differently (``\\Q…\\E``, ``(?<name>…)``, ``\\k<name>``, ``\\z``, ``\\Z``, ``\\p{Alpha}``-style POSIX
    classes, a leading ``(?i)``). Possessive quantifiers and atomic groups need no rewrite on Python 3.11+.
    Raises ValueError for constructs with no Python equivalent.
    """
    out: list[str] = []
    i = 0
    n = len(pattern)
    in_class = False
    flags = re.match(r"\(\?([a-zA-Z]+)\)", pattern)
    if flags:
        letters = flags.group(1)
        if set(letters) - set("imsx"):
            raise _RegexTranslationError(f"inline flags (?{letters}) are not supported")
        out.append(f"(?{letters}:")
        i = flags.end()
    while i < n:
        c = pattern[i]
        if c == "\\" and i + 1 < n:
            nxt = pattern[i + 1]
            if nxt == "Q":
                end = pattern.find("\\E", i + 2)
                literal = pattern[i + 2 :] if end < 0 else pattern[i + 2 : end]
                out.append(re.escape(literal))
                i = n if end < 0 else end + 2
                continue
            if nxt in "pP" and i + 2 < n and pattern[i + 2] == "{":
                end = pattern.find("}", i + 3)
                name = pattern[i + 3 : end] if end > 0 else ""
                name = name[2:] if name.startswith("Is") else name
                if name not in _POSIX_CLASSES:
                    raise _RegexTranslationError(f"\\{nxt}{{{name}}} is not supported")
                body = _POSIX_CLASSES[name]
                if in_class:
                    if nxt == "P":
                        raise _RegexTranslationError(f"\\P{{{name}}} inside [...] is not supported")
                    out.append(body)
                else:
                    out.append(f"[{'^' if nxt == 'P' else ''}{body}]")
                i = end + 1
                continue
            if nxt == "z" and not in_class:
                out.append(r"\Z")
            elif nxt == "Z" and not in_class:
                out.append(r"(?=\n?\Z)")
            elif nxt == "k" and i + 2 < n and pattern[i + 2] == "<":
                end = pattern.find(">", i + 3)
                if end < 0:
                    raise _RegexTranslationError("unterminated \\k<name>")
                out.append(f"(?P={pattern[i + 3 : end]})")
                i = end + 1
                continue
            else:
                out.append(c + nxt)
            i += 2
            continue
        if in_class:
            if c == "]":
                in_class = False
            out.append(c)
            i += 1
            continue
        if c == "[":
            in_class = True
            out.append(c)
            i += 1
            if i < n and pattern[i] == "^":
                out.append("^")
                i += 1
            if i < n and pattern[i] == "]":  # a leading ] is literal
                out.append(r"\]")
                i += 1
            continue
        if pattern.startswith("(?<", i) and i + 3 < n and pattern[i + 3] not in "=!":
            out.append("(?P<")
            i += 3
            continue
        out.append(c)
        i += 1
    if flags:
        out.append(")")
    return "".join(out)


@dataclass(frozen=True)
class IncludeExcludeFilter:
    """Kafka's include/exclude filter: a name passes when it fully matches an include pattern and no
    exclude pattern. An empty list matches nothing, as in ``MirrorUtils.compilePatternList``.
    """

    include_key: str
    include: tuple[str, ...]
    exclude_key: str
    exclude: tuple[str, ...]
    _include_re: re.Pattern[str] | None = field(default=None, repr=False, compare=False)
    _exclude_re: re.Pattern[str] | None = field(default=None, repr=False, compare=False)

    def matches(self, name: str) -> bool:
        """True when MM2 would replicate this topic (or group)."""
        included = self._include_re is not None and self._include_re.fullmatch(name) is not None
        excluded = self._exclude_re is not None and self._exclude_re.fullmatch(name) is not None
        return included and not excluded


def compile_patterns(
    patterns: Iterable[str], *, path: str | None = None, line: int | None = None, key: str | None = None
) -> re.Pattern[str] | None:
    """Compile a pattern list like ``MirrorUtils.compilePatternList``; None (matches nothing) when empty."""
    translated: list[str] = []
    for pattern in patterns:
        try:
            python = java_regex_to_python(pattern)
            re.compile(python)
        except (re.error, ValueError) as exc:
            reason = exc.msg if isinstance(exc, re.error) else str(exc)
            raise ConfigError(
                f"pattern {pattern!r} is not a valid regular expression: {reason}",
                path=path,
                line=line,
                key=key,
            ) from exc
        translated.append(f"(?:{python})")
    return re.compile("|".join(translated)) if translated else None


# --- what a flow replicates -----------------------------------------------------------------------


def replicates_topic(topic_filter: IncludeExcludeFilter, policy: ReplicationPolicy, target: str, topic: str) -> bool:
    """True when a flow to ``target`` with this filter and policy replicates source topic ``topic``.

    ``MirrorSourceConnector.shouldReplicateTopic``: the filter passes it or it is a heartbeats topic, and it
    is neither one of MM2's internal topics nor a cycle (:func:`is_cycle`).
    """
    return (
        (topic_filter.matches(topic) or policy.is_heartbeats_topic(topic))
        and not policy.is_internal_topic(topic)
        and not is_cycle(policy, target, topic)
    )


def is_cycle(policy: ReplicationPolicy, target: str, topic: str) -> bool:
    """``MirrorSourceConnector.isCycle``: the topic already came from ``target``, at any hop."""
    seen = topic
    while True:
        source = policy.topic_source(seen)
        if source is None:
            return False
        if source == target:
            return True
        upstream = policy.upstream_topic(seen)
        if upstream is None or upstream == seen:
            return False
        seen = upstream
