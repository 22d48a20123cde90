"""java.util.Properties syntax, rule by rule (the expected values are what Properties.load returns)."""

from __future__ import annotations

from pathlib import Path

import pytest

from mm2ctl.core.config.properties import Property, load_properties, parse_properties
from mm2ctl.core.errors import ConfigError


@pytest.mark.parametrize(
    ("text", "key", "value"),
    [
        pytest.param("a=b", "a", "b", id="equals"),
        pytest.param("a:b", "a", "b", id="colon"),
        pytest.param("a b", "a", "b", id="space-separator"),
        pytest.param("a\tb", "a", "b", id="tab-separator"),
        pytest.param("a\fb", "a", "b", id="formfeed-separator"),
        pytest.param("a = b", "a", "b", id="spaces-around-equals"),
        pytest.param("a  :  b", "a", "b", id="spaces-around-colon"),
        pytest.param("a = = b", "a", "= b", id="second-separator-is-value"),
        pytest.param("a==b", "a", "=b", id="double-equals"),
        pytest.param("a b = c", "a", "b = c", id="whitespace-separator-then-text"),
        pytest.param("a =", "a", "", id="empty-value"),
        pytest.param("a", "a", "", id="key-only"),
        pytest.param("   a=b", "a", "b", id="leading-whitespace"),
        pytest.param("a=b  ", "a", "b  ", id="trailing-whitespace-kept"),
        pytest.param("a=b#c", "a", "b#c", id="hash-inside-value"),
        pytest.param("a=x\\ty", "a", "x\ty", id="escape-tab"),
        pytest.param("a=x\\ny", "a", "x\ny", id="escape-newline"),
        pytest.param("a=x\\ry", "a", "x\ry", id="escape-cr"),
        pytest.param("a=x\\fy", "a", "x\fy", id="escape-formfeed"),
        pytest.param("a=x\\\\y", "a", "x\\y", id="escape-backslash"),
        pytest.param("a=\\u0041\\u00e9", "a", "Aé", id="escape-unicode"),
        pytest.param("a=\\uD83D\\uDE00", "a", "\U0001f600", id="escape-surrogate-pair"),
        pytest.param("a=\\q", "a", "q", id="unknown-escape-is-the-char"),
        pytest.param("a\\=b=c", "a=b", "c", id="escaped-equals-in-key"),
        pytest.param("a\\:b:c", "a:b", "c", id="escaped-colon-in-key"),
        pytest.param("a\\ b c", "a b", "c", id="escaped-space-in-key"),
        pytest.param("\\#a=b", "#a", "b", id="escaped-hash-key-is-not-comment"),
        pytest.param("\\!a=b", "!a", "b", id="escaped-bang-key-is-not-comment"),
        pytest.param("a\\\\=b", "a\\", "b", id="escaped-backslash-ends-key"),
        pytest.param("a->b.enabled=true", "a->b.enabled", "true", id="mm2-flow-key"),
        pytest.param("\ufeffa=b", "\ufeffa", "b", id="bom-in-text-is-kept-like-java"),
    ],
)
def test_single_line_rules(text: str, key: str, value: str) -> None:
    props = parse_properties(text)
    assert list(props) == [key]
    assert props[key] == Property(value, 1)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("a=one \\\n    two", {"a": "one two"}, id="continuation-drops-leading-ws"),
        pytest.param("a=one\\\n\\\n  two", {"a": "onetwo"}, id="continuation-over-empty-line"),
        pytest.param("a=one\\\\\nb=two", {"a": "one\\", "b": "two"}, id="even-backslashes-do-not-continue"),
        pytest.param("a=one\\\\\\\n two", {"a": "one\\two"}, id="odd-backslashes-continue"),
        pytest.param("a=one\\\r\n two", {"a": "onetwo"}, id="continuation-crlf"),
        pytest.param("a=one\\\r two", {"a": "onetwo"}, id="continuation-cr"),
        pytest.param("a=one\\", {"a": "one"}, id="backslash-at-eof-dropped"),
        pytest.param("a=one\\\n# not a comment", {"a": "one# not a comment"}, id="continued-hash-is-value"),
        pytest.param("# c \\\na=b", {"a": "b"}, id="comment-does-not-continue"),
        pytest.param("! bang comment\na=b", {"a": "b"}, id="bang-comment"),
        pytest.param("   # indented comment\na=b", {"a": "b"}, id="indented-comment"),
        pytest.param("\n\n   \n\t\na=b\n\n", {"a": "b"}, id="blank-lines"),
        pytest.param("a=1\r\nb=2\rc=3\n", {"a": "1", "b": "2", "c": "3"}, id="mixed-line-endings"),
        pytest.param(
            'sasl.jaas.config=org.Foo required \\\n   username="u" \\\n   password="p";',
            {"sasl.jaas.config": 'org.Foo required username="u" password="p";'},
            id="jaas-over-three-lines",
        ),
    ],
)
def test_multi_line_rules(text: str, expected: dict[str, str]) -> None:
    assert parse_properties(text).as_dict() == expected


