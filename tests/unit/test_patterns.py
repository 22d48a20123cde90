"""``--groups`` and ``--topics``: one rule (whole names), one owner, one help text in every command."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import typer

from mm2ctl.cli.main import app
from mm2ctl.core.errors import ConfigError
from mm2ctl.core.patterns import NameRegex
from mm2ctl.inspector.selection import Selection

NAMES = ("billing", "billing-v2", "old-billing", "payments")


@pytest.mark.parametrize(
    ("expression", "selected"),
    [
        ("billing", {"billing"}),
        ("billing.*", {"billing", "billing-v2"}),
        (".*billing", {"billing", "old-billing"}),
        (".*billing.*", {"billing", "billing-v2", "old-billing"}),
        ("^billing$", {"billing"}),
        ("bill", set()),
        ("billing|payments", {"billing", "payments"}),
    ],
)
def test_a_regex_selects_whole_names(expression: str, selected: set[str]) -> None:
    assert {n for n in NAMES if NameRegex(expression).matches(n)} == selected
    selection = Selection(groups=expression, topics=expression)
    assert {n for n in NAMES if selection.group_ok(n)} == selected
    assert {n for n in NAMES if selection.topic_ok(n)} == selected


def test_no_regex_selects_every_name() -> None:
    assert all(NameRegex(None).matches(n) for n in NAMES)


@pytest.mark.parametrize("option", ["--groups", "--topics"])
def test_a_regex_that_does_not_compile_names_its_option(option: str) -> None:
    with pytest.raises(ConfigError, match=rf"^{option} '\(billing' is not a valid regular expression"):
        NameRegex("(billing", option)


def _commands(group: Any, prefix: str = "") -> Iterator[tuple[str, Any]]:
    """Every leaf command of typer's command tree, by its full name (``plan failover``)."""
    for name, command in group.commands.items():
        if hasattr(command, "commands"):
            yield from _commands(command, f"{prefix}{name} ")
        else:
            yield f"{prefix}{name}", command


@pytest.mark.parametrize("option", ["--groups", "--topics"])
def test_every_command_that_takes_the_option_explains_it_the_same_way(option: str) -> None:
    helps = {
        name: param.help
        for name, command in _commands(typer.main.get_command(app))
        for param in command.params
        if option in getattr(param, "opts", ())
    }
    assert {"inspect", "exporter", "report", "plan failover", "plan failback"} <= set(helps)
    assert len(set(helps.values())) == 1, helps
    assert "whole name" in next(iter(helps.values()))
