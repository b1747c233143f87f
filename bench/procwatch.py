"""What the hostile-input benchmarks watch in a daphne they start: the process's memory and CPU as
/proc tells them, sampled often enough to catch a short peak, and the daphne itself, started with
the Procfile's flags. Shared by bench/body_limit.py and bench/documents.py."""

from __future__ import annotations

import os
import threading
import time
import urllib.request
from pathlib import Path

from testkit.servers import AgoraServer

CLK_TCK = os.sysconf("SC_CLK_TCK")


class ProcfileServer(AgoraServer):
    """daphne with the Procfile's flags (the tests' AgoraServer leaves out --proxy-headers)."""

    def command(self) -> list[str]:
        return [*super().command()[:-1], "--proxy-headers", "agora.asgi:application"]


def status_kb(pid: int, key: str) -> int:
    """A /proc/PID/status line in kB (VmRSS now, VmHWM the peak so far); 0 when absent."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1])
    return 0


def cpu(pid: int) -> tuple[float, float]:
    """(the process's own CPU seconds, its waited-for children's)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    own = (int(fields[11]) + int(fields[12])) / CLK_TCK
    children = (int(fields[13]) + int(fields[14])) / CLK_TCK
    return own, children


class Sampler(threading.Thread):
    """The highest RSS seen every `every` seconds until `stopping` is set (VmHWM alone is the peak
    since start, which an earlier case may already hold)."""

    def __init__(self, pid: int, every: float = 0.005):
        super().__init__(daemon=True)
        self.pid, self.every, self.peak_kb = pid, every, 0
        self.stopping = threading.Event()

    def run(self):
        while not self.stopping.is_set():
            try:
                self.peak_kb = max(self.peak_kb, status_kb(self.pid, "VmRSS"))
            except (OSError, ValueError):
                return
            time.sleep(self.every)


def alive(server: AgoraServer, timeout: float = 10) -> bool:
    try:
        with urllib.request.urlopen(server.url + "/healthz", timeout=timeout) as response:
            return response.status == 200
    except OSError:
        return False
