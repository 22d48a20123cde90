"""Flow names are parsed in one place (``mm2ctl.core.config.flows``), and a malformed one is a ConfigError (exit 3)."""

from __future__ import annotations

import pytest

from mm2ctl.core.config.flows import Flow, is_cluster_alias, parse_flow
from mm2ctl.core.errors import ConfigError
from mm2ctl.core.exit_codes import ExitCode


@pytest.mark.parametrize(
    ("name", "flow"),
    [
        ("A->B", Flow("A", "B")),
        (" us-east -> us-west ", Flow("us-east", "us-west")),
        ("dc.1->dc_2", Flow("dc.1", "dc_2")),
    ],
)
def test_parse_flow_reads_source_and_target(name: str, flow: Flow) -> None:
    assert parse_flow(name) == flow
    assert str(parse_flow(name)) == f"{flow.source}->{flow.target}"


@pytest.mark.parametrize("name", ["A=>B", "A-B", "->B", "A->", "A->B->C", "A x->B", "A->A", ""])
def test_a_malformed_flow_is_a_config_error(name: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_flow(name)
    assert info.value.exit_code == ExitCode.CONFIG


@pytest.mark.parametrize(
    ("alias", "ok"), [("primary", True), ("a:b", True), ("", False), ("a b", False), ("a->b", False)]
)
def test_cluster_alias_rule(alias: str, ok: bool) -> None:
    assert is_cluster_alias(alias) is ok
