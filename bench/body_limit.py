"""Request bodies bounded before they are read: what a large POST costs daphne's memory.

Starts daphne as the Procfile does (`daphne --proxy-headers agora.asgi:application`, DEBUG off, its
own copy of a prepared SQLite database), then for each URL, size and framing (Content-Length, or
chunked in 1 MiB chunks) sends one body with testkit.big_body (headers first, then the body,
stopping as soon as the server answers, as curl does) and measures daphne's resident memory:

- baseline: VmRSS just before the case (the peak counter is reset first: /proc/PID/clear_refs 5);
- peak: the larger of VmHWM after the case and VmRSS sampled every 5 ms while it ran (and for one
  second after the answer, for work the server still does once it has answered);
- delta = peak − baseline, PASS when the answer is 413 and the delta under the goal (+50 MB,
  issue #24).

Then, for comparison, a body 1.5 MB under AGORA_MAX_BODY_BYTES (what the start form may send) to
the start form with a session cookie (the upload limit is for signed-in uploads only): that one is
read, as it must be, and its cost is printed without a verdict.

Each case also prints the answer's status, how much of the body had been sent when the answer came,
the seconds it took and daphne's CPU seconds (utime + stime). Between cases the server must still
answer /healthz (it is restarted, and the case marked, when it does not).

    .venv/bin/python bench/body_limit.py                      # 100 and 400 MB, four URLs, both framings
    .venv/bin/python bench/body_limit.py --sizes 100 --paths /healthz --modes length
    .venv/bin/python bench/body_limit.py --parallel           # bodies that add up (issue 47)

`--parallel` runs the red team's "bodies add up" cases instead: many bodies within their limits
sent at once, each from its own thread and socket (stopping at the answer), to /accounts/login/
(anonymous, 160 × 28 MiB), to the start form with a made-up session cookie (16 × 28 MiB) and to the
API with a made-up token (200 × 2.5 MB). Per case: the answers, daphne's RSS before, at its peak
and 3 s after the last answer (memory returned or not), and the slowest /healthz polled every
0.1 s meanwhile; each case on a fresh daphne. PASS = peak under +100 MB and /healthz under 1 s.
`--paths` picks among them.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.procwatch import ProcfileServer, Sampler, alive, cpu, status_kb  # noqa: E402
from testkit.big_body import send_body  # noqa: E402
from testkit.servers import AgoraServer, prepare_database  # noqa: E402

MB = 1024 * 1024
GOAL_MB = 50
PATHS = ["/accounts/login/", "/healthz", "/api/v1/debates", "/debates/new/"]


def server_limit_mb(server: AgoraServer) -> float:
    """AGORA_MAX_BODY_BYTES as the server computes it (its environment, its settings)."""
    code = "from django.conf import settings; print(settings.AGORA_MAX_BODY_BYTES)"
    env = {**server.env, "DJANGO_SETTINGS_MODULE": "agora.settings"}
    out = subprocess.run(
        [sys.executable, "-c", "import django; django.setup(); " + code],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return int(out.stdout.strip().splitlines()[-1]) / MB


def csrf_token(server: AgoraServer) -> str:
    with urllib.request.urlopen(server.url + "/accounts/login/", timeout=30) as response:
        for header in response.headers.get_all("Set-Cookie") or []:
            name, _, rest = header.partition("=")
            if name.strip() == "csrftoken":
                return rest.split(";", 1)[0]
    raise RuntimeError("no CSRF cookie on the sign-in page")


def request_shape(server: AgoraServer, path: str, signed_in: bool = False) -> tuple[str, dict[str, str]]:
    """What a hostile client sends to get furthest: a page's POST carries a valid CSRF cookie and
    token and claims to be a multipart form (what Twisted's and Django's parsers work hardest on);
    an API POST is JSON (no token: the body costs the same before anyone looks at it)."""
    if path.startswith("/api/"):
        return "application/json", {}
    token = csrf_token(server)
    headers = {"Cookie": f"csrftoken={token}", "X-CSRFToken": token, "Referer": server.url + path}
    if signed_in:  # made up: daphne only sees that there is one; Django refuses it after reading
        headers["Cookie"] += "; sessionid=made-up"
    return "multipart/form-data; boundary=agora-bench", headers


def one_case(
    server: AgoraServer, path: str, size_mb: float, chunked: bool, timeout: float, judged: bool = True
) -> dict:
    content_type, headers = request_shape(server, path, signed_in=not judged)
    pid = server.process.pid
    Path(f"/proc/{pid}/clear_refs").write_text("5")  # VmHWM := VmRSS now
    time.sleep(0.2)
    baseline_kb, cpu_before = status_kb(pid, "VmRSS"), cpu(pid)[0]
    sampler = Sampler(pid)
    sampler.start()
    outcome = send_body(
        "127.0.0.1",
        server.port,
        path,
        int(size_mb * MB),
        chunked=chunked,
        content_type=content_type,
        extra_headers=headers,
        timeout=timeout,
    )
    time.sleep(1.0)  # whatever the server still does after answering counts too
    sampler.stopping.set()
    sampler.join()
    try:
        peak_kb = max(status_kb(pid, "VmHWM"), sampler.peak_kb)
        cpu_used = cpu(pid)[0] - cpu_before
    except OSError:  # the server died (out of memory)
        peak_kb, cpu_used = sampler.peak_kb, float("nan")
    delta_mb = (peak_kb - baseline_kb) / 1024
    return {
        "path": path,
        "size_mb": size_mb,
        "framing": "chunked" if chunked else "length",
        "status": outcome.status,
        "answer_type": outcome.headers.get("content-type", ""),
        "sent_mb": round(outcome.sent / MB, 1),
        "answered_early": outcome.early,
        "client_error": outcome.error,
        "seconds": round(outcome.seconds, 2),
        "server_cpu_s": round(cpu_used, 2),
        "baseline_mb": round(baseline_kb / 1024, 1),
        "peak_mb": round(peak_kb / 1024, 1),
        "delta_mb": round(delta_mb, 1),
        "verdict": ("PASS" if delta_mb < GOAL_MB and outcome.status == 413 else "MISS") if judged else "(in limit)",
    }


PARALLEL_CASES = [  # (path, bodies, MiB each, headers beyond the content type)
    ("/accounts/login/", 160, 28, {}),
    ("/debates/new/", 16, 28, {"Cookie": "sessionid=made-up"}),
    ("/api/v1/debates", 200, 2.5, {"Authorization": "Bearer made-up"}),
]
PARALLEL_GOAL_MB, HEALTHZ_GOAL_S = 100, 1.0


def slowest_healthz(server: AgoraServer, stopping: threading.Event, seen: list[float]) -> None:
    while not stopping.wait(0.1):
        started = time.monotonic()
        try:
            with urllib.request.urlopen(server.url + "/healthz", timeout=30) as response:
                response.read()
        except OSError:
            pass
        seen.append(time.monotonic() - started)


def parallel_case(server: AgoraServer, path: str, count: int, size_mb: float, headers: dict, timeout: float) -> dict:
    pid = server.process.pid
    Path(f"/proc/{pid}/clear_refs").write_text("5")  # VmHWM := VmRSS now
    time.sleep(0.2)
    baseline_kb = status_kb(pid, "VmRSS")
    stopping, latencies = threading.Event(), []
    poller = threading.Thread(target=slowest_healthz, args=(server, stopping, latencies), daemon=True)
    poller.start()
    content_type = "application/json" if path.startswith("/api/") else "multipart/form-data; boundary=agora-bench"
    started = time.monotonic()
    with ThreadPoolExecutor(max_workers=count) as pool:
        outcomes = list(
            pool.map(
                lambda _: send_body(
                    "127.0.0.1",
                    server.port,
                    path,
                    int(size_mb * MB),
                    content_type=content_type,
                    extra_headers=headers,
                    timeout=timeout,
                ),
                range(count),
            )
        )
    seconds = time.monotonic() - started
    stopping.set()
    poller.join()
    peak_kb = status_kb(pid, "VmHWM")
    time.sleep(3)
    after_kb = status_kb(pid, "VmRSS")
    statuses = Counter(str(o.status) for o in outcomes)
    delta_mb = (peak_kb - baseline_kb) / 1024
    slowest = max(latencies, default=float("nan"))
    return {
        "path": path,
        "bodies": count,
        "size_mb": size_mb,
        "answers": dict(statuses),
        "sent_mb": round(sum(o.sent for o in outcomes) / MB),
        "seconds": round(seconds, 1),
        "baseline_mb": round(baseline_kb / 1024),
        "peak_mb": round(peak_kb / 1024),
        "delta_mb": round(delta_mb),
        "after_mb": round(after_kb / 1024),
        "slowest_healthz_s": round(slowest, 3),
        "verdict": "PASS" if delta_mb < PARALLEL_GOAL_MB and slowest < HEALTHZ_GOAL_S else "MISS",
    }


def run_parallel(server: AgoraServer, timeout: float, paths: list[str]) -> list[dict]:
    print(f"{'path':<18} {'n × MiB':>10} {'answers':<24} {'sent MiB':>8} {'s':>6} {'base':>6} {'peak':>6} ", end="")
    print(f"{'delta':>6} {'after':>6} {'healthz s':>9}  goal")
    results = []
    for path, count, size_mb, headers in PARALLEL_CASES:
        if path not in paths:
            continue
        if results:  # a fresh daphne per case: memory an earlier case left in its heap would hide growth
            server.stop()
            server.start(timeout=60)
        row = parallel_case(server, path, count, size_mb, headers, timeout)
        results.append(row)
        answers = ", ".join(f"{n}×{status}" for status, n in sorted(row["answers"].items()))
        print(
            f"{path:<18} {f'{count} × {size_mb:g}':>10} {answers:<24} {row['sent_mb']:>8} {row['seconds']:>6} "
            f"{row['baseline_mb']:>6} {row['peak_mb']:>6} {row['delta_mb']:>+6} {row['after_mb']:>6} "
            f"{row['slowest_healthz_s']:>9}  {row['verdict']}",
            flush=True,
        )
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="100,400", help="body sizes in MiB (default 100,400)")
    parser.add_argument("--paths", default=",".join(PATHS), help="URLs to post to")
    parser.add_argument("--modes", default="length,chunked", help="length and/or chunked")
    parser.add_argument("--timeout", type=float, default=300, help="seconds one case may take")
    parser.add_argument("--no-in-limit", dest="in_limit", action="store_false", help="skip the in-limit comparison")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument("--parallel", action="store_true", help="the bodies-add-up cases instead (issue 47)")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",") if s]
    paths = [p for p in args.paths.split(",") if p]
    modes = [m for m in args.modes.split(",") if m]

    with tempfile.TemporaryDirectory(prefix="agora-body-") as tmp:
        workdir = Path(tmp)
        template = workdir / "template.sqlite3"
        prepare_database(template, dict(os.environ))
        env = {"DEBUG": "0", "LOG_LEVEL": "WARNING", "SECRET_KEY": "bench-" + "x" * 50}
        server = ProcfileServer(workdir, "http://127.0.0.1:9/v1", template, **env).start(timeout=60)
        print(f"daphne pid {server.process.pid}: {' '.join(server.command()[1:])}")
        if args.parallel:
            try:
                results = run_parallel(server, args.timeout, paths)
            finally:
                server.stop()
            if args.json:
                args.json.write_text(json.dumps(results, indent=1))
            return 0 if all(r["verdict"] == "PASS" for r in results) else 1
        print(f"RSS at rest {status_kb(server.process.pid, 'VmRSS') / 1024:.0f} MB; goal: peak under +{GOAL_MB} MB\n")
        header = (
            f"{'path':<18} {'MiB':>5} {'framing':<8} {'status':>6} {'type':<5} {'sent MiB':>8} {'s':>6} {'cpu s':>6} "
        )
        header += f"{'base MB':>8} {'peak MB':>8} {'delta MB':>9}  goal"
        print(header)
        results = []
        in_limit = (server_limit_mb(server) - 1.5) if args.in_limit else None
        cases = [(path, size, mode, True) for path in paths for size in sizes for mode in modes]
        if in_limit:  # a body the start form may send, for comparison: read, not refused
            cases += [("/debates/new/", in_limit, mode, False) for mode in modes]
        try:
            for path, size, mode, judged in cases:
                row = one_case(server, path, size, mode == "chunked", args.timeout, judged)
                if not alive(server):
                    row["verdict"], row["note"] = "MISS", "server did not answer /healthz afterwards"
                    server.stop()
                    server.start(timeout=60)
                results.append(row)
                kind = "json" if "json" in row["answer_type"] else "html" if "html" in row["answer_type"] else "-"
                print(
                    f"{path:<18} {size:>5.4g} {row['framing']:<8} {row['status']!s:>6} {kind:<5} {row['sent_mb']:>8} "
                    f"{row['seconds']:>6} {row['server_cpu_s']:>6} {row['baseline_mb']:>8} "
                    f"{row['peak_mb']:>8} {row['delta_mb']:>+9}  {row['verdict']}"
                    + (f" ({row['note']})" if row.get("note") else ""),
                    flush=True,
                )
        finally:
            server.stop()
    judged = [r for r in results if r["verdict"] in ("PASS", "MISS")]
    worst = max(judged, key=lambda r: r["delta_mb"])
    passed = sum(r["verdict"] == "PASS" for r in judged)
    print(
        f"\n{passed}/{len(judged)} PASS; the largest delta {worst['delta_mb']:+} MB ({worst['path']}, "
        f"{worst['size_mb']} MiB, {worst['framing']})"
    )
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    return 0 if passed == len(judged) else 1


if __name__ == "__main__":
    sys.exit(main())
