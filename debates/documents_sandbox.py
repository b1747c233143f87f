"""The child process that reads one upload: `python -m debates.documents_sandbox NAME CPU MEMORY OUTPUT NICE`.

Started by `documents.extract_isolated` as a fresh interpreter. It limits itself before it reads a
byte of the upload (CPU seconds, address space, the size of any file it writes, no core dump, a
lower priority), reads the upload from stdin, and writes one JSON answer to stdout: the document's
sections, or the refusal's msgid and parameters. A parser that runs out of memory ends as a
refusal too; one that runs out of CPU time is killed by the kernel, and the parent says so.
No Django: this imports only `debates.documents` and what it needs.
"""

from __future__ import annotations

import json
import logging
import os
import resource
import sys
import warnings


def limit(cpu_seconds: int, memory_bytes: int, output_bytes: int, nice: int) -> None:
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # SIGXCPU would otherwise dump a core into the app's folder
    resource.setrlimit(resource.RLIMIT_CPU, (cpu_seconds, cpu_seconds + 1))  # SIGXCPU, then SIGKILL
    resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
    resource.setrlimit(resource.RLIMIT_FSIZE, (output_bytes, output_bytes))
    os.nice(nice)


MEMORY_CEILING = 0.8  # this share of RLIMIT_AS reached counts as having run out


def _peak_address_space() -> int:
    """The most address space this process has held (VmPeak), in bytes; 0 where /proc has no answer."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmPeak:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    return 0


def main(argv: list[str]) -> int:
    name = argv[1]
    cpu_seconds, memory_bytes, output_bytes, nice = (int(value) for value in argv[2:6])
    limit(cpu_seconds, memory_bytes, output_bytes, nice)
    # pypdf and python-docx warn about every oddity of a broken file; a hostile one could fill stderr.
    logging.disable(logging.CRITICAL)
    warnings.simplefilter("ignore")

    from debates import documents

    data = sys.stdin.buffer.read(documents.MAX_BYTES + 1)
    try:
        outcome = documents.extract(name, data)
    except documents.DocumentError as error:
        outcome = error
    except MemoryError:
        outcome = documents.DocumentError(documents.TOO_MUCH_MEMORY, name=name)
    del data
    if isinstance(outcome, documents.DocumentError) and outcome.text.msgid in documents.UNREADABLE.values():
        # A parser that cannot allocate does not always say so (lxml: "unknown error"): a file
        # "unreadable" after the child reached its address-space ceiling was too big to read.
        if _peak_address_space() >= memory_bytes * MEMORY_CEILING:
            outcome = documents.DocumentError(documents.TOO_MUCH_MEMORY, name=name)
    answer = json.dumps(documents.to_answer(outcome), ensure_ascii=False).encode("utf-8")
    sys.stdout.buffer.write(answer)
    sys.stdout.buffer.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
