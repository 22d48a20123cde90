"""Worker version parsing and the KIP-875 feature thresholds.

``GET /`` reports the version of the Kafka jars the worker runs, and vendors decorate it: Apache prints
``3.9.2``, Confluent Platform prints its *own* release number with a ``-ccs`` (community) or ``-ce``
(enterprise) suffix, e.g. ``7.6.0-ccs``, Red Hat prints ``3.6.0.redhat-00005``. Comparing a Confluent
number with an Apache threshold would be wrong (``7.4.0-ccs`` is Apache Kafka 3.4, which has no
``/stop``), so feature checks run on the *Apache Kafka equivalent* computed here.

Thresholds, as read from Apache Kafka's ``ConnectorsResource`` and KIP-875:

- ``PUT /connectors/{c}/stop`` and ``GET /connectors/{c}/offsets`` shipped in 3.5;
- ``PATCH`` and ``DELETE /connectors/{c}/offsets`` shipped in 3.6.
"""

from __future__ import annotations

import re

Version = tuple[int, int, int]

STOP_SINCE: Version = (3, 5, 0)
OFFSETS_READ_SINCE: Version = (3, 5, 0)
OFFSETS_ALTER_SINCE: Version = (3, 6, 0)

_NUMBERS = re.compile(r"^\s*v?(\d+)(?:\.(\d+))?(?:\.(\d+))?(.*)$", re.IGNORECASE)
# Confluent Platform builds of Kafka: "7.6.0-ccs", "7.6.0-ce", sometimes with a build suffix after it.
_CONFLUENT_SUFFIX = re.compile(r"^[-.]?(ccs|ce)(?:\b|[-.])", re.IGNORECASE)


def parse_version(text: str) -> Version | None:
    """Return the leading ``major.minor.patch`` of a version string, or None when there is none.

    Vendor suffixes after the third number are ignored rather than rejected, because an operator's
    worker should never make the tool crash just for reporting an unusual build string.
    """
    match = _NUMBERS.match(text or "")
    if match is None:
        return None
    major, minor, patch = (int(part) if part else 0 for part in match.group(1, 2, 3))
    return (major, minor, patch)


def is_confluent_platform(text: str) -> bool:
    """True when the string is a Confluent Platform release number (``-ccs``/``-ce``), not Apache's."""
    match = _NUMBERS.match(text or "")
    return bool(match and _CONFLUENT_SUFFIX.match(match.group(4)))


def apache_kafka_version(text: str) -> Version | None:
    """The Apache Kafka release a worker's version string corresponds to, or None if unknown.

    Confluent Platform numbers are mapped with Confluent's published interoperability table:
    CP 5.x = AK 2.x, CP 6.0-6.2 = AK 2.6-2.8, CP 7.x = AK 3.x, CP 8.x = AK 4.x. Older CP releases
    predate every feature this client checks, so they map to (0, 0, 0).
    """
    parsed = parse_version(text)
    if parsed is None or not is_confluent_platform(text):
        return parsed
    major, minor, patch = parsed
    if major == 5:
        return (2, minor, patch)
    if major == 6:
        return (2, minor + 6, patch)
    if major >= 7:
        return (major - 4, minor, patch)
    return (0, 0, 0)


def at_least(version: Version | None, threshold: Version) -> bool:
    """False for an unknown version, so a caller never promises a feature it cannot vouch for."""
    return version is not None and version >= threshold