def test_last_duplicate_wins_and_every_line_is_recorded() -> None:
    props = parse_properties("a=1\nb=x\n# c\na=2\n\na = 3\n")
    assert props["a"] == Property("3", 6)
    assert props.lines("a") == (1, 4, 6)
    assert props.lines("b") == (2,)
    assert list(props) == ["a", "b"]  # first-appearance order


def test_line_of_a_continued_entry_is_its_first_line() -> None:
    props = parse_properties("x=1\na=one\\\n two\\\n three\nb=2")
    assert props["a"] == Property("onetwothree", 2)
    assert props["b"].line == 5


def test_mapping_helpers() -> None:
    props = parse_properties("a=1\nb=2")
    assert props.value("a") == "1"
    assert props.value("zz", "d") == "d"
    assert props.line("zz") is None
    assert props.lines("zz") == ()
    assert props.values() == ["1", "2"]
    assert len(props) == 2


def test_repr_never_shows_values() -> None:
    props = parse_properties("ssl.keystore.password=hunter2\nclusters=a,b")
    text = repr(props) + repr(props["ssl.keystore.password"])
    assert "hunter2" not in text
    assert "a,b" in text  # non-secret values stay readable


@pytest.mark.parametrize(
    ("text", "line", "key"),
    [
        pytest.param("a=1\nb=\\u12", 2, "b", id="short-unicode"),
        pytest.param("a=\\uZZZZ", 1, "a", id="non-hex-unicode"),
        pytest.param("x=1\n\n\\u00zz=1", 3, None, id="bad-unicode-in-key"),
    ],
)
def test_malformed_unicode_escape(text: str, line: int, key: str | None) -> None:
    with pytest.raises(ConfigError) as info:
        parse_properties(text, path="mm2.properties")
    assert info.value.line == line
    assert info.value.key == key
    assert str(info.value).startswith(f"mm2.properties:{line}: ")
    assert "malformed \\uXXXX escape" in str(info.value)


def test_load_utf8_file(tmp_path: Path) -> None:
    path = tmp_path / "mm2.properties"
    path.write_bytes("# café\nclusters=a,b\n".encode())
    props = load_properties(path)
    assert props.path == str(path)
    assert props.value("clusters") == "a,b"


def test_load_latin1_file_like_mm2(tmp_path: Path) -> None:
    path = tmp_path / "mm2.properties"
    path.write_bytes(b"name=caf\xe9\n")  # not valid UTF-8; MM2 itself reads ISO-8859-1
    assert load_properties(path).value("name") == "café"


def test_load_strips_utf8_bom(tmp_path: Path) -> None:
    path = tmp_path / "mm2.properties"
    path.write_bytes(b"\xef\xbb\xbfclusters=a\n")
    assert load_properties(path).value("clusters") == "a"


def test_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "nope.properties"
    with pytest.raises(ConfigError) as info:
        load_properties(path)
    assert str(info.value) == f"{path}: file not found"


def test_directory(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="is a directory"):
        load_properties(tmp_path)


def test_binary_file_is_refused_with_its_line(tmp_path: Path) -> None:
    path = tmp_path / "keystore.jks"
    path.write_bytes(b"a=1\nb=2\n\xfe\xed\xfe\xed\x00\x00\x00\x02")
    with pytest.raises(ConfigError) as info:
        load_properties(path)
    assert info.value.line == 3
    assert "NUL bytes" in str(info.value)
