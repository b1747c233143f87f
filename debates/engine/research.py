"""Research: searches whose pages join the evidence pack, within a budget, shown as turns.

A search is a turn of its own (key `search:…`): it starts, lists what it found as it goes, and
finishes with the sources it added, so the live page, the transcript and a resumed run treat it
like any other turn. A resumed run replays a finished search from its stored data (same sources,
same ids) and never searches again. A failed search fails its turn with the reason and the debate
goes on without it (research degrades softly; only the panel's investment rule stops a run with
no evidence at all).

The queries come from a model turn the format plans (the host from the question, Bayes from the
speeches he read): `query_form` and `read_queries` here, the plan in the format.
"""

from __future__ import annotations

import asyncio
import re
import time
from dataclasses import dataclass
from datetime import UTC, datetime

from debates.engine import events as ev
from debates.engine.context import DebateContext
from debates.engine.evidence import EXCERPT_LIMIT, Source, md_link
from debates.engine.i18n import gettext_noop, verbatim
from debates.engine.plans import host_plan
from debates.engine.spec import PersonaSpec
from debates.engine.structure import Form, Part
from debates.engine.text import bigrams, clip
from debates.engine.turns import TurnResult
from debates.providers.base import estimate_tokens
from debates.search.base import Result, SearchClient
from debates.search.errors import FetchFailed, FetchRefused, SearchError


@dataclass(frozen=True)
class Budget:
    queries: int  # searches the host writes
    results: int  # results read per search
    fetches: int  # pages fetched per search (the others keep the search's snippet)


BUDGETS = {"light": Budget(1, 3, 1), "standard": Budget(2, 4, 2), "deep": Budget(3, 5, 3)}
OWN_SEARCHES = 3


def budget_of(name: str) -> Budget:
    """The research budget a format's option names (standard when it names none it knows)."""
    return BUDGETS.get(name or "standard", BUDGETS["standard"])


QUERY_TOKENS = 200  # the most a debater may run of his own (the panel's Bayes in R2)
SKIPPED = gettext_noop(
    "Research skipped: this debate has no search provider (set one up with AGORA_SEARCH_BACKEND or under Search "
    "providers in the admin, then choose it on the start form); it uses only the material supplied."
)
NUMERALS = "一二三四五"
NO_QUERY = ("无", "none", "no", "不需要", "不检索")


def query_form(count: int, lang: str = "zh") -> Form:
    if lang == "en":
        return Form(tuple(Part(f"Query {i + 1}", chars=60) for i in range(count)), colon=": ")
    return Form(tuple(Part(f"检索{NUMERALS[i]}", chars=40) for i in range(count)))


def query_output(count: int, optional: bool = False, lang: str = "zh") -> str:
    if lang == "en":
        lines = "\n".join(f"Query {i + 1}: …" for i in range(count))
        skip = "Write “none” when no search is needed." if optional else ""
        return (
            f"Write at most {count} web search queries (short, keyword style), each on its own line:\n{lines}\n{skip}"
        )
    lines = "\n".join(f"检索{NUMERALS[i]}：…" for i in range(count))
    skip = "不需要检索时写“无”。" if optional else ""
    return f"写 {count} 条以内的网络检索词（关键词式，简短，可用英文），每条单独一行：\n{lines}\n{skip}"


_QUERY_LINE = re.compile(rf"^\s*[-*•]?\s*(?:检索|query|search)\s*[{NUMERALS}\d]*\s*[：:]\s*(?P<q>.+?)\s*$", re.I)


def read_queries(answer: str, count: int) -> list[str]:
    """The queries written, at most `count`, without repeats and without "无"."""
    found = []
    for line in answer.splitlines():
        match = _QUERY_LINE.match(line)
        query = clip(match.group("q").strip(" “”\"'「」"), 120) if match else ""
        if query and query.lower() not in NO_QUERY and query not in found:
            found.append(query)
    return found[:count]


