"""A reader for ``java.util.Properties`` files, the format of MM2's ``connect-mirror-maker.properties``.

Users hand mm2ctl the same file they hand MM2 (and Aiven's offset-sync inspector, ``--mm2-config``). If we
read it even slightly differently from ``Properties.load`` a key silently goes missing: a continued
``sasl.jaas.config``, a ``\\:`` in a key, or a value ending in whitespace. So this follows the Java rules:

* Natural lines end at ``\\n``, ``\\r`` or ``\\r\\n``. Leading whitespace (space, tab, form feed) is skipped.
* A line whose first non-blank character is ``#`` or ``!`` is a comment; a trailing ``\\`` does not
  continue a comment.
* A line ending in an odd number of backslashes continues on the next line; that line's leading
  whitespace is dropped. A backslash at end of file is dropped.
* The key ends at the first unescaped ``=``, ``:`` or whitespace; then whitespace and at most one ``=`` or
  ``:`` are skipped. The rest of the line is the value, trailing whitespace included.
* In keys and values ``\\t \\n \\r \\f`` and ``\\uXXXX`` are escapes and any other escaped character stands
  for itself (``\\=``, ``\\:``, ``\\ ``, ``\\#``, ``\\\\``). A malformed ``\\uXXXX`` is an error.
* The last occurrence of a key wins; every line it was set on is kept for error messages.

Encoding: MM2 loads the file as ISO-8859-1 (``Properties.load(InputStream)``). mm2ctl decodes UTF-8 first
and falls back to ISO-8859-1; for the ASCII files MM2 users have, the two agree. A file with NUL bytes is
not a properties file (a keystore passed by mistake, say) and is refused.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from typing import NamedTuple

from mm2ctl.core.errors import ConfigError
from mm2ctl.core.security.redaction import mask, redact

_WHITESPACE = " \t\f"
_SIMPLE_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


class Property(NamedTuple):
    """One key's value and the line of the occurrence that won.

    ``origin`` names where the value came from when that is not a line of a properties file: the field of a
    KafkaMirrorMaker2 resource (``spec.mirrors[0].topicsPattern``) or a live connector's setting. Errors and
    ``mm2ctl config show`` name it instead of the key.
    """

    value: str
    line: int | None
    origin: str | None = None

    def __repr__(self) -> str:  # values may be secrets; a repr must never show them
        return f"Property(value={mask(self.value)!r}, line={self.line}, origin={self.origin!r})"


class Properties(Mapping[str, Property]):
    """An ordered, read-only mapping ``key -> Property(value, line)`` from one file.

    Order is the order of each key's first appearance (as Java's ``Properties`` keeps no order, nothing
    in MM2 depends on it; it makes error reports stable).
    """

    def __init__(self, path: str, entries: dict[str, Property], lines: dict[str, tuple[int, ...]]) -> None:
        self.path = path
        self._entries = entries
        self._lines = lines

    def __getitem__(self, key: str) -> Property:
        return self._entries[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def value(self, key: str, default: str | None = None) -> str | None:
        """The value of ``key``, or ``default`` when it is not set."""
        prop = self._entries.get(key)
        return default if prop is None else prop.value

    def line(self, key: str) -> int | None:
        """The line of the winning occurrence of ``key``, or None."""
        prop = self._entries.get(key)
        return None if prop is None else prop.line

    def origin(self, key: str) -> str | None:
        """Where ``key``'s value came from when not a file line (see :class:`Property`), or None."""
        prop = self._entries.get(key)
        return None if prop is None else prop.origin

    def lines(self, key: str) -> tuple[int, ...]:
        """Every line ``key`` was set on, in file order (duplicates included)."""
        return self._lines.get(key, ())

    def values(self) -> list[str]:  # type: ignore[override]
        """Plain values in key order (the Mapping ``values`` view would hold Property tuples)."""
        return [p.value for p in self._entries.values()]

    def as_dict(self) -> dict[str, str]:
        """``{key: value}``, for code that does not care about lines."""
        return {k: p.value for k, p in self._entries.items()}

    def __repr__(self) -> str:
        return f"Properties(path={self.path!r}, {redact(self.as_dict())!r})"


def _logical_lines(text: str) -> Iterator[tuple[int, str]]:
    """Yield ``(first line number, logical line)`` with comments, blanks and continuations handled.

    The logical line still contains escape sequences (other than the continuation backslashes).
    """
    natural = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    i = 0
    while i < len(natural):
        start = i
        line = natural[i].lstrip(_WHITESPACE)
        i += 1
        if not line or line[0] in "#!":
            continue
        parts: list[str] = []
        while True:
            trailing = len(line) - len(line.rstrip("\\"))
            if trailing % 2 == 1:
                parts.append(line[:-1])
                if i >= len(natural):
                    break  # Java drops a backslash at end of file
                line = natural[i].lstrip(_WHITESPACE)
                i += 1
                continue
            parts.append(line)
            break
        yield start + 1, "".join(parts)


