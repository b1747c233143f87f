"""A manifest as text: strict JSON decoding and the one serialisation Agora writes."""

from __future__ import annotations

import json
from typing import Any

from personas.manifest.errors import ROOT, ManifestError, ManifestInvalid

MAX_MANIFEST_BYTES = 5 * 1024 * 1024


class _JSONRefusal(ValueError):
    """Raised from json hooks; JSONDecodeError would carry a misleading position."""


def _refuse_constant(name: str):
    raise _JSONRefusal(f"{name} is not valid JSON")


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict:
    # json.loads keeps the last of two equal keys silently; that would lose data without a word.
    result = {}
    for key, value in pairs:
        if key in result:
            raise _JSONRefusal(f'duplicate key "{key}" in one object')
        result[key] = value
    return result


def parse_manifest(text: str | bytes) -> Any:
    """Decode a manifest document; raise ManifestInvalid (path "$") on anything that is not JSON."""
    raw = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text
    if len(raw) > MAX_MANIFEST_BYTES:
        raise ManifestInvalid([_root(f"manifest is {len(raw)} bytes; the limit is {MAX_MANIFEST_BYTES}")])
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise ManifestInvalid([_root(f"not UTF-8 text (bad byte at offset {exc.start})")]) from exc
    try:
        return json.loads(text, parse_constant=_refuse_constant, object_pairs_hook=_no_duplicate_keys)
    except json.JSONDecodeError as exc:
        message = f"malformed JSON at line {exc.lineno} column {exc.colno}: {exc.msg}"
        raise ManifestInvalid([_root(message)]) from exc
    except _JSONRefusal as exc:
        raise ManifestInvalid([_root(f"malformed JSON: {exc}")]) from exc
    except RecursionError as exc:
        raise ManifestInvalid([_root("malformed JSON: nested too deeply")]) from exc


def _root(message: str) -> ManifestError:
    return ManifestError(ROOT, message)


def dump_manifest(data: dict) -> str:
    """The one serialisation Agora writes: UTF-8 text, two-space indent, final newline."""
    return json.dumps(data, ensure_ascii=False, indent=2) + "\n"
