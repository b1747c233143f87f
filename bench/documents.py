"""Hostile documents through the real start form: what they cost the web process (issue 24, #2-#4).

Starts daphne as the Procfile does (DEBUG off, its own copy of a prepared SQLite database), signs in
as alice, and posts each document to /debates/new/ as a browser does (multipart, CSRF token, the
file in the documents field; no question, so no debate is created either way and the page comes
back with the documents field's verdict). For each case it prints:

- whether the document was refused, and the message shown beside the field;
- the wall time of the POST;
- the web process's resident memory: the peak (VmHWM after its reset through /proc/PID/clear_refs,
  and VmRSS sampled every 5 ms while the POST ran and for a second after) minus VmRSS just before;
- the web process's own CPU seconds (utime + stime of all its threads), and apart from them the CPU
  of the children it waited for (cutime + cstime: the document readers).

Goal (issue 24): each hostile document refused, or read, within the reader's limits, with the web
process's memory (+20 MB) and CPU (0.5 s: what rendering the page costs) unchanged. After a case
the server must still answer /healthz within 5 s; it is restarted (and the case marked) if not.

The cases are built here (testkit/documents.py): the 1 GiB docx bomb that says 1,000 bytes; honest
docx files python-docx's API read in more than linear time (a merged column of 1,100 rows, 40 KB, and
of 52,000 rows, 184 KB; 400,000 empty paragraphs, 40 KB, and 8,000,000, 107 KB: 48 MB of XML); PDFs
whose pages all draw one shared content stream (31 pages x 1.5 MB, 9.6 KB; 3 pages x 8.3 MB, 25 KB);
an ordinary PDF and docx to compare. The page is asked for in English (Accept-Language).

    .venv/bin/python bench/documents.py
    .venv/bin/python bench/documents.py --cases bomb,pdf-9.6k --timeout 120 --json out.json
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.procwatch import ProcfileServer, Sampler, alive, cpu, status_kb  # noqa: E402
from testkit.documents import (  # noqa: E402
    make_docx,
    make_docx_bomb,
    make_pdf,
    make_shared_stream_pdf,
    make_slow_docx,
)
from testkit.http import Browser  # noqa: E402
from testkit.servers import USERS, AgoraServer, prepare_database  # noqa: E402
from tests.web.formpage import errors_in  # noqa: E402

MB = 1024 * 1024
RSS_GOAL_MB = 20
CPU_GOAL_S = 0.5

CASES = {
    "bomb": ("docx bomb: 1 GiB of zeros, says 1,000 B", "bomb.docx", lambda: make_docx_bomb(1024 * MB)),
    "docx-merged-40k": (
        "docx, a merged column of 1,100 rows",
        "merged.docx",
        lambda: make_slow_docx(merged_rows=1_100),
    ),
    "docx-merged-184k": (
        "docx, a merged column of 52,000 rows",
        "merged-big.docx",
        lambda: make_slow_docx(merged_rows=52_000),
    ),
    "docx-empty-40k": (
        "docx, 400,000 empty paragraphs",
        "blank.docx",
        lambda: make_slow_docx(empty_paragraphs=400_000),
    ),
    "docx-empty-107k": (
        "docx, 8,000,000 empty paragraphs",
        "blank-big.docx",
        lambda: make_slow_docx(empty_paragraphs=8_000_000),
    ),
    "pdf-9.6k": ("pdf, 31 pages share a 1.5 MB stream", "shared.pdf", lambda: make_shared_stream_pdf(31, 1_500_000)),
    "pdf-25k": ("pdf, 3 pages share an 8.3 MB stream", "shared-big.pdf", lambda: make_shared_stream_pdf(3, 8_300_000)),
    "ordinary-pdf": (
        "ordinary pdf, 20 pages of text",
        "report.pdf",
        lambda: make_pdf(
            ["\n".join(f"Line {n} of page {p}: remote work and output." for n in range(40)) for p in range(20)]
        ),
    ),
    "ordinary-docx": (
        "ordinary docx, headings and a table",
        "report.docx",
        lambda: make_docx(
            [("heading", "Findings"), *[f"Paragraph {n}: remote teams shipped more." for n in range(200)], [["a", "b"]]]
        ),
    ),
}


def post_document(browser: Browser, name: str, data: bytes, timeout: float) -> tuple[int, str]:
    """The start form with only the file (no question): (status, page)."""
    token = browser.token("/debates/new/")
    boundary = uuid.uuid4().hex
    parts = [(b"csrfmiddlewaretoken", None, token.encode()), (b"format", None, b"duel"), (b"topic", None, b"")]
    parts.append((b"documents", name.encode(), data))
    body = b""
    for field, filename, value in parts:
        body += b"--%s\r\n" % boundary.encode()
        if filename is None:
            body += b'Content-Disposition: form-data; name="%s"\r\n\r\n' % field
        else:
            body += b'Content-Disposition: form-data; name="%s"; filename="%s"\r\n' % (field, filename)
            body += b"Content-Type: application/octet-stream\r\n\r\n"
        body += value + b"\r\n"
    body += b"--%s--\r\n" % boundary.encode()
    request = urllib.request.Request(
        browser.base_url + "/debates/new/",
        data=body,
        headers={
            "Content-Type": f"multipart/form-data; boundary={boundary}",
            "Referer": browser.base_url + "/debates/new/",
            "Accept-Language": "en",
        },
    )
    try:
        with browser.stay.open(request, timeout=timeout) as response:
            return response.status, response.read().decode(errors="replace")
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode(errors="replace")


def one_case(server: AgoraServer, browser: Browser, key: str, timeout: float) -> dict:
    label, name, build = CASES[key]
    data = build()
    pid = server.process.pid
    browser.token("/debates/new/")  # the page once, so its first render is not counted
    Path(f"/proc/{pid}/clear_refs").write_text("5")  # VmHWM := VmRSS now
    time.sleep(0.2)
    baseline_kb = status_kb(pid, "VmRSS")
    own_before, children_before = cpu(pid)
    sampler = Sampler(pid)
    sampler.start()
    start = time.monotonic()
    try:
        status, page = post_document(browser, name, data, timeout)
        error = ""
    except OSError as failure:  # the client gave up: the server is still at it
        status, page, error = None, "", f"no answer within {timeout:g} s ({failure.__class__.__name__})"
    seconds = time.monotonic() - start
    time.sleep(1.0)  # what the server still does after answering counts too
    sampler.stopping.set()
    sampler.join()
    peak_kb = max(status_kb(pid, "VmHWM"), sampler.peak_kb)
    own_after, children_after = cpu(pid)
    message = " ".join(errors_in(page, "field-documents").split()) if page else ""
    outcome = "refused" if message else ("read" if status == 200 else error or f"status {status}")
    row = {
        "case": key,
        "what": label,
        "bytes": len(data),
        "outcome": outcome,
        "message": message,
        "seconds": round(seconds, 2),
        "web_rss_delta_mb": round((peak_kb - baseline_kb) / 1024, 1),
        "web_cpu_s": round(own_after - own_before, 2),
        "reader_cpu_s": round(children_after - children_before, 2),
    }
    unchanged = row["web_rss_delta_mb"] < RSS_GOAL_MB and row["web_cpu_s"] < CPU_GOAL_S
    row["verdict"] = "PASS" if unchanged and outcome in ("refused", "read") else "MISS"
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", default=",".join(CASES), help="which cases, comma-separated: " + ", ".join(CASES))
    parser.add_argument("--timeout", type=float, default=120, help="seconds the client waits for one answer")
    parser.add_argument(
        "--fresh-server",
        action="store_true",
        help="restart daphne before every case (for code that keeps parsing after the client gave up)",
    )
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    keys = [k for k in args.cases.split(",") if k]

    results = []
    with tempfile.TemporaryDirectory(prefix="agora-documents-") as tmp:
        workdir = Path(tmp)
        template = workdir / "template.sqlite3"
        prepare_database(template, dict(os.environ))
        env = {"DEBUG": "0", "LOG_LEVEL": "WARNING", "SECRET_KEY": "bench-" + "x" * 50}
        server = ProcfileServer(workdir, "http://127.0.0.1:9/v1", template, **env).start(timeout=60)
        browser = Browser(server.url, timeout=args.timeout)
        browser.log_in("alice", USERS["alice"])
        print(f"daphne pid {server.process.pid}, RSS at rest {status_kb(server.process.pid, 'VmRSS') / 1024:.0f} MB")
        print(
            f"goal: refused or read within the reader's limits; web RSS < +{RSS_GOAL_MB} MB, web CPU < {CPU_GOAL_S} s\n"
        )
        print(
            f"{'case':<17} {'KB':>7} {'outcome':<8} {'wall s':>7} {'web RSS':>8} {'web CPU':>8} {'reader CPU':>10}  "
            "goal  message"
        )
        try:
            for number, key in enumerate(keys):
                if args.fresh_server and number:
                    server.stop()
                    server.start(timeout=60)
                    browser = Browser(server.url, timeout=args.timeout)
                    browser.log_in("alice", USERS["alice"])
                row = one_case(server, browser, key, args.timeout)
                if not alive(server):
                    row["verdict"], row["note"] = "MISS", "server did not answer /healthz within 5 s; restarted"
                    server.stop()
                    server.start(timeout=60)
                    browser = Browser(server.url, timeout=args.timeout)
                    browser.log_in("alice", USERS["alice"])
                results.append(row)
                print(
                    f"{key:<17} {row['bytes'] / 1000:>7.1f} {row['outcome'][:8]:<8} {row['seconds']:>7} "
                    f"{row['web_rss_delta_mb']:>+8} {row['web_cpu_s']:>8} {row['reader_cpu_s']:>10}  "
                    f"{row['verdict']:<4}  "
                    + (row["message"][:110] or row["outcome"])
                    + (f" ({row['note']})" if row.get("note") else ""),
                    flush=True,
                )
        finally:
            server.stop()
    passed = sum(r["verdict"] == "PASS" for r in results)
    print(f"\n{passed}/{len(results)} PASS")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1, ensure_ascii=False))
    return 0 if passed == len(results) else 1


if __name__ == "__main__":
    sys.exit(main())
