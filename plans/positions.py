"""Where a position lies on the other cluster lives in ``core.positions`` (``inspect --exact`` asks it too, and
sits below the plans); the names the planners and the drill import from here are re-exported."""

from __future__ import annotations

from mm2ctl.core.positions import Fallback, Sides, locate

__all__ = ["Fallback", "Sides", "locate"]
