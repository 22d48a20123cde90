"""The timestamp fallback lives in ``core.timestamp_lookup`` (``core.positions`` tries it); the name the
planners import from here is re-exported."""

from __future__ import annotations

from mm2ctl.core.timestamp_lookup import by_timestamp

__all__ = ["by_timestamp"]
