"""The evidence pack: numbered sources, and the claims in the debate that cite them.

Every source (the user's pasted material, each part of an uploaded document, each page a search
found) gets an id, S1, S2…, in the order it joined the pack; a resumed run rebuilds the same ids
because it replays the same steps. Speakers cite a source as `[S3]“quoted words”`: the check
below looks the id up and the quoted words in that source's excerpt, so a fabricated source or a
misquote is marked in the report.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import asdict, dataclass, field
from typing import Any

from debates.engine.i18n import gettext_noop, language_of
from debates.engine.text import bigrams, clip, normalise

EXCERPT_LIMIT = 1500  # what a source keeps of its text: the quote check's ground truth
PROMPT_EXCERPT = 800  # what a prompt shows of each source
PROMPT_LIMIT = 6000  # what a prompt shows of the whole pack (sources beyond it are listed by title)
_PARAGRAPH_BREAK = re.compile(r"\n[ \t]*\n")
_SENTENCE_END = re.compile(r"[。！？；]|[.!?;](?=\s)")  # "3.5" is not a sentence end
_SPACES = re.compile(r"\s*")
CITE_RULE = "引用材料时写来源编号并逐字摘录原话，如 [S2]“原话片段”；不得编造来源编号。"
CITE_RULES = {
    "zh": CITE_RULE,
    "en": "When you use the material, write the source's number and quote its words exactly, as [S2] \"the words "
    'quoted"; never make up a source number.',
}

# Why a source citation failed: msgids, rendered in the reader's language.
NO_SUCH_SOURCE = gettext_noop("no source with this number is in the evidence pack")
NOT_IN_SOURCE = gettext_noop("the quoted words are not in this source's excerpt")

SOURCE_CITATION_RE = re.compile(
    r"[\[【〔［]\s*(?P<id>[Ss]\d{1,3})\s*[\]】〕］]"
    r"(?:\s*[:：]?\s*[“\"「『](?P<quote>[^”\"」』\n]{2,400})[”\"」』])?"
)


@dataclass(frozen=True)
class Source:
    id: str  # "S3"
    title: str
    excerpt: str
    origin: str = "material"  # material | document | search
    url: str = ""
    file: str = ""  # the uploaded file's name
    retrieved_at: str = ""  # ISO time the page was fetched or the file read
    query: str = ""  # the search that found it
    published: str = ""
    visible_from: int = 0  # the first round whose prompts show it (a role's own search: the next)

    def as_dict(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Source:
        names = cls.__dataclass_fields__
        return cls(**{k: v for k, v in data.items() if k in names})

    @property
    def where(self) -> str:
        """The source's place: its address, or the file (and the part) it came from."""
        return self.url or self.file


@dataclass(frozen=True)
class Claim:
    """A sentence of the debate that cites a source."""

    turn: str  # the citing turn's key
    speaker: str
    source: str  # the id as written, upper-cased
    quote: str
    sentence: str
    ok: bool
    reason: str = ""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class EvidencePack:
    sources: list[Source] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # facts without a source (checkpoint additions)

    def __bool__(self) -> bool:
        return bool(self.sources or self.notes)

    def get(self, source_id: str) -> Source | None:
        return next((s for s in self.sources if s.id == source_id.upper()), None)

    def next_id(self) -> str:
        return f"S{len(self.sources) + 1}"

    def add(self, title: str, text: str, **fields) -> Source:
        """A new source with the next id; an id in `fields` (a replayed search) is kept."""
        fields.setdefault("id", self.next_id())
        excerpt = text if len(text) <= EXCERPT_LIMIT else clip(text, EXCERPT_LIMIT)  # as written
        source = Source(title=clip(title or fields["id"], 200), excerpt=excerpt, **fields)
        existing = self.get(source.id)
        if existing is not None:
            return existing
        self.sources.append(source)
        return source

    def note(self, text: str) -> None:
        if text.strip():
            self.notes.append(text.strip())

    def material(self) -> str:
        """Everything the pack holds as plain text (what the panel reads its concepts off)."""
        return "\n\n".join([*(s.excerpt for s in self.sources), *self.notes])

    def prompt_text(self, question: str = "", limit: int = PROMPT_LIMIT, round_no: int | None = None) -> str:
        """The pack as a prompt of round `round_no` shows it: each source with its id, title and
        place, then its excerpt; the sources most related to the question first while room lasts,
        the rest by title only, in id order either way."""
        sources = [s for s in self.sources if round_no is None or s.visible_from <= round_no]
        if not sources and not self.notes:
            return ""
        shown = set()
        room = limit - sum(len(n) for n in self.notes)
        # The user's own material first, then what is nearest the question.
        for source in sorted(sources, key=lambda s: (s.origin != "material", -_relevance(s, question))):
            cost = len(source.title) + len(_shown(source)) + 40
            if cost <= room:
                shown.add(source.id)
                room -= cost
        blocks = []
        lang = language_of(question)  # the debate's: its prompts say everything in it
        for source in sources:
            head = f"[{source.id}] {_titled(source, lang)}" + (_where(source, lang) if source.where else "")
            blocks.append(f"{head}\n{_shown(source)}" if source.id in shown else head)
        if sources:
            blocks.append(CITE_RULES[lang])
        return "\n\n".join([*blocks, *self.notes])

    def as_dict(self) -> dict[str, Any]:
        return {"sources": [s.as_dict() for s in self.sources], "notes": list(self.notes)}


