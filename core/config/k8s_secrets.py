"""Kubernetes Secrets as ``--secrets PATH`` gives them, for the Secret references of a KafkaMirrorMaker2 resource.

A resource names its credentials (``passwordSecret``, ``certificateAndKey``, ``trustedCertificates``,
``clientSecret``) by Secret name and key; the values live elsewhere. Users hand mm2ctl the Secrets the way
they already have them:

* a **file of Secret manifests**, as ``kubectl get secret NAME -o yaml`` prints them: one or more YAML
  documents of ``kind: Secret`` (or a ``kind: List`` of them), with base64 ``data`` and/or plain
  ``stringData``;
* a **folder** laid out ``<secretName>/<key>``, as Kubernetes mounts a Secret volume (the ``..data`` links a
  mount keeps beside the keys are skipped).

Values are secrets: they are never in a message, a repr or a log. A missing Secret or key is an error naming
both, and where it was looked for.
"""

from __future__ import annotations

import base64
import binascii
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from mm2ctl.core.errors import ConfigError


class SecretLookupError(LookupError):
    """A Secret or one of its keys is not in the store; the message names both, never a value."""


@dataclass(frozen=True)
class SecretStore:
    """Secret name -> key -> value, read from ``--secrets PATH``."""

    path: str
    secrets: Mapping[str, Mapping[str, str]] = field(repr=False)

    def get(self, name: str, key: str) -> str:
        """The value of ``key`` in Secret ``name``; :class:`SecretLookupError` naming both when missing."""
        secret = self.secrets.get(name)
        if secret is None:
            raise SecretLookupError(f"Secret {name!r} is not in --secrets {self.path}")
        if key not in secret:
            keys = ", ".join(sorted(secret)) or "none"
            raise SecretLookupError(f"Secret {name!r} has no key {key!r} in --secrets {self.path} (its keys: {keys})")
        return secret[key]

    def keys(self, name: str) -> list[str]:
        """The keys of Secret ``name``, sorted; :class:`SecretLookupError` when there is no such Secret."""
        secret = self.secrets.get(name)
        if secret is None:
            raise SecretLookupError(f"Secret {name!r} is not in --secrets {self.path}")
        return sorted(secret)


def _from_folder(folder: Path) -> dict[str, dict[str, str]]:
    out: dict[str, dict[str, str]] = {}
    for secret_dir in sorted(p for p in folder.iterdir() if p.is_dir() and not p.name.startswith("..")):
        keys: dict[str, str] = {}
        for item in sorted(p for p in secret_dir.iterdir() if p.is_file() and not p.name.startswith("..")):
            try:
                keys[item.name] = item.read_bytes().decode("utf-8")
            except UnicodeDecodeError as exc:
                raise ConfigError(f"--secrets: {item} is not UTF-8 text", path=str(folder)) from exc
            except OSError as exc:
                raise ConfigError(f"--secrets: cannot read {item}: {exc.strerror or exc}", path=str(folder)) from exc
        out[secret_dir.name] = keys
    return out


def _documents(docs: list[Any]) -> Iterator[Mapping[str, Any]]:
    for doc in docs:
        if doc is None:
            continue
        if isinstance(doc, Mapping) and doc.get("kind") == "List" and isinstance(doc.get("items"), list):
            yield from _documents(doc["items"])
        elif isinstance(doc, Mapping):
            yield doc


def parse_secret_manifests(text: str, *, path: str) -> dict[str, dict[str, str]]:
    """Secret name -> key -> value from YAML Secret manifests (``data`` base64, ``stringData`` plain)."""
    try:
        docs = list(yaml.safe_load_all(text))
    except yaml.YAMLError as exc:
        raise ConfigError(f"--secrets: not YAML Secret manifests: {exc}", path=path) from None
    out: dict[str, dict[str, str]] = {}
    for i, doc in enumerate(_documents(docs)):
        if doc.get("kind") != "Secret":
            raise ConfigError(f"kind: document {i + 1} is a {doc.get('kind')!r}, not a Secret", path=path)
        metadata = doc.get("metadata")
        name = metadata.get("name") if isinstance(metadata, Mapping) else None
        if not isinstance(name, str) or not name:
            raise ConfigError(f"metadata.name: Secret {i + 1} has no name", path=path)
        keys: dict[str, str] = {}
        data = doc.get("data") or {}
        if not isinstance(data, Mapping):
            raise ConfigError(f"data: Secret {name!r}: expected a mapping of key to base64 value", path=path)
        for key, value in data.items():
            try:
                keys[str(key)] = base64.b64decode(str(value), validate=True).decode("utf-8")
            except (binascii.Error, ValueError, UnicodeDecodeError):
                raise ConfigError(f"data.{key}: Secret {name!r}: not base64 of UTF-8 text", path=path) from None
        string_data = doc.get("stringData") or {}
        if not isinstance(string_data, Mapping):
            raise ConfigError(f"stringData: Secret {name!r}: expected a mapping of key to value", path=path)
        keys.update({str(k): str(v) for k, v in string_data.items()})  # Kubernetes: stringData wins
        out[name] = keys
    return out


def load_secrets(path: str | os.PathLike[str]) -> SecretStore:
    """Read ``--secrets PATH``: a folder of ``<secretName>/<key>`` files, or a file of Secret manifests."""
    name = os.fspath(path)
    target = Path(name)
    if target.is_dir():
        return SecretStore(name, _from_folder(target))
    try:
        text = target.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError("--secrets: no such file or folder", path=name) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"--secrets: cannot read: {exc}", path=name) from None
    return SecretStore(name, parse_secret_manifests(text, path=name))