def best_passage(page: str, query: str, limit: int = EXCERPT_LIMIT) -> str:
    """The run of paragraphs of `page` that shares most with the query, within `limit`."""
    page = page.strip()
    if len(page) <= limit:
        return page
    paragraphs = [p.strip() for p in re.split(r"\n\s*\n|\n", page) if p.strip()]
    words = bigrams(query)
    best, best_score = "", -1.0
    for start in range(len(paragraphs)):
        window = ""
        for paragraph in paragraphs[start:]:
            if window and len(window) + len(paragraph) + 1 > limit:
                break
            window = f"{window}\n{paragraph}" if window else paragraph
        score = len(words & bigrams(window)) if words else 0
        if score > best_score:
            best, best_score = window, score
    return clip(best, limit)


def _now() -> str:
    return datetime.now(UTC).replace(microsecond=0).isoformat()


def source_line(source: Source) -> str:
    """How a found source reads in the search's turn (Markdown, sanitised again by the page)."""
    date = f" · {source.published}" if source.published else ""
    link = md_link(source.title, source.url) if source.url else source.title
    return f"- **[{source.id}]** {link}{date}"


async def search(
    ctx: DebateContext,
    *,
    key: str,
    speaker: PersonaSpec,
    query: str,
    budget: Budget,
    round_no: int,
    phase: str,
    visible_from: int = 0,
) -> list[Source]:
    """One search as a turn: run it (or replay it), add what it found to the pack, return that."""
    if key not in ctx.order:
        ctx.order.append(key)
    done = ctx.spec.completed.get(key)
    if done is not None:
        return await _replay(ctx, key, speaker, round_no, phase, done)
    client: SearchClient = ctx.research
    await ctx.emit(
        ev.TurnStarted(
            key,
            round_no,
            phase,
            speaker.slug,
            speaker.name,
            [{"role": "search", "content": query}],  # what was sent: the query itself
            # Its name, never its address: the turn's model reaches every viewer's JSON export.
            model=f"{client.kind} · {client.name}",
        )
    )
    started = time.monotonic()
    try:
        results = await client.search(query, budget.results)
    except SearchError as error:
        ctx.ledger.research_charge(searches=1, seconds=time.monotonic() - started)
        await ctx.emit(ev.TurnFailed(key, str(error)))
        # The reason stays on the turn, where each viewer reads it as they may (a search
        # server's address is for staff only); warnings reach every viewer as they are.
        await ctx.warn(
            "search_failed",
            gettext_noop("The search “%(query)s” failed (the reason is on its turn); the debate went on without it."),
            query=verbatim(query),
        )
        return []
    lines = []
    for result in results:
        line = f"- {md_link(result.title, result.url)}\n"
        lines.append(line)
        await ctx.emit(ev.TextDelta(key, line))
    known = {s.url: s for s in ctx.evidence.sources if s.url}
    fresh = [r for r in results if r.url not in known]  # a page another search found keeps its id
    pages, fetch_errors = await _fetch_some(client, fresh[: budget.fetches])
    found, fetched_tokens = [known[r.url] for r in results if r.url in known], 0
    for result in fresh:
        page = pages.get(result.url)
        fetched_tokens += estimate_tokens(page.text) if page else 0
        excerpt = best_passage(page.text, f"{query} {ctx.spec.question}") if page else result.snippet
        if not excerpt.strip():
            continue
        found.append(
            ctx.evidence.add(
                (page.title if page and page.title else result.title),
                excerpt,
                origin="search",
                url=result.url,
                retrieved_at=_now(),
                query=query,
                published=result.published,
                visible_from=visible_from,
            )
        )
    seconds = time.monotonic() - started
    ctx.ledger.research_charge(searches=1, fetches=len(pages), seconds=seconds, fetched_tokens=fetched_tokens)
    data = {
        "research": {
            "query": query,
            "sources": [s.as_dict() for s in found],
            "results": len(results),
            "fetched": len(pages),
            "fetch_errors": fetch_errors,
            "seconds": round(seconds, 2),
            "fetched_tokens": fetched_tokens,
        }
    }
    return await _finish(ctx, key, speaker, round_no, phase, found, data)