def _unescape(raw: str, *, path: str, line: int, key: str | None) -> str:
    out: list[str] = []
    i = 0
    n = len(raw)
    while i < n:
        c = raw[i]
        if c != "\\":
            out.append(c)
            i += 1
            continue
        i += 1
        if i >= n:
            break
        c = raw[i]
        i += 1
        if c == "u":
            digits = raw[i : i + 4]
            if len(digits) < 4 or any(d not in "0123456789abcdefABCDEF" for d in digits):
                raise ConfigError(
                    "malformed \\uXXXX escape (Java's Properties.load rejects it too)",
                    path=path,
                    line=line,
                    key=key,
                )
            out.append(chr(int(digits, 16)))
            i += 4
        else:
            out.append(_SIMPLE_ESCAPES.get(c, c))
    return "".join(_join_surrogates(out))


def _join_surrogates(chars: list[str]) -> Iterator[str]:
    """``\\uD83D\\uDE00`` is one character in Java's UTF-16 strings; combine escaped surrogate pairs."""
    i = 0
    while i < len(chars):
        c = chars[i]
        if len(c) == 1 and 0xD800 <= ord(c) <= 0xDBFF and i + 1 < len(chars):
            low = chars[i + 1]
            if len(low) == 1 and 0xDC00 <= ord(low) <= 0xDFFF:
                yield chr(0x10000 + ((ord(c) - 0xD800) << 10) + (ord(low) - 0xDC00))
                i += 2
                continue
        yield c
        i += 1


def _split_key_value(logical: str) -> tuple[str, str]:
    """Split a logical line into raw (still escaped) key and value, as ``Properties.load0`` does."""
    n = len(logical)
    key_end = 0
    value_start = n
    has_sep = False
    backslash = False
    while key_end < n:
        c = logical[key_end]
        if not backslash and c in "=:":
            value_start = key_end + 1
            has_sep = True
            break
        if not backslash and c in _WHITESPACE:
            value_start = key_end + 1
            break
        backslash = (not backslash) if c == "\\" else False
        key_end += 1
    while value_start < n:
        c = logical[value_start]
        if c not in _WHITESPACE:
            if not has_sep and c in "=:":
                has_sep = True
            else:
                break
        value_start += 1
    return logical[:key_end], logical[value_start:]


def parse_properties(text: str, *, path: str = "<string>") -> Properties:
    """Parse properties text. ``path`` only names the source in errors."""
    entries: dict[str, Property] = {}
    lines: dict[str, list[int]] = {}
    for line_no, logical in _logical_lines(text):
        raw_key, raw_value = _split_key_value(logical)
        key = _unescape(raw_key, path=path, line=line_no, key=None)
        value = _unescape(raw_value, path=path, line=line_no, key=key)
        entries[key] = Property(value, line_no)  # re-assigning keeps the first appearance's position
        lines.setdefault(key, []).append(line_no)
    return Properties(path, entries, {k: tuple(v) for k, v in lines.items()})


def properties_of(path: str, entries: Mapping[str, Property]) -> Properties:
    """Properties built by an adapter (a KafkaMirrorMaker2 resource, live connectors) rather than read from a
    file: each entry carries its own line (in the resource, when it has one) and origin."""
    lines: dict[str, tuple[int, ...]] = {k: (p.line,) for k, p in entries.items() if p.line is not None}
    return Properties(path, dict(entries), lines)


def _escape(text: str, *, key: bool) -> str:
    out = []
    for i, c in enumerate(text):
        if c == "\\":
            out.append("\\\\")
        elif c in "\t\n\r\f":
            out.append("\\" + {"\t": "t", "\n": "n", "\r": "r", "\f": "f"}[c])
        elif c in "=:#!" or (c == " " and (key or i == 0)):
            out.append("\\" + c)
        else:
            out.append(c)
    return "".join(out)


def format_properties(values: Mapping[str, str], header: str = "") -> str:
    """``values`` as properties-file text that :func:`parse_properties` (and Java) read back unchanged."""
    lines = [f"# {line}" for line in header.splitlines()]
    lines += [f"{_escape(k, key=True)} = {_escape(v, key=False)}" for k, v in values.items()]
    return "\n".join(lines) + "\n"


def _decode(data: bytes, path: str) -> str:
    nul = data.find(b"\x00")
    if nul >= 0:
        line = data.count(b"\n", 0, nul) + 1
        raise ConfigError(
            "not a properties file: it contains NUL bytes (is it a keystore or another binary file?)",
            path=path,
            line=line,
        )
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("latin-1")  # what MM2 itself reads; cannot fail


def load_properties(path: str | os.PathLike[str]) -> Properties:
    """Read and parse a properties file, turning every I/O problem into a ConfigError naming the file."""
    name = os.fspath(path)
    try:
        with open(name, "rb") as fh:
            data = fh.read()
    except FileNotFoundError as exc:
        raise ConfigError("file not found", path=name) from exc
    except IsADirectoryError as exc:
        raise ConfigError("is a directory, not a properties file", path=name) from exc
    except OSError as exc:
        raise ConfigError(f"cannot read file: {exc.strerror or exc}", path=name) from exc
    return parse_properties(_decode(data, name), path=name)
