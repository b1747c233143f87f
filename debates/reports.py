"""Moved to `debates.exports` (the report as a reader sees it, with the exports every door sends).
Kept only for `manage.py debate` until it imports `debates.exports`; nothing else uses this name."""

from debates.exports import report_turns, transcript_markdown, verdict_markdown

__all__ = ["report_turns", "transcript_markdown", "verdict_markdown"]