async def _fetch_some(client: SearchClient, results: list[Result]) -> tuple[dict, list[dict]]:
    outcomes = await asyncio.gather(*(client.fetch(r.url) for r in results), return_exceptions=True)
    pages, errors = {}, []
    for result, outcome in zip(results, outcomes, strict=True):
        if isinstance(outcome, FetchRefused | FetchFailed | SearchError):
            errors.append({"url": result.url, "error": clip(str(outcome), 300)})
        elif isinstance(outcome, BaseException):
            raise outcome
        elif outcome.text.strip():
            pages[result.url] = outcome
    return pages, errors


def _turn_text(found: list[Source]) -> str:
    return "\n".join(source_line(s) for s in found)


async def _finish(ctx, key, speaker, round_no, phase, found, data, *, replayed=False) -> list[Source]:
    body = _turn_text(found)
    ctx.results[key] = TurnResult(key, speaker, round_no, phase, body, "", data, replayed=replayed)
    await ctx.emit(ev.TurnFinished(key, body, "", 0, 0, data=data, replayed=replayed))
    return found


async def _replay(ctx, key, speaker, round_no, phase, done) -> list[Source]:
    research = done.data.get("research", {})
    found = [ctx.evidence.add(**_source_fields(s)) for s in research.get("sources", [])]
    ctx.ledger.research_charge(
        searches=1,
        fetches=research.get("fetched", 0),
        seconds=research.get("seconds", 0.0),
        fetched_tokens=research.get("fetched_tokens", 0),
    )
    return await _finish(ctx, key, speaker, round_no, phase, found, dict(done.data), replayed=True)


def _source_fields(stored: dict) -> dict:
    fields = dict(stored)
    return {"title": fields.pop("title", ""), "text": fields.pop("excerpt", ""), **fields}


async def run_queries(
    ctx: DebateContext,
    *,
    prefix: str,
    speaker: PersonaSpec,
    queries: list[str],
    budget: Budget,
    round_no: int,
    phase: str,
    visible_from: int = 0,
) -> list[Source]:
    """The queries one after another (a search service rate-limits bursts); all they found."""
    found = []
    for n, query in enumerate(queries, start=1):
        found += await search(
            ctx,
            key=f"{prefix}:{n}",
            speaker=speaker,
            query=query,
            budget=budget,
            round_no=round_no,
            phase=phase,
            visible_from=visible_from,
        )
    return found


async def build_pack(
    ctx: DebateContext, host: PersonaSpec, budget: Budget, task: str, *, exempt: bool = False
) -> list[str]:
    """The research step before the first round: a Research phase, the host's queries from the
    question (the question itself when the answer holds none), their searches. The queries run."""
    await ctx.phase(0, "research", gettext_noop("Research"))
    asked = await ctx.turn(
        host_plan(
            ctx,
            host,
            "host:queries",
            task=task,
            round_no=0,
            output=query_output(budget.queries, lang=ctx.lang),
            exempt=exempt,
            max_tokens=QUERY_TOKENS,  # a few short lines, whatever the format gives its host
            form=query_form(budget.queries, lang=ctx.lang),
        )
    )
    queries = read_queries(asked.text, budget.queries) or [clip(ctx.spec.question, 80)]
    await run_queries(
        ctx, prefix="search:pack", speaker=host, queries=queries, budget=budget, round_no=0, phase="search"
    )
    return queries


async def skipped(ctx: DebateContext) -> None:
    await ctx.warn("research_skipped", SKIPPED)


def described(found: list[Source], lang: str = "zh") -> str:
    """The sources a speaker's own searches found, for that speaker's next prompt."""
    where = (lambda s: f" ({s.where})") if lang == "en" else (lambda s: f"（{s.where}）")
    return "\n\n".join(f"[{s.id}] {s.title}{where(s)}\n{clip(s.excerpt, 800)}" for s in found)
