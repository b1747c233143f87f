"""The child process: llama.cpp's OpenAI-compatible server from xllamacpp, on one loopback port.

    python -m debates.providers.local.serve --model M.gguf --port P [--alias A] [--threads N]
        [--ctx N] [--parallel N] [--watch-stdin] [--reasoning-format deepseek|auto|none]

`LocalModelServer` starts this with `--watch-stdin` and the bearer key in AGORA_LOCAL_SERVER_KEY
(the environment, not argv: any local user can read another's command line in `ps`, not its
environment). Run by hand it serves without a key and stops on Ctrl-C.

It imports only xllamacpp and the standard library: the package's `__init__` loads the rest
lazily, so the child does not pay for the openai SDK it never uses.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from collections.abc import Sequence

KEY_ENV = "AGORA_LOCAL_SERVER_KEY"

# llama.cpp's host-memory prompt cache keeps the KV state of earlier prompts so a speaker's next
# turn can resume it; its default limit is 8 GiB, which next to the web process on a 24 GiB
# machine is too much for a cache. 256 MiB holds a few full 4096-token contexts of this model.
CACHE_RAM_MIB = 256

# llama.cpp's --reasoning-format: "deepseek" takes a thinking model's `<think>...</think>` out of
# the content and streams it as `delta.reasoning_content` (what the client shows apart and never
# stores as the speech); "none" leaves it in the content (the client splits the tags itself).
# Set here, not left to the default, which has changed between llama.cpp versions.
REASONING_FORMATS = ("deepseek", "auto", "none")


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m debates.providers.local.serve", description=__doc__.split("\n")[0])
    parser.add_argument("--model", required=True, help="a GGUF file")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--host", default="127.0.0.1", help="default 127.0.0.1; the key is the only other guard")
    parser.add_argument("--alias", default="", help="the model id clients send (default: the file name)")
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--ctx", type=int, default=4096, help="context window in tokens, shared by the slots")
    parser.add_argument("--parallel", type=int, default=1, help="requests decoded together (slots)")
    parser.add_argument("--watch-stdin", action="store_true", help="exit when stdin reaches EOF (the parent died)")
    parser.add_argument(
        "--reasoning-format",
        choices=REASONING_FORMATS,
        default="deepseek",
        help="where a thinking model's thinking goes (default deepseek: `reasoning_content`, apart from the answer)",
    )
    return parser.parse_args(argv)


def build_params(args: argparse.Namespace, api_key: str = ""):
    import xllamacpp

    params = xllamacpp.CommonParams()
    params.model.path = args.model
    if args.alias:
        params.model_alias = {args.alias}
    params.hostnames = [args.host]
    params.port = args.port
    params.api_keys = [api_key] if api_key else []
    params.n_ctx = args.ctx * args.parallel  # llama.cpp splits n_ctx between the slots
    params.n_parallel = args.parallel
    params.cpuparams.n_threads = args.threads
    params.cpuparams_batch.n_threads = args.threads
    params.offline = True  # never reach a model hub, whatever the model options say
    params.cache_ram_mib = CACHE_RAM_MIB
    params.endpoint_slots = False  # would list every prompt in the cache; nothing here uses it
    params.ui = False
    formats = getattr(xllamacpp, "common_reasoning_format", None)
    if formats is not None:
        params.reasoning_format = getattr(formats, f"COMMON_REASONING_FORMAT_{args.reasoning_format.upper()}")
    return params


def _exit_on_eof() -> None:
    """The parent holds the other end of stdin: EOF means it exited, even by SIGKILL where its
    atexit never ran, so the 2 GB server goes with it instead of lingering."""
    try:
        while sys.stdin.buffer.read(65536):
            pass
    except Exception:  # a broken pipe means the same as EOF
        pass
    os._exit(0)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.watch_stdin:
        # Started before the model loads, so a parent that dies during the load is noticed too.
        threading.Thread(target=_exit_on_eof, name="parent-watch", daemon=True).start()
    api_key = os.environ.pop(KEY_ENV, "")
    import xllamacpp

    started = time.monotonic()
    try:
        server = xllamacpp.Server(build_params(args, api_key))
    except RuntimeError as exc:  # llama.cpp logged the cause just above
        print(f"agora: the model server did not start: {exc}", file=sys.stderr, flush=True)
        os._exit(1)  # not a return: interpreter shutdown would trip over the thread reading stdin
    print(
        f"agora: serving {args.model} at {server.listening_address} "
        f"(loaded in {time.monotonic() - started:.1f} s, xllamacpp {xllamacpp.__version__})",
        file=sys.stderr,
        flush=True,
    )
    try:
        threading.Event().wait()  # the server runs on its own threads; this thread only keeps it alive
    except KeyboardInterrupt:
        pass
    os._exit(0)  # skips the server's teardown, which has nothing to save


if __name__ == "__main__":
    sys.exit(main())
