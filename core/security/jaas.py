"""Kafka's ``sasl.jaas.config`` syntax, read the way its ``JaasConfig`` parser reads it.

mm2ctl takes the SASL username and password from the same login module line MM2 uses, so it must split
that line exactly as Kafka does: comments, quoting, escapes and the control flag included. Option values are
secrets: they stay out of every repr and every error message.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class JaasEntry:
    """One login module from ``sasl.jaas.config``. Options may hold secrets and are kept out of repr."""

    module: str
    flag: str
    options: dict[str, str] = field(repr=False)


_JAAS_FLAGS = ("required", "requisite", "sufficient", "optional")
_QUOTE_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f", "a": "\a", "v": "\v"}


class JaasSyntaxError(ValueError):
    """A JAAS syntax problem; its message never contains option values."""


class _JaasLexer:
    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def skip(self) -> None:
        t = self.text
        while self.pos < len(t):
            if t[self.pos].isspace():
                self.pos += 1
            elif t.startswith("//", self.pos):
                end = t.find("\n", self.pos)
                self.pos = len(t) if end < 0 else end + 1
            elif t.startswith("/*", self.pos):
                end = t.find("*/", self.pos + 2)
                self.pos = len(t) if end < 0 else end + 2
            else:
                return

    def peek(self) -> str:
        self.skip()
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def word(self) -> str:
        self.skip()
        start = self.pos
        t = self.text
        while self.pos < len(t) and not t[self.pos].isspace() and t[self.pos] not in ";=\"'":
            self.pos += 1
        return t[start : self.pos]

    def value(self) -> str:
        self.skip()
        t = self.text
        if self.pos < len(t) and t[self.pos] in "\"'":
            quote = t[self.pos]
            self.pos += 1
            out: list[str] = []
            while self.pos < len(t):
                c = t[self.pos]
                self.pos += 1
                if c == quote:
                    return "".join(out)
                if c == "\\" and self.pos < len(t):
                    nxt = t[self.pos]
                    self.pos += 1
                    out.append(_QUOTE_ESCAPES.get(nxt, nxt))
                else:
                    out.append(c)
            raise JaasSyntaxError("a quoted value is not closed")
        return self.word()


def parse_jaas_config(text: str) -> list[JaasEntry]:
    """Parse ``sasl.jaas.config`` the way Kafka's ``JaasConfig`` does (comments, quotes, escapes).

    Raises ValueError with a message that never includes an option value.
    """
    lexer = _JaasLexer(text)
    entries: list[JaasEntry] = []
    while lexer.peek():
        module = lexer.word()
        if not module:
            raise JaasSyntaxError("expected a login module class name")
        flag = lexer.word()
        if flag.lower() not in _JAAS_FLAGS:
            raise JaasSyntaxError(
                f"login module {module} needs a control flag (required, requisite, sufficient or optional)"
            )
        options: dict[str, str] = {}
        while lexer.peek() not in ("", ";"):
            name = lexer.word()
            if not name:
                raise JaasSyntaxError(f"unexpected character in the options of {module}")
            if lexer.peek() != "=":
                raise JaasSyntaxError(f"option {name!r} of {module} has no '=value'")
            lexer.pos += 1
            if lexer.peek() in ("", ";"):
                raise JaasSyntaxError(f"option {name!r} of {module} has no value")
            options[name] = lexer.value()
        if lexer.peek() != ";":
            raise JaasSyntaxError(f"login module {module} must end with ';'")
        lexer.pos += 1
        entries.append(JaasEntry(module, flag.lower(), options))
    return entries
