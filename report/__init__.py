"""``mm2ctl report``: an inspection as one self-contained HTML page, for the people who act on it.

The page is made from data, not from the engine: the group-partition and replicated-partition rows as Arrow
tables (``inputs``: read from a saved inspection, or handed over by ``inspection_run``, the one module that
runs the engine), ``config show``'s summary of the setup, and when it ran. ``readiness`` is the one rule for
"ready to cut over"; ``digest`` reduces the rows to what the page shows (aggregating above a row limit);
``charts`` makes the Plotly figures; ``page`` writes the HTML with everything inline.

Nothing here but ``inspection_run`` imports Spark, so a saved inspection becomes a report without a JVM.
Code inside mm2ctl imports each name from the module that defines it.
"""

from __future__ import annotations

from mm2ctl.report.inputs import InspectionTables, read_saved
from mm2ctl.report.page import RenderedReport, render, write_report
from mm2ctl.report.readiness import Readiness, assess

__all__ = ["InspectionTables", "Readiness", "RenderedReport", "assess", "read_saved", "render", "write_report"]
