"""The two outputs every format ends with: a verdict for readers and the full transcript.

A format fills a `ReportBuilder` with sections (a stable key, a translatable title, a Markdown body,
and what to say when the body is empty), notes and data; `emit` sends them as data. `render` turns
that data and the turns into Markdown in whatever language `translate` speaks: the engine renders
it once in the question's language (the CLI and stored Markdown), the web layer again for each
reader (the report page, the exports). Bodies are model text or tables built here, sanitised again
by the web layer before display.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from debates.engine import events as ev
from debates.engine import evidence
from debates.engine.i18n import Text, gettext_noop, text
from debates.engine.reading import fold_rewrites, shown_speech
from debates.engine.text import clip, topic_slug

# Phases every format may have; a format's own `phase_titles` add to these.
PHASE_TITLES = {"host": gettext_noop("Host"), "speech": gettext_noop("Speech"), "search": gettext_noop("Search")}
Translate = Callable[[str], str]
DISCARDED = gettext_noop("Discarded attempt, written again (not part of the debate)")
RESEARCH_LINE = gettext_noop(
    "Research: %(searches)d searches, %(fetches)d pages fetched (%(fetched_tokens)d tokens read), %(seconds)s s"
)


def named(turn: Mapping, lang: str) -> str:
    """A report turn's speaker as a reader of `lang` ("zh"/"en") knows them: the English name
    for English when the turn has one (`speaker_name_en`), else `speaker_name`."""
    return (lang == "en" and turn.get("speaker_name_en")) or turn.get("speaker_name", "")


def _escape_cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def table(headers: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(_escape_cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


@dataclass
class Section:
    key: str  # stable: "synthesis", "verdict", "consensus", "action_guide", …
    title: Text
    body: str
    part: str = "verdict"  # verdict | transcript
    empty: Text | None = None  # said when the body is empty (the section is always there)

    def as_dict(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "title": self.title.as_dict(),
            "body": self.body,
            "part": self.part,
            "empty": self.empty.as_dict() if self.empty else None,
        }


@dataclass
class ReportBuilder:
    ctx: Any  # DebateContext (not imported: context imports nothing from here, keep it one-way)
    title: str
    top_notes: list[Text] = field(default_factory=list)
    sections: list[Section] = field(default_factory=list)
    data: dict[str, Any] = field(default_factory=dict)

    def section(self, key: str, title: str, body: str, *, part: str = "verdict", empty: str | None = None) -> None:
        """Add a section; `title` and `empty` are msgids (`gettext_noop`)."""
        self.sections.append(Section(key, text(title), body or "", part, text(empty) if empty else None))

    async def emit(self, verdict_heading: str) -> None:
        await self._check_sources()
        data = dict(self.data)
        data.setdefault("topic_slug", topic_slug("", self.title, (self.ctx.spec.format, "debate")))
        data["heading"] = text(verdict_heading).as_dict()
        data["top_notes"] = [note.as_dict() for note in self.top_notes]
        data["sections"] = [s.as_dict() for s in self.sections]
        data["warnings"] = [warning_dict(w) for w in self.ctx.warnings]
        data["ledger"] = self.ctx.ledger.as_dict()
        titles = {**PHASE_TITLES, **self.ctx.format.phase_titles}
        data["phase_titles"] = {phase: text(msgid).as_dict() for phase, msgid in titles.items()}
        data["turns"] = [
            {
                "key": r.key,
                "round": r.round,
                "phase": r.phase,
                "speaker": r.speaker.slug,
                "speaker_name": r.speaker.name,
                "speaker_name_en": r.speaker.name_en,
                "summary": r.summary,
                "data": r.data,
            }
            for r in self.ctx.transcript()
        ]
        speeches = {r.key: r.text for r in self.ctx.transcript()}
        # The stored Markdown is in the debate's language, the speakers' names too.
        turns = [{**t, "speaker_name": named(t, self.ctx.lang), "text": speeches[t["key"]]} for t in data["turns"]]
        translate = self.ctx.translate
        verdict = render_verdict(self.title, data, translate)
        transcript = render_transcript(self.title, data, turns, translate)
        await self.ctx.emit(ev.Report(verdict, transcript, data))

    async def _check_sources(self) -> None:
        """Every format's report lists the evidence pack's sources and checks each citation of
        one: a source that is not in the pack, or words it does not hold, are marked."""
        pack = self.ctx.evidence
        if not pack.sources:
            return
        speeches = [(r.key, r.speaker.name, r.text) for r in self.ctx.transcript() if not r.key.startswith("search:")]
        claims = evidence.check(speeches, pack)
        bad = [c for c in claims if not c.ok]
        if bad:
            await self.ctx.warn(
                "sources_unverified",
                gettext_noop(
                    "%(count)d source citation(s) name a source the evidence pack does not hold, or quote words "
                    "that are not in it."
                ),
                count=len(bad),
            )
        self.data["evidence"] = pack.as_dict()
        self.data["source_checks"] = [c.as_dict() for c in claims]
        self.section("sources", gettext_noop("Sources"), sources_markdown(pack, claims, self.ctx.translate))


def sources_markdown(pack: evidence.EvidencePack, claims: list[evidence.Claim], translate: Translate) -> str:
    """The sources, each with where it came from and how often it was cited, then the citations
    that did not hold."""
    cited: dict[str, int] = {}
    for claim in claims:
        if claim.ok:
            cited[claim.source] = cited.get(claim.source, 0) + 1
    lines = []
    for source in pack.sources:
        where = evidence.md_link(source.title, source.url) if source.url else source.title
        facts = [source.published] if source.published else []
        if source.query:
            facts.append(translate("search: %(query)s") % {"query": source.query})
        if source.id in cited:
            facts.append(translate("cited %(count)d×") % {"count": cited[source.id]})
        lines.append(f"- **{source.id}** {where}" + (f" · {' · '.join(facts)}" if facts else ""))
    bad = [c for c in claims if not c.ok]
    if bad:
        lines.append("")
        lines.append(f"**{translate('Citations that do not hold')}**")
        for c in bad:
            quote = f" “{clip(c.quote, 60)}”" if c.quote else ""
            lines.append(f"- ⚠️ {c.speaker} → [{c.source}]{quote}: {translate(c.reason)}")
    return "\n".join(lines)


def _sources_from_data(data: Mapping, translate: Translate) -> str:
    pack = evidence.EvidencePack([evidence.Source.from_dict(s) for s in data["evidence"].get("sources", [])])
    names = evidence.Claim.__dataclass_fields__
    claims = [evidence.Claim(**{k: v for k, v in c.items() if k in names}) for c in data.get("source_checks", [])]
    return sources_markdown(pack, claims, translate)


def warning_dict(warning: ev.Warning) -> dict[str, Any]:
    message = warning.text if isinstance(warning.text, Text) else text(str(warning.text))
    return {"code": warning.code, "text": str(message), **message.as_dict()}


# -- Markdown, in any language -------------------------------------------------------------------


def _t(value: Mapping | str | None, translate: Translate) -> str:
    if value is None:
        return ""
    return Text.from_dict(value).render(translate)


def render_verdict(question: str, data: Mapping, translate: Translate, *, warnings: bool = True) -> str:
    """The verdict as Markdown; `warnings=False` where the page lists the warnings itself."""
    parts = [f"# {_t(data.get('heading'), translate)}", f"**{translate('Question')}**: {question}"]
    parts += [f"> {_t(note, translate)}" for note in data.get("top_notes", [])]
    noted = {n.get("msgid") for n in data.get("top_notes", []) if isinstance(n, Mapping)}
    warnings = [w for w in data.get("warnings", []) if w.get("msgid") not in noted] if warnings else []
    if warnings:
        lines = [_t(w if "msgid" in w else w.get("text", ""), translate) for w in warnings]
        parts.append("\n".join(f"> {line}" if line.startswith("⚠️") else f"> ⚠️ {line}" for line in lines))
    parts += _sections(data, "verdict", translate)
    return "\n\n".join(parts) + "\n"


def render_transcript(
    question: str, data: Mapping, turns: list[Mapping], translate: Translate, *, ledger: bool = True
) -> str:
    """The transcript as Markdown; `ledger=False` where the page shows the ledger as a table."""
    parts = [f"# {translate('Transcript')}\n\n**{translate('Question')}**: {question}"]
    parts += _sections(data, "transcript", translate)
    parts.append(f"## {translate('All speeches')}")
    titles = data.get("phase_titles", {})
    # An attempt a format had written again is folded under the turn that replaced it.
    for turn, discarded in fold_rewrites(turns, key=lambda t: t["key"]):
        phase = _t(titles.get(turn["phase"]), translate) or turn["phase"]
        # A turn outside the rounds (round 0: the host's, the closing) is named by its phase alone.
        # A phase whose title already names its round ("R1 · Blind positions") is not given it twice.
        label = translate("R%(n)d") % {"n": turn["round"]} if turn.get("round") else ""
        where = [label] if label and not re.match(rf"{re.escape(label)}(?!\d)", phase) else []
        heading = "### " + " · ".join([phase, *where, turn["speaker_name"]])
        body = [heading]
        if turn.get("thinking"):  # only when the reader asked for it: never part of the speech
            quoted = "\n".join(f"> {line}" for line in turn["thinking"].strip().splitlines())
            body.append(f"*{translate('Thinking')}*:\n\n{quoted}")
        # A speech's own headings ("## Key points") sit below its turn's "###", never above it.
        body.append(demote_headings(_shown(turn, question, with_summary=bool(turn.get("summary"))), below=3))
        if turn.get("summary"):
            body.append(f"*{translate('Summary')}*: {turn['summary']}")
        for n, attempt in enumerate(turn.get("earlier") or [], start=1):
            quoted = "\n".join(f"> {line}" for line in attempt.strip().splitlines())
            body.append(f"*{translate('Earlier attempt %(n)d') % {'n': n}}*:\n\n{quoted}")
        for attempt in discarded:
            quoted = "\n".join(f"> {line}" for line in _shown(attempt, question).splitlines())
            body.append(f"*{translate(DISCARDED)}*:\n\n{quoted}")
        parts.append("\n\n".join(body))
    if not ledger:
        return "\n\n".join(parts) + "\n"
    ledger = data.get("ledger", {})
    line = translate("Prompt %(prompt)d · completion %(completion)d · total %(total)d") % {
        "prompt": ledger.get("prompt_tokens", 0),
        "completion": ledger.get("completion_tokens", 0),
        "total": ledger.get("total", 0),
    }
    if ledger.get("reasoning_tokens"):
        line += " (" + translate("of which thinking: %(n)s") % {"n": ledger["reasoning_tokens"]} + ")"
    if ledger.get("estimated"):
        line += " " + translate("(partly estimated)")
    if ledger.get("cap"):
        line += " · " + translate("cap %(cap)d") % {"cap": ledger["cap"]}
    if "cost" in ledger:
        unknown = translate("(some prices unknown)") if ledger.get("cost_unknown") else ""
        line += (
            " · " + translate("cost $%(cost)s") % {"cost": f"{ledger['cost']:.4f}"} + (f" {unknown}" if unknown else "")
        )
    if research := ledger.get("research"):
        line += "\n\n" + translate(RESEARCH_LINE) % research
    parts.append(f"## {translate('Token ledger')}\n\n{line}")
    return "\n\n".join(parts) + "\n"


_ATX_HEADING = re.compile(r"^( {0,3})(#{1,6})(?=\s|$)")
_FENCE = re.compile(r"^ {0,3}(```|~~~)")


def demote_headings(markdown: str, below: int) -> str:
    """`markdown` with its headings moved down so the highest is one level under `below` (at most
    h6), fenced code left alone: text shown under a heading of level `below` never outranks it."""
    lines, fenced, levels = markdown.splitlines(), False, []
    for line in lines:
        if _FENCE.match(line):
            fenced = not fenced
        elif not fenced and (found := _ATX_HEADING.match(line)):
            levels.append(len(found.group(2)))
    shift = below + 1 - min(levels) if levels else 0
    if shift <= 0:
        return markdown
    out, fenced = [], False
    for line in lines:
        if _FENCE.match(line):
            fenced = not fenced
        elif not fenced:
            line = _ATX_HEADING.sub(lambda m: m.group(1) + "#" * min(6, len(m.group(2)) + shift), line)
        out.append(line)
    return "\n".join(out)


def _shown(turn: Mapping, question: str, *, with_summary: bool = False) -> str:
    """A turn's text as a reader sees it (`reading.shown_speech`); its summary line left out when
    the summary is printed beside it."""
    parts = (turn.get("data") or {}).get("parts")
    summary = turn.get("summary", "") if with_summary else ""
    return shown_speech(turn.get("text") or "", parts, summary=summary, question=question)


def _sections(data: Mapping, part: str, translate: Translate) -> list[str]:
    out = []
    for section in data.get("sections", []):
        if section.get("part", "verdict") != part:
            continue
        body = (section.get("body") or "").strip() or _t(section.get("empty"), translate) or "—"
        if section.get("key") == "sources" and "evidence" in data:  # data, so in the reader's language
            body = _sources_from_data(data, translate)
        out.append(f"## {_t(section['title'], translate)}\n\n{body}")
    return out


# The report's own words, so `makemessages` finds them (they are looked up by these msgids).
_WORDS = (
    gettext_noop("Question"),
    gettext_noop("Transcript"),
    gettext_noop("All speeches"),
    gettext_noop("R%(n)d"),
    gettext_noop("Summary"),
    gettext_noop("Prompt %(prompt)d · completion %(completion)d · total %(total)d"),
    gettext_noop("(partly estimated)"),
    gettext_noop("cap %(cap)d"),
    gettext_noop("Token ledger"),
    gettext_noop("of which thinking: %(n)s"),
    gettext_noop("Thinking"),
    gettext_noop("Earlier attempt %(n)d"),
    DISCARDED,
    gettext_noop("cost $%(cost)s"),
    gettext_noop("(some prices unknown)"),
    gettext_noop("search: %(query)s"),
    gettext_noop("cited %(count)d×"),
    gettext_noop("Citations that do not hold"),
    RESEARCH_LINE,
)
