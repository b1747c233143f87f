"""The fake OpenAI server in a process of its own, so its token clock never waits on the GIL of
the process being measured (the app, or the benchmark's WebSocket clients).

    proc = FakeProcess(token_delay=0.03, reply_tokens=120).start()
    proc.base_url                      # http://127.0.0.1:PORT/v1
    records = proc.dump()              # every chat request so far (see `_record`), then
    proc.reset(); proc.stop()

Replies: `reply_text(body, n)` — the server's deterministic default reply padded to `n` tokens
with sentences of the same pool, closed by the two field lines the formats read (a moved position
and a summary), so a duel never stops early and every format runs its full course.

Times are `time.monotonic()` (CLOCK_MONOTONIC, system-wide on Linux): comparable across processes.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from testkit.fake_openai import ZH_SENTENCES  # noqa: E402

# The fake server's own sentences, plus three that duel-length replies need for variety.
ZH = [*ZH_SENTENCES, "经论里对此早有分辨。", "修行要落在日用之中。", "先把概念分清楚再谈取舍。"]


def reply_text(body: dict, tokens: int) -> str:
    from testkit.fake_openai import default_reply, tokenize

    head = default_reply(body)
    if tokens <= 0:
        return head
    seed = hashlib.sha256(json.dumps(body.get("messages") or [], sort_keys=True, ensure_ascii=False).encode()).digest()
    parts, i = [head], 0
    while len(tokenize("".join(parts))) < tokens:
        parts.append(ZH[seed[i % len(seed)] % len(ZH)])
        i += 1
    text = "".join(tokenize("".join(parts))[:tokens])
    return f"{text}\n立场变化：松动（基准测试）\n小结：{head[:40]}"


def _record(r) -> dict:
    return {
        "index": r.index,
        "started": r.started,
        "finished": r.finished,
        "status": r.status,
        "outcome": r.outcome,
        "messages": r.messages,
        "tokens": r.tokens,
        "token_times": r.token_times,
    }


def serve(token_delay: float, reply_tokens: int) -> None:
    from testkit.fake_openai import FakeOpenAIServer

    settings = {"tokens": reply_tokens}
    server = FakeOpenAIServer(lambda body: reply_text(body, settings["tokens"]), token_delay=token_delay)
    server.start()
    print(f"READY {server.base_url}", flush=True)
    for line in sys.stdin:
        command, _, arg = line.strip().partition(" ")
        if command == "dump":
            records = [_record(r) for r in server.chat_requests]
            Path(arg).write_text(json.dumps(records, ensure_ascii=False))
        elif command == "reset":
            server.reset()
        elif command == "set":
            delay, tokens = arg.split()
            server.token_delay = float(delay)
            settings["tokens"] = int(tokens)
        print("OK", flush=True)
        if command == "quit":
            break
    server.stop()


class FakeProcess:
    def __init__(self, token_delay: float, reply_tokens: int, workdir: Path):
        self.token_delay = token_delay
        self.reply_tokens = reply_tokens
        self.workdir = workdir
        self.process: subprocess.Popen | None = None
        self.base_url = ""
        self._dumps = 0

    def start(self) -> FakeProcess:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "bench.fakeproc", str(self.token_delay), str(self.reply_tokens)],
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        line = self.process.stdout.readline().split()
        if not line or line[0] != "READY":
            raise RuntimeError(f"fake server did not start: {line}")
        self.base_url = line[1]
        return self

    def _ask(self, command: str) -> None:
        assert self.process and self.process.stdin and self.process.stdout
        self.process.stdin.write(command + "\n")
        self.process.stdin.flush()
        answer = self.process.stdout.readline().strip()
        if answer != "OK":
            raise RuntimeError(f"fake server answered {answer!r} to {command!r}")

    def dump(self) -> list[dict]:
        self._dumps += 1
        path = self.workdir / f"fake-requests-{self._dumps}.json"
        self._ask(f"dump {path}")
        return json.loads(path.read_text())

    def reset(self) -> None:
        self._ask("reset")

    def configure(self, token_delay: float, reply_tokens: int) -> None:
        self._ask(f"set {token_delay} {reply_tokens}")

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            try:
                self._ask("quit")
            except (RuntimeError, BrokenPipeError, OSError):
                pass
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("token_delay", type=float)
    parser.add_argument("reply_tokens", type=int)
    args = parser.parse_args()
    serve(args.token_delay, args.reply_tokens)
