"""mm2ctl: inspect, plan and repair MirrorMaker 2 offsets.

The package is laid out by what each part owns, top to bottom; an import only ever points down this drawing,
never to a part beside it (docs/design.md, "Parts", draws the layers inside ``core`` and ``inspector``):

    cli              the ``mm2ctl`` command line: the only part that prints
    drill  report    the failover drill and the demo; the HTML report of an inspection
    remediate        apply, resume and rollback of a plan, with its journal and lock
    plans  lab       the plan model and the planners; the local Kafka + Connect + MM2 lab
    inspector        the Spark inspection
    connect_client   the Kafka Connect REST client
    core             MM2's configuration, client security, Kafka I/O, Java programs, the translation rule, errors
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("mm2ctl")
except PackageNotFoundError:  # imported from a tree that was never installed
    __version__ = "0+unknown"

__all__ = ["__version__"]
