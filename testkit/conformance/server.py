"""Replay a provider family's stream, as its public API reference documents it, over real HTTP.

Each family has one transcript in this folder (`<family>.json`, written from the family's public
API reference in our own words): the response headers, the exact chunk shapes in order (role-only
first chunks, `prompt_filter_results` chunks with empty `choices`, SSE comment lines, where the
usage comes, `finish_reason`, `[DONE]`), the usage numbers, where thinking arrives
(`delta.reasoning_content`, `delta.reasoning`, `<think>` in the content, or nowhere), and the
request shapes the family refuses with the error body it documents (OpenAI's reasoning models
answer `400 unsupported_parameter` to `max_tokens`, for instance).

The transcripts are templates. What a speaker says is filled in per request with a speech the
duel format accepts (its 正文 / 立场变化 / 小结 parts, the speaker's own leads; the closing
synthesis's four parts), and the thinking with text that carries a marker (`THINKING_MARKER`),
so a test can look for any thinking that leaked into stored text, exports or later prompts.

    with ReplayServer("deepseek-reasoner") as server:
        ... OPENAI_BASE_URL=server.base_url, AGORA_MODEL=server.transcript["model"] ...
        server.exchanges[0].answer, .thinking, .status, .body

Run one standalone: `python -m testkit.conformance.server deepseek-reasoner --port 8012`.
"""

from __future__ import annotations

import argparse
import copy
import json
import re
import threading
import time
import uuid
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

from testkit.loopback import LoopbackServer

HERE = Path(__file__).resolve().parent
THINKING_MARKER = "scratchpad-7f3a"


def families() -> list[str]:
    """Every family with a transcript, sorted."""
    return sorted(p.stem for p in HERE.glob("*.json"))


def load(family: str) -> dict[str, Any]:
    return json.loads((HERE / f"{family}.json").read_text(encoding="utf-8"))


# -- what the speakers say ------------------------------------------------------------------------

_SPEAKER = re.compile(r"你代表「([^」]+)」")


def _all_text(body: dict[str, Any]) -> str:
    parts = []
    for message in body.get("messages") or []:
        content = message.get("content")
        if isinstance(content, list):
            content = " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
        parts.append(str(content or ""))
    return "\n".join(parts)


def answer_for(body: dict[str, Any]) -> str:
    """A reply the duel accepts: a speech in the speaker's own name, or the closing synthesis."""
    prompt = _all_text(body)
    speaker = _SPEAKER.search(prompt)
    if speaker:
        name = speaker.group(1)
        return (
            f"正文：作为{name}，我仍守本宗的立场：修行贵在当下用功，不假外求，"
            "《坛经·般若品》与本宗祖师的开示可为依据。对方摘要中的疑问值得回应，"
            "但它说的是入手的难易，不是究竟的高下，不足以动摇我的主张。\n"
            "立场变化：无，坚持原有立场\n"
            f"小结：依{name}之见，本宗所示之路更适合今日的修行人。"
        )
    if "中立记录者" in prompt:
        return (
            "双方主张：两位各守本宗，一方重自心当下的觉照，一方重信愿与持名的次第。\n"
            "分歧所在：分歧在于入手处与根器之论，而不在目标。\n"
            "可互相参照之处：两家都以止息妄念为要，可以彼此参照。\n"
            "小结：两条路目标相同，入手不同，各有所据。"
        )
    return "作为本场的一位发言者，我简短作答：此问可从两方面看，各有依据。"


def thinking_for(body: dict[str, Any], family: str) -> str:
    """What the model 'thought' before it answered: marked, so a leak can be found anywhere."""
    speaker = _SPEAKER.search(_all_text(body))
    who = speaker.group(1) if speaker else "记录者"
    return (
        f"〔{who}的草稿 {THINKING_MARKER} {family}〕先理清对方摘要的要点，"
        "再想从哪一部经引证；这段草稿只给自己看，不是发言。"
    )


def pieces(text: str, size: int) -> list[str]:
    """Fixed-size pieces: tags such as `<think>` fall across chunk boundaries, as they do on the wire."""
    return [text[i : i + size] for i in range(0, len(text), size)] if text else []


# -- what the family refuses ----------------------------------------------------------------------


def _fill(value: Any, mapping: dict[str, Any]) -> Any:
    """Copy `value`, replacing strings that are exactly a `$name` and `{name}` inside strings."""
    if isinstance(value, str):
        if value in mapping:
            return copy.deepcopy(mapping[value])
        for key, replacement in mapping.items():
            if key.startswith("{") and isinstance(replacement, (str, int, float)):
                value = value.replace(key, str(replacement))
        return value
    if isinstance(value, list):
        return [_fill(v, mapping) for v in value]
    if isinstance(value, dict):
        return {k: _fill(v, mapping) for k, v in value.items()}
    return value


def refusal(transcript: dict[str, Any], body: dict[str, Any]) -> tuple[int, Any, dict] | None:
    """(status, error body, the rule) for the first documented refusal this request meets."""
    for rule in transcript.get("request", {}).get("refuses", []):
        param, when = rule["param"], rule.get("when", "present")
        if param.startswith("messages[]."):
            key = param.split(".", 1)[1]
            hit = any(isinstance(m, dict) and key in m for m in body.get("messages") or [])
            value = ""
        else:
            present = body.get(param) is not None
            value = body.get(param)
            if when == "present":
                hit = present
            elif when == "not_equal":
                hit = present and value != rule["value"]
            elif when == "must_equal":
                hit = value != rule["value"]
            else:
                raise ValueError(f"unknown refusal kind {when!r}")
        if hit:
            shown = json.dumps(value, ensure_ascii=False) if not isinstance(value, str) else value
            return rule.get("status", 400), _fill(rule["body"], {"{value}": shown, "{param}": param}), rule
    return None


