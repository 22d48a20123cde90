"""mm2ctl: inspect, plan and repair MirrorMaker 2 offsets.

The package is laid out by what each part owns, bottom to top (an import only ever points down this list):

- ``mm2ctl.core`` and ``mm2ctl.connect_client``: MM2's configuration, topic naming, record codecs, the Kafka
  admin facade, the error tree; the Kafka Connect REST client;
- ``mm2ctl.inspector``, ``mm2ctl.plans``, ``mm2ctl.lab``: the Spark inspection; the plan model and the
  planners; the local Kafka + Connect + MM2 lab;
- ``mm2ctl.remediate``: apply, resume and rollback of a plan, with its journal and lock;
- ``mm2ctl.drill``: the failover drill and the demo;
- ``mm2ctl.cli``: the ``mm2ctl`` command line.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("mm2ctl")
except PackageNotFoundError:  # imported from a tree that was never installed
    __version__ = "0+unknown"

__all__ = ["__version__"]
