"""The translation rule lives in ``core.translation`` (``inspect`` applies it too, and sits below the plans);
the names the planners and the drill import from here are re-exported."""

from __future__ import annotations

from mm2ctl.core.translation import (
    DEFAULT_WINDOW,
    Bounds,
    Sync,
    Translation,
    inverted,
    newest_sync_at_or_below,
    verified,
)

__all__ = ["DEFAULT_WINDOW", "Bounds", "Sync", "Translation", "inverted", "newest_sync_at_or_below", "verified"]