# -- what happened --------------------------------------------------------------------------------


@dataclass
class Exchange:
    """One request and what the replay server answered."""

    path: str
    body: dict[str, Any]
    headers: dict[str, str]
    status: int = 0
    answer: str = ""
    thinking: str = ""
    refused: str = ""  # the parameter whose refusal was sent
    raw: list[str] = field(default_factory=list)  # the SSE lines as sent

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list(self.body.get("messages") or [])


class ReplayServer:
    """A family's documented stream on 127.0.0.1 (a free port), any path ending in
    /chat/completions; a background thread serves it. See the module docstring."""

    def __init__(self, family: str, *, host: str = "127.0.0.1", port: int = 0) -> None:
        self.family = family
        self.transcript = load(family)
        self.exchanges: list[Exchange] = []
        self._lock = threading.Lock()
        replay = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):  # quiet
                pass

            def do_GET(self):  # noqa: N802 - the stdlib's name
                if self.path.rstrip("/").endswith("/models"):
                    payload = {"object": "list", "data": [{"id": replay.transcript["model"], "object": "model"}]}
                    return self._json(200, payload)
                return self._json(404, {"error": {"message": "not found", "type": "invalid_request_error"}})

            def do_POST(self):  # noqa: N802
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw or b"{}")
                except ValueError:
                    body = None
                exchange = Exchange(self.path, body if isinstance(body, dict) else {}, dict(self.headers.items()))
                with replay._lock:
                    replay.exchanges.append(exchange)
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    exchange.status = 404
                    missing = {"error": {"message": f"no route {self.path}", "type": "invalid_request_error"}}
                    return self._json(404, missing)
                if not isinstance(body, dict):
                    exchange.status = 400
                    return self._json(400, replay.transcript["errors"]["malformed"])
                refused = refusal(replay.transcript, body)
                if refused is not None:
                    status, payload, rule = refused
                    exchange.status, exchange.refused = status, rule["param"]
                    return self._json(status, payload)
                exchange.status = 200
                self._stream(exchange)

            def _json(self, status: int, payload: Any) -> None:
                data = json.dumps(payload, ensure_ascii=False).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _stream(self, exchange: Exchange) -> None:
                self.send_response(200)
                for name, value in replay.transcript["headers"].items():
                    self.send_header(name, value)
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                for line in replay.render(exchange):
                    exchange.raw.append(line)
                    data = line.encode()
                    self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
                    self.wfile.flush()
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()

        self._httpd = LoopbackServer((host, port), Handler)
        self._thread: threading.Thread | None = None

    # -- lifecycle --------------------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}{self.transcript.get('base_path', '/v1')}"

    def start(self) -> ReplayServer:
        self._thread = threading.Thread(target=self._httpd.serve_forever, name=f"replay-{self.family}", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def __enter__(self) -> ReplayServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    @property
    def answered(self) -> list[Exchange]:
        """The requests that got a stream (not an error)."""
        return [e for e in self.exchanges if e.status == 200]

    # -- the stream -------------------------------------------------------------------------------

    def render(self, exchange: Exchange) -> list[str]:
        """The SSE lines (each ends with its blank line) for one request, from the transcript."""
        t = self.transcript
        body = exchange.body
        exchange.answer = answer_for(body)
        kind = t.get("thinking")
        exchange.thinking = thinking_for(body, self.family) if kind else ""
        size = int(t.get("chunk_chars", 6))
        if kind == "think-tag":
            content = f"<think>\n{exchange.thinking}\n</think>\n\n{exchange.answer}"
        elif kind == "think-open":  # the chat template opened <think> in the prompt: only the close arrives
            content = f"{exchange.thinking}\n</think>\n\n{exchange.answer}"
        else:
            content = exchange.answer
        include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
        mapping = {
            "$id": t.get("id_prefix", "chatcmpl-") + uuid.uuid4().hex[:24],
            "$created": int(time.time()),
            "$model": t.get("served_model", body.get("model", t["model"])),
            "$usage": t.get("usage"),
        }
        lines: list[str] = []
        for item in t["stream"]:
            if item.get("if") == "include_usage" and not include_usage:
                continue
            if item.get("if") == "no_include_usage" and include_usage:
                continue
            if "comment" in item:
                lines.append(f": {item['comment']}\n\n")
                continue
            if item.get("data") == "[DONE]":
                lines.append("data: [DONE]\n\n")
                continue
            each = item.get("each")
            source = {"thinking": exchange.thinking, "answer": exchange.answer, "content": content}.get(each)
            chunks = pieces(source, size) if each else [None]
            for piece in chunks:
                data = _fill(item["data"], {**mapping, "$piece": piece})
                lines.append(f"data: {json.dumps(data, ensure_ascii=False, separators=(',', ':'))}\n\n")
        return lines


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Serve one provider family's documented stream until Ctrl-C.")
    parser.add_argument("family", choices=families())
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args(argv)
    with ReplayServer(args.family, port=args.port) as server:
        print(f"{args.family} at {server.base_url} (model {server.transcript['model']})", flush=True)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":
    main()
