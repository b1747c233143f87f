"""Debian's Chromium as the tests and the benchmark drive it (Playwright with `executable_path`:
never a browser download), with the flags that keep a headless run quiet and offline."""

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
