"""Lenient parsing and hard limits for model output.

Small models ignore length requests and drift from the asked-for structure, so every limit here is
enforced by code and every parser falls back to something sensible instead of failing the turn.
"""

from __future__ import annotations

import re
import unicodedata

from pypinyin import lazy_pinyin

ELLIPSIS = "…"
_SENTENCE_END = re.compile(r"(?<=[。！？!?；;])|(?<=\.)\s")
_WS = re.compile(r"\s+")
_PUNCT = re.compile(r"[\s\"'“”‘’「」『』《》〈〉()（）\[\]【】,，.。!！?？:：;；、…—\-*_#>`]+")


def clip(text: str, limit: int) -> str:
    """At most `limit` characters, marked with an ellipsis when cut."""
    text = text.strip()
    if len(text) <= limit:
        return text
    return text[: max(0, limit - 1)].rstrip() + ELLIPSIS


def cut_marked(text: str, limit: int, mark: str) -> tuple[str, bool]:
    """Cut a speech at `limit` characters and append a visible mark; returns (text, was_cut)."""
    if len(text) <= limit:
        return text, False
    return text[:limit].rstrip() + mark, True


def normalise(text: str) -> str:
    """For containment checks: NFKC, lowercase, no punctuation or whitespace."""
    return _PUNCT.sub("", unicodedata.normalize("NFKC", text).lower())


# Section labels the formats ask for; a line holding only one of these is a heading, not content.
STRUCTURE_LABELS = ("正文", "立场", "立场变化", "核心论点", "核心论据", "论据", "反驳", "沉默声明", "置信度", "小结")
# Field lines about the speech rather than of it: never a speech's first sentence.
META_LABELS = ("立场变化", "沉默声明", "置信度", "小结")


def first_sentence(text: str) -> str:
    return next(sentences(text), "")


def sentences(text: str):
    """The sentences of the lines that say something, in order: headings, labels alone and meta
    lines skipped, a structure label ("正文：") dropped from the front."""
    for line in text.splitlines():
        raw = line.strip()
        if raw.startswith("#") or re.fullmatch(r"\*\*[^*]+\*\*[:：]?", raw):
            continue  # a heading ("## 双方主张", "**共识**") is not what the text says
        line = raw.lstrip(">*-• ").strip().strip("*").strip()
        if not line or _is_label_only(line) or line.startswith(META_LABELS):
            continue
        # "正文：……" — drop the label, keep what follows it.
        line = re.sub(rf"^(?:{'|'.join(STRUCTURE_LABELS)})\s*\**\s*[:：]\s*\**\s*", "", line)
        yield from (sentence.strip() for sentence in _SENTENCE_END.split(line) if sentence.strip())


def _is_label_only(line: str) -> bool:
    return bool(re.fullmatch(r"[\w\s·]{1,12}[:：]", line)) or line.strip("*：: ") in STRUCTURE_LABELS


def field_value(text: str, labels: tuple[str, ...], *, multiline: bool = False) -> str:
    """The value after the last line labelled with any of `labels` ("小结：…", "**Summary**: …").

    With `multiline`, the value runs until the next labelled line or blank line.
    """
    label_re = "|".join(re.escape(label) for label in labels)
    pattern = re.compile(
        rf"^[ \t>*#\-•]*(?:\*\*)?\s*【?(?:{label_re})】?\s*(?:\*\*)?\s*[:：]?\s*(?:\*\*)?\s*(.*)$",
        re.IGNORECASE | re.MULTILINE,
    )
    matches = list(pattern.finditer(text))
    if not matches:
        return ""
    match = matches[-1]
    value = match.group(1).strip()
    if not multiline:
        return value.strip("*").strip()
    lines = [value] if value else []
    for line in text[match.end() :].split("\n")[1:]:
        if not line.strip():
            if lines:
                break
            continue
        if re.match(r"^[ \t>*#\-•]*(?:\*\*)?\s*【?[\w\u4e00-\u9fff ]{1,10}】?\s*(?:\*\*)?[:：]", line) and lines:
            break
        lines.append(line.strip())
    return "\n".join(lines).strip()


# The summary the formats ask for ("小结"), before words a speech may also use for other lines.
OWN_SUMMARY_LABELS = ("小结", "本轮小结", "summary", "round summary")
SUMMARY_LABELS = (*OWN_SUMMARY_LABELS, "摘要", "总结")


def summary_of(text: str, limit: int, question: str = "") -> str:
    """The speaker's own summary line if it wrote one, else its first sentence; never over `limit`.
    A "总结：" line elsewhere in the speech never replaces the asked-for "小结". A line that only
    says the question again (small models open with it) is passed over for the next one."""
    summary = field_value(text, OWN_SUMMARY_LABELS) or field_value(text, SUMMARY_LABELS)
    if not normalise(summary) or restates(summary, question):  # missing, a copied "…", the question
        candidates = [s for s in sentences(_without_labels(text, SUMMARY_LABELS)) if not restates(s, question)]
        summary = next(iter(candidates), "") or summary or text.strip()
    return clip(_WS.sub(" ", summary), limit)


def restates(line: str, question: str) -> bool:
    """`line` is the question again, or most of it (a part that picks a side is an answer)."""
    said, asked = normalise(line), normalise(question)
    if not said or not asked:
        return False
    return (said in asked and len(said) >= 0.8 * len(asked)) or similarity(line, question) > 0.8


def _without_labels(text: str, labels: tuple[str, ...]) -> str:
    return "\n".join(line for line in text.splitlines() if not any(label in line.lower() for label in labels))


def bigrams(text: str) -> set[str]:
    norm = normalise(text)
    return {norm[i : i + 2] for i in range(len(norm) - 1)} or ({norm} if norm else set())


def similarity(a: str, b: str) -> float:
    """Jaccard similarity of character bigrams: language-agnostic, good enough for 'did it move?'."""
    x, y = bigrams(a), bigrams(b)
    if not x or not y:
        return 0.0
    return len(x & y) / len(x | y)


def bullet_items(text: str, limit: int | None = None) -> list[str]:
    """Numbered or bulleted items in `text`, cleaned; at most `limit`."""
    items = []
    for line in text.splitlines():
        match = re.match(r"^\s*(?:[-*•]|\d+[.、)）]|[一二三四五六七八九十]+[、.])\s*(.+)$", line)
        if match:
            items.append(match.group(1).strip())
    return items[:limit] if limit else items


_SLUG_WORD = re.compile(r"[a-z][a-z0-9]*")


def topic_slug(candidate: str, question: str, fallback_words: tuple[str, ...] = ("debate",)) -> str:
    """3–6 lowercase English words joined by '-': the model's suggestion if usable, else words
    from the question, padded from `fallback_words` (the archive name must never be empty)."""
    words = _SLUG_WORD.findall(candidate.lower())
    if not 3 <= len(words) <= 6:
        # A Chinese question is romanised (pinyin, tones dropped), so the archive name still says
        # what it was about: "念佛与参禅…" → nian-fo-yu-can-chan-na.
        words = _SLUG_WORD.findall(" ".join(lazy_pinyin(question)).lower())[:6]
        for word in fallback_words:
            if len(words) >= 3:
                break
            words.append(word)
        while len(words) < 3:
            words.append("topic")
    return "-".join(words[:6])
