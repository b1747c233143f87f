"""What a GGUF file says of itself: its chat template, read from the header without loading the
model, to tell whether the model thinks before it answers (`thinks`).

The GGUF header (versions 2 and 3): magic `GGUF`, a uint32 version, uint64 tensor and key-value
counts, then the key-values: a string key (uint64 length + UTF-8), a uint32 type and the value.
Arrays (the vocabulary: 150,000 strings) are skipped by their lengths, never read whole.
Standard library only: the child process imports this package too.
"""

from __future__ import annotations

import os
import struct
from typing import BinaryIO

TEMPLATE_KEY = "tokenizer.chat_template"
_FIXED = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}  # type -> bytes
_STRING, _ARRAY = 8, 9
_MAX_STRING = 4 * 1024 * 1024  # no key or template is this long: a corrupt or foreign file

# A chat template that handles thinking names it: `<think>` (DeepSeek-R1 and its distills, QwQ,
# Qwen3), `reasoning_content` (templates that keep the thinking of earlier turns apart),
# `enable_thinking` (Qwen3's switch).
THINKING_MARKS = ("<think>", "</think>", "reasoning_content", "enable_thinking")


class _Corrupt(Exception):
    pass


def _read(f: BinaryIO, size: int) -> bytes:
    data = f.read(size)
    if len(data) != size:
        raise _Corrupt
    return data


def _string(f: BinaryIO, *, keep: bool = True) -> str:
    (size,) = struct.unpack("<Q", _read(f, 8))
    if size > _MAX_STRING:
        raise _Corrupt
    if not keep:
        f.seek(size, os.SEEK_CUR)
        return ""
    return _read(f, size).decode("utf-8", errors="replace")


def _skip(f: BinaryIO, kind: int) -> None:
    if kind in _FIXED:
        f.seek(_FIXED[kind], os.SEEK_CUR)
    elif kind == _STRING:
        _string(f, keep=False)
    elif kind == _ARRAY:
        item, count = struct.unpack("<IQ", _read(f, 12))
        if item in _FIXED:
            f.seek(_FIXED[item] * count, os.SEEK_CUR)
        else:
            for _ in range(count):
                _skip(f, item)
    else:
        raise _Corrupt


def chat_template(path: str | os.PathLike[str]) -> str | None:
    """The GGUF's chat template, or None (no template, not a GGUF, or unreadable)."""
    try:
        with open(path, "rb") as f:
            if _read(f, 4) != b"GGUF":
                return None
            (version,) = struct.unpack("<I", _read(f, 4))
            if version < 2:
                return None
            _tensors, pairs = struct.unpack("<QQ", _read(f, 16))
            for _ in range(pairs):
                key = _string(f)
                (kind,) = struct.unpack("<I", _read(f, 4))
                if key == TEMPLATE_KEY and kind == _STRING:
                    return _string(f)
                _skip(f, kind)
    except (OSError, struct.error, _Corrupt):
        return None
    return None


def thinks(path: str | os.PathLike[str]) -> bool:
    """Whether the model's chat template handles thinking (see THINKING_MARKS)."""
    template = chat_template(path) or ""
    return any(mark in template for mark in THINKING_MARKS)
