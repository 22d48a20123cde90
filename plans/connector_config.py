"""A connector config as a plan saves it (secrets redacted), and how apply gets the secrets back.

A plan deletes and re-creates connectors, so it must hold their configs; it must never hold their secrets.
``ConnectorConfig`` redacts on construction, so no code path can put a secret into a plan by forgetting to.
Which values are secret is decided by :mod:`mm2ctl.core.security.redaction`. How apply refills them is chosen per
``connector_create`` step (``SecretSource``) and done by ``unredact_config``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from types import MappingProxyType

from mm2ctl.core.errors import PlanError, PreconditionError
from mm2ctl.core.security.redaction import REDACTED, redact_json
from mm2ctl.plans.validation import check_str, set_field


class SecretSource(StrEnum):
    """Where apply gets the values a ``connector_create`` config had redacted.

    - ``live_connector``: read ``GET /connectors/{name}/config`` of the connector named in the step's
      ``ConnectorCreate.secrets_from`` at the start of apply, *before the first write* (i.e. before a
      preceding ``connector_delete`` removes it), and keep the values in memory only. A resumed apply whose
      connector is already gone cannot use this source and must be given ``operator`` secrets.
    - ``operator``: the operator supplies them at apply time (``mm2ctl apply --secrets-file``, a properties
      file keyed by config key).
    """

    LIVE_CONNECTOR = "live_connector"
    OPERATOR = "operator"


@dataclass(frozen=True, slots=True, kw_only=True)
class ConnectorConfig:
    """A connector config as saved in a plan: string values, secrets replaced by ``REDACTED``.

    Redaction happens here, on construction, so no code path can put a secret into a plan by forgetting to
    call it. ``redacted_keys`` lists what apply must fill back in (``unredact_config``); a value that only
    references a secret through a Connect config provider (``${file:...}``) is kept as it is.
    """

    values: Mapping[str, str]
    redacted_keys: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.values, Mapping):
            raise PlanError("values: expected a mapping of config key to string")
        for k, v in self.values.items():
            check_str(k, "values key")
            if not isinstance(v, str):
                raise PlanError(f"values.{k}: expected a string (Connect configs are), got {type(v).__name__}")
        clean: dict[str, str] = redact_json(dict(self.values))
        redacted = set(self.redacted_keys) | {k for k, v in clean.items() if v == REDACTED}
        unknown = redacted - set(clean)
        if unknown:
            raise PlanError(f"redacted_keys: {sorted(unknown)} are not keys of the config")
        for k in redacted:
            clean[k] = REDACTED
        set_field(self, "values", MappingProxyType(dict(sorted(clean.items()))))
        set_field(self, "redacted_keys", tuple(sorted(redacted)))


def unredact_config(config: ConnectorConfig, secrets: Mapping[str, str]) -> dict[str, str]:
    """The config to send to Connect: ``config`` with each redacted key filled from ``secrets``.

    ``secrets`` comes from the step's ``SecretSource`` (the live connector read before the first write, or
    the operator). A missing value raises ``PreconditionError`` naming the keys (never values): posting the
    marker would create a connector that fails to authenticate.
    """
    missing = [k for k in config.redacted_keys if k not in secrets or secrets[k] == REDACTED]
    if missing:
        raise PreconditionError(
            f"secret config values are not available for keys {missing}; supply them (--secrets-file) "
            "or read them from the live connector before it is deleted"
        )
    out = dict(config.values)
    for k in config.redacted_keys:
        out[k] = secrets[k]
    return out
