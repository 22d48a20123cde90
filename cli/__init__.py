"""The ``mm2ctl`` command line: one module per command group, over the core; it parses, calls and renders."""

from __future__ import annotations

from mm2ctl.cli.main import app, main

__all__ = ["app", "main"]
