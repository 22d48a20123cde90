"""Kafka Connect REST client for mm2ctl (requests + tenacity).

Sits at the bottom of the import graph with ``mm2ctl.core``: it knows Connect's endpoints and payloads, never
plans. Errors are the core's ``ConnectError`` family; see :mod:`mm2ctl.connect_client.transport` for the mapping
and the single retry policy.
"""

from __future__ import annotations

from mm2ctl.connect_client.client import ConnectClient, connector_path
from mm2ctl.connect_client.factory import (
    CONNECT_URL_ENV,
    build_connect_client,
    connect_urls_from_env,
    split_urls,
)
from mm2ctl.connect_client.models import (
    STATES,
    ConnectorInfo,
    ConnectorOffset,
    ConnectorOffsets,
    ConnectorOverview,
    ConnectorState,
    ConnectorStatus,
    ServerInfo,
    TaskStatus,
)
from mm2ctl.connect_client.transport import (
    DEFAULT_TIMEOUT,
    LOGGER,
    ConnectTransport,
    RetryPolicy,
    Timeout,
    is_retryable,
)
from mm2ctl.connect_client.versions import apache_kafka_version, parse_version

__all__ = [
    "CONNECT_URL_ENV",
    "DEFAULT_TIMEOUT",
    "LOGGER",
    "STATES",
    "ConnectClient",
    "ConnectTransport",
    "ConnectorInfo",
    "ConnectorOffset",
    "ConnectorOffsets",
    "ConnectorOverview",
    "ConnectorState",
    "ConnectorStatus",
    "RetryPolicy",
    "ServerInfo",
    "TaskStatus",
    "Timeout",
    "apache_kafka_version",
    "build_connect_client",
    "connect_urls_from_env",
    "connector_path",
    "is_retryable",
    "parse_version",
    "split_urls",
]