def _titled(source: Source, lang: str) -> str:
    """The pasted material's title ("材料", "材料 §2") in the prompt's language."""
    if lang == "en" and source.origin == "material" and source.title.startswith("材料"):
        return "Material" + source.title.removeprefix("材料")
    return source.title


def _where(source: Source, lang: str) -> str:
    return f" ({source.where})" if lang == "en" else f"（{source.where}）"


def _shown(source: Source) -> str:
    """What a prompt shows of a source: a found page's excerpt shortened (a search brings many),
    the user's material and documents whole."""
    return clip(source.excerpt, PROMPT_EXCERPT) if source.origin == "search" else source.excerpt


def md_link(title: str, url: str) -> str:
    """A Markdown link whose label and address cannot break out of it (the page sanitises the
    result again; only http(s) addresses become links)."""
    label = re.sub(r"([\[\]\\])", r"\\\1", title or url)
    if not url.startswith(("http://", "https://")):
        return label
    return f"[{label}]({url.replace(' ', '%20').replace('(', '%28').replace(')', '%29')})"


def _relevance(source: Source, question: str) -> float:
    words = bigrams(question)
    return len(words & bigrams(source.title + source.excerpt)) / len(words) if words else 0.0


def check(turns: list[tuple[str, str, str]], pack: EvidencePack) -> list[Claim]:
    """Every source citation in `turns` ((key, speaker, text) triples): the source must be in
    the pack, and quoted words must be in its excerpt."""
    claims = []
    for key, speaker, text in turns:
        for line in text.splitlines():
            for match in SOURCE_CITATION_RE.finditer(line):
                source_id, quote = match.group("id").upper(), (match.group("quote") or "").strip()
                source = pack.get(source_id)
                if source is None:
                    ok, reason = False, NO_SUCH_SOURCE
                elif quote and normalise(quote) not in normalise(source.excerpt):
                    ok, reason = False, NOT_IN_SOURCE
                else:
                    ok, reason = True, ""
                sentence = clip(line.strip().lstrip("-*• "), 240)
                claims.append(Claim(key, speaker, source_id, quote, sentence, ok, reason))
    return claims


def chunks(text: str, size: int = EXCERPT_LIMIT) -> list[str]:
    """`text` in pieces of at most `size` characters: the one cut for pasted material, an uploaded
    document's sections (`debates.documents`) and the pack's sources. Each piece is a slice of
    `text` (edge whitespace aside), so every word the quote check looks for is there as written,
    and a text that fits is kept exactly. As many whole paragraphs as fit, cut after a blank line;
    a paragraph longer than `size` is cut at a line's end, else after a sentence's end, else after
    a space (each in the piece's second half: an earlier cut makes tiny pieces), else mid-word.
    Linear in the text's length: a 5 MB line is walked once, not copied once per piece."""
    text = text.strip("\n")
    if not text.strip():
        return []
    breaks = [m.end() for m in _PARAGRAPH_BREAK.finditer(text)]
    pieces, start = [], 0
    while len(text) - start > size:
        end = start + size
        after = bisect.bisect_right(breaks, end) - 1  # the last blank line that ends within reach
        cut = breaks[after] if after >= 0 and breaks[after] > start else _cut_within(text, start, end)
        pieces.append(text[start:cut].rstrip())
        start = _SPACES.match(text, cut).end()
    pieces.append(text[start:].strip("\n"))
    return [p for p in pieces if p.strip()]


def _cut_within(text: str, start: int, end: int) -> int:
    """Where to end the piece `text[start:end]` inside one paragraph: after its last line end, else
    its last sentence end, else its last space, in its second half; else at `end`, mid-word."""
    half = start + (end - start) // 2
    line_end = text.rfind("\n", start, end)
    if line_end > half:
        return line_end + 1
    ends = [match.end() for match in _SENTENCE_END.finditer(text, half, end)]
    if ends:
        return ends[-1]
    space = text.rfind(" ", half, end)
    return space + 1 if space != -1 else end


def pack_from_options(evidence: str, documents: list[dict[str, Any]], read_at: str = "") -> EvidencePack:
    """The pack a debate starts with: the pasted material, then each uploaded document's parts."""
    pack = EvidencePack()
    pasted = chunks(evidence.strip())
    for n, piece in enumerate(pasted, start=1):
        title = "材料" if len(pasted) == 1 else f"材料 §{n}"
        pack.add(title, piece, origin="material")
    for document in documents:
        name = str(document.get("name", ""))
        for section in document.get("sections", []):
            label = str(section.get("label", ""))
            pieces = chunks(str(section.get("text", "")))
            for n, piece in enumerate(pieces, start=1):
                part = label if len(pieces) == 1 else f"{label} ({n}/{len(pieces)})"
                pack.add(f"{name} · {part}", piece, origin="document", file=name, retrieved_at=read_at)
    return pack
