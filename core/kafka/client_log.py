"""Where librdkafka's own log lines go: the ``mm2ctl.librdkafka`` logger.

librdkafka logs through the ``logger`` of each client's configuration. Its lines describe the library's own
work: a partition read below its log start ("offset reset … Offset out of range", which the reader handles),
a group coordinator still loading ("retrying"), a connection the client re-opens. mm2ctl handles each of them,
and a user can act on none, so every client mm2ctl builds logs to this one logger, which the CLI sends to the
command's log file, and to stderr only with ``-v`` (``mm2ctl.cli.run_log``). mm2ctl's own lines use other
loggers and are not affected.
"""

from __future__ import annotations

import logging

#: The logger every confluent-kafka client mm2ctl builds passes to librdkafka (its ``logger`` setting).
LIBRDKAFKA_LOGGER = "mm2ctl.librdkafka"

librdkafka_log = logging.getLogger(LIBRDKAFKA_LOGGER)

__all__ = ["LIBRDKAFKA_LOGGER", "librdkafka_log"]
