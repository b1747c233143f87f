"""CLI: `python -m debates.providers.local prepare | status` (`make local-model` runs `prepare`)."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from ..base import ProviderUnavailable
from .server import NOT_INSTALLED
from .weights import LocalWeights, Progress, resolve_model_path


def _progress_printer(label: str) -> Progress:
    """A progress line: redrawn in place on a terminal, one line per 10% in a log (make, CI)."""
    tty = sys.stdout.isatty()
    step = 1.0 if tty else 10.0
    state = {"last": -step, "start": time.monotonic()}

    def show(done: int, total: int) -> None:
        pct = 100.0 * done / total if total else 100.0
        if pct - state["last"] < step and done < total:
            return
        state["last"] = pct
        elapsed = time.monotonic() - state["start"]
        line = f"{label}: {done / 2**20:,.0f} / {total / 2**20:,.0f} MiB ({pct:3.0f}%) {elapsed:5.1f} s"
        sys.stdout.write(f"\r{line}" if tty else f"{line}\n")
        if tty and done >= total:
            sys.stdout.write("\n")
        sys.stdout.flush()

    return show


def _server_version() -> str | None:
    """xllamacpp's version from its metadata: importing it would load the 100 MB extension."""
    if importlib.util.find_spec("xllamacpp") is None:
        return None
    try:
        return importlib.metadata.version("xllamacpp")
    except importlib.metadata.PackageNotFoundError:
        return "installed, version unknown"


def main(argv: Sequence[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(
        prog="python -m debates.providers.local", description="Prepare the bundled local model."
    )
    parser.add_argument("command", choices=["prepare", "status"])
    parser.add_argument("--cache-dir", default=None, help="default: $AGORA_CACHE_DIR or ~/.cache/agora")
    args = parser.parse_args(argv)
    cache = args.cache_dir or os.environ.get("AGORA_CACHE_DIR") or Path.home() / ".cache" / "agora"
    weights = LocalWeights(cache)
    spec = os.environ.get("AGORA_LOCAL_MODEL", "").strip()
    server = _server_version()
    try:
        if args.command == "status":
            print(f"model server (xllamacpp): {server or 'not installed'}")
            if spec:
                print(f"model: AGORA_LOCAL_MODEL={spec}")
            else:
                print(f"bundled weights: {weights.path} ({'verified' if weights.is_ready() else 'not joined yet'})")
            return 0
        if spec:
            path = resolve_model_path(spec, cache)
            print(f"local model: {path} (AGORA_LOCAL_MODEL; the bundled weights are not used)")
        elif weights.is_ready():
            print(f"local model: {weights.path} (verified)")
        else:
            start = time.monotonic()
            weights.ensure(_progress_printer("joining and verifying the local model weights"))
            print(f"local model: {weights.path} (joined and verified in {time.monotonic() - start:.1f} s)")
    except ProviderUnavailable as exc:
        print(f"\nlocal model not ready: {exc}", file=sys.stderr)
        return 1
    if not server:
        print(f"warning: {NOT_INSTALLED}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
