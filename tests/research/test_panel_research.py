"""Research in the engine, against the loopback fake search server through the real SearxNG
client: the panel's evidence pack, Bayes' own searches in R2, source citations checked in the
report, resume without searching again, failures, and what happens with no search at all."""

from __future__ import annotations

import re

import pytest

from debates import documents
from debates.engine import events as ev
from debates.engine import evidence
from debates.search.fetch import PageFetcher
from debates.search.searxng import SearxngClient
from testkit.documents import make_pdf
from testkit.fake_llm import Counted, FakeLLM
from testkit.fake_search import FakeSearchServer
from tests.engine.conftest import debate, panel_spec
from tests.engine.test_panel import CONCEPTS, REBUTTAL, ROOMY_BASELINE, VERDICT, default_speech, slug_and_round

QUESTION = "我们是否应该在 2026 年买入英伟达股票？"
ADMIT_INVESTMENT = "类型：投资决策型\n可证伪：是\n理由：可以用财报数据检验。\n话题标识：nvidia-stock-buy-decision"
PAGES = {
    "nvda-revenue": (
        "Nvidia fiscal 2025 revenue",
        "Nvidia reported revenue of 130.5 billion dollars for fiscal 2025, up 114 percent from a year earlier.\n\n"
        "Data center revenue was 115.2 billion dollars, driven by demand for accelerated computing.",
    ),
    "nvda-valuation": (
        "Nvidia valuation and forward earnings",
        "The stock trades at about 45 times forward earnings, above its five year median.\n\n"
        "Analysts disagree on whether margins can hold as competitors ship custom chips.",
    ),
    "ai-capex": (
        "Hyperscaler capital expenditure",
        "Microsoft, Alphabet, Amazon and Meta plan to spend over 300 billion dollars on capital expenditure "
        "in 2025, most of it on data centers.",
    ),
}


@pytest.fixture(scope="module")
def search_server():
    with FakeSearchServer() as server:
        for slug, (title, text) in PAGES.items():
            server.add_page(slug, title, text)
        yield server


@pytest.fixture
async def searx(search_server):
    search_server.reset()
    # The fake listens on loopback, which the fetcher refuses unless the operator allows it.
    client = SearxngClient(search_server.base_url, timeout=5.0, fetcher=PageFetcher(["127.0.0.0/8"]))
    yield client
    await client.aclose()


def first_source_quote(prompt: str, source_id: str = "S1") -> str:
    """Twelve words of the excerpt the prompt shows for `source_id`, as a speaker would quote."""
    match = re.search(rf"\[{source_id}\][^\n]*\n([^\n]+)", prompt)
    assert match, f"{source_id} is not in the prompt"
    return " ".join(match.group(1).split()[:12])


def research_fake(**extra) -> FakeLLM:
    fake = FakeLLM()
    fake.reply("host:admission", ADMIT_INVESTMENT)
    fake.reply("host:baseline", Counted("基线", prompt_tokens=ROOMY_BASELINE))  # a cap with room for R2
    fake.reply("host:queries", "检索一：Nvidia fiscal 2025 revenue\n检索二：Nvidia valuation forward earnings")
    fake.reply("host:concepts", CONCEPTS)
    fake.reply("host:aggregate2", "- 盲区：执行成本。")
    fake.reply("host:verdict", VERDICT)
    fake.reply("r2:queries:bayes", "检索一：hyperscaler capital expenditure 2025\n检索二：无\n检索三：无")
    # Bayes cites what his R1 prompt shows of S1, word for word; Feynman invents S9; Hegel
    # misquotes S1.
    fake.reply(
        "r1:bayes",
        lambda call: default_speech("bayes", 1).replace(
            "核心论据：", f"核心论据：财报显示 [S1]“{first_source_quote(call.user)}”。"
        ),
    )
    invented = "反驳：据 [S9]“利润率将翻倍”，前提不成立。"
    fake.reply("r2:feynman", default_speech("feynman", 2).replace(REBUTTAL, invented))
    fake.reply("r2:hegel", default_speech("hegel", 2).replace(REBUTTAL, "反驳：[S1]“英伟达明年营收必然翻三倍”。"))
    for key, reply in extra.items():
        fake.queued[key] = [reply]  # instead of the reply above
    fake.reply("r?:*", lambda call: default_speech(*slug_and_round(call.key)))
    return fake


async def test_panel_builds_its_pack_from_searches_and_checks_every_source_citation(search_server, searx):
    run = await debate(panel_spec(QUESTION), research_fake(), research=searx)

    assert run.outcome == "done", run.finished
    pack = run.data["evidence"]["sources"]
    urls = {search_server.page_url(slug) for slug in PAGES}
    assert pack and {s["url"] for s in pack} <= urls  # the fake's pages, nothing else
    assert [s["id"] for s in pack] == [f"S{n}" for n in range(1, len(pack) + 1)]
    assert all(s["origin"] == "search" and s["retrieved_at"] and s["query"] for s in pack)
    # Every prompt from R1 on carries the pack and the rule to cite it.
    r1 = run.call("r1:osborn").user
    assert "[S1]" in r1 and evidence.CITE_RULE in r1

    # The host's two searches before R1, then Bayes' own (one query; "无" is no query).
    searches = [t for t in run.sink.of(ev.TurnStarted) if t.phase == "search"]
    assert [(t.key, t.speaker) for t in searches] == [
        ("search:pack:1", "cicero"),
        ("search:pack:2", "cicero"),
        ("search:r2:bayes:1", "bayes"),
    ]
    assert [s.query["q"] for s in search_server.searches] == [
        "Nvidia fiscal 2025 revenue",
        "Nvidia valuation forward earnings",
        "hyperscaler capital expenditure 2025",
    ]
    assert run.data["ledger"]["research"]["searches"] == 3
    assert run.data["ledger"]["research"]["fetches"] >= 1
    # Shown live: each result streams into its search turn before the turn finishes.
    deltas = "".join(d.text for d in run.sink.of(ev.TextDelta) if d.key == "search:r2:bayes:1")
    assert search_server.page_url("ai-capex") in deltas

    # Bayes' find reaches his R2 prompt at once and everyone else's from R3 on, not in R2.
    capex = next(s for s in pack if s["url"].endswith("ai-capex"))
    assert capex.get("visible_from") == 3 or capex["query"] != "hyperscaler capital expenditure 2025"
    assert "300 billion" in run.call("r2:bayes").user
    if capex.get("visible_from") == 3:
        assert f"[{capex['id']}]" not in run.call("r2:osborn").user
        assert f"[{capex['id']}]" in run.call("r3:osborn").user

    checks = {(c["turn"], c["source"]): c for c in run.data["source_checks"]}
    assert checks[("r1:bayes", "S1")]["ok"] is True
    assert (checks[("r2:feynman", "S9")]["ok"], checks[("r2:feynman", "S9")]["reason"]) == (
        False,
        evidence.NO_SUCH_SOURCE,
    )
    assert checks[("r2:hegel", "S1")]["reason"] == evidence.NOT_IN_SOURCE
    assert "sources_unverified" in run.warning_codes
    # The report lists the sources with their addresses and marks the citations that do not hold.
    verdict = run.report.verdict_markdown
    assert f"**S1** [{pack[0]['title']}]({pack[0]['url']})" in verdict
    assert re.search(r"⚠️ 费曼 → \[S9\] “利润率将翻倍”", verdict)


async def test_a_resumed_panel_replays_its_searches_without_searching_again(search_server, searx):
    first = await debate(panel_spec(QUESTION), research_fake(), research=searx)
    searched = len(search_server.searches)
    spec = panel_spec(QUESTION)
    spec.completed = first.completed()
    again = await debate(spec, research_fake(), research=searx)

    assert again.outcome == "done"
    assert len(search_server.searches) == searched  # nothing searched twice
    assert again.data["evidence"] == first.data["evidence"]  # same sources, same ids
    assert again.data["ledger"]["research"]["searches"] == first.data["ledger"]["research"]["searches"]


async def test_a_failed_search_fails_its_turn_and_an_investment_without_evidence_stops(search_server, searx):
    search_server.fail_next("500", times=2)
    run = await debate(panel_spec(QUESTION), research_fake(), research=searx)

    failed = run.sink.of(ev.TurnFailed)
    assert [f.key for f in failed] == ["search:pack:1", "search:pack:2"]
    assert "500" in failed[0].error
    assert run.warning_codes.count("search_failed") == 2
    assert run.outcome == "refused"
    assert "research found no sources" in run.finished.reason
    assert not run.calls_for("r1:*")  # nobody debated


async def test_without_a_search_provider_research_is_skipped_and_said(search_server):
    run = await debate(
        panel_spec("我们团队是否应该在明年全面转向远程办公？"),
        research_fake(
            **{
                "host:admission": "类型：选择决策型\n可证伪：是\n理由：可检验。\n话题标识：remote-work-choice",
                "r1:bayes": default_speech("bayes", 1),
            }
        ),
    )
    assert run.outcome == "done"
    assert "research_skipped" in run.warning_codes and "no_evidence" in run.warning_codes
    assert not [t for t in run.sink.of(ev.TurnStarted) if t.phase == "search"]
    assert not run.calls_for("r2:queries:*") and not run.calls_for("host:queries")
    assert "evidence" not in run.data  # nothing to list


async def test_uploaded_documents_become_sources_that_speeches_cite():
    pdf = documents.extract("filing.pdf", make_pdf(["Revenue grew 114 percent in fiscal 2025.", "Risk factors."]))
    notes = documents.extract("notes.md", b"# Margins\n\nGross margin was 75 percent last year.")
    spec = panel_spec(QUESTION, documents=[documents.as_option(pdf), documents.as_option(notes)])
    fake = research_fake(
        **{
            "r1:bayes": default_speech("bayes", 1).replace(
                "核心论据：", "核心论据：[S1]“Revenue grew 114 percent”，而 [S3]“Gross margin was 75 percent”。"
            )
        }
    )
    run = await debate(spec, fake)

    assert run.outcome == "done"  # an investment question with documents has its evidence
    sources = run.data["evidence"]["sources"]
    assert [(s["id"], s["title"], s["file"]) for s in sources] == [
        ("S1", "filing.pdf · p. 1", "filing.pdf"),
        ("S2", "filing.pdf · p. 2", "filing.pdf"),
        ("S3", "notes.md · Margins", "notes.md"),
    ]
    assert all(s["origin"] == "document" for s in sources)
    assert {(c["source"], c["ok"]) for c in run.data["source_checks"] if c["turn"] == "r1:bayes"} == {
        ("S1", True),
        ("S3", True),
    }
    assert "**S3** notes.md · Margins" in run.report.verdict_markdown
    assert "Gross margin" in run.call("r1:osborn").user


def test_pasted_material_is_cut_into_sources_the_quote_check_can_read_whole():
    paragraphs = [f"第{n}段材料。" + "数据" * 300 for n in range(1, 6)]
    pack = evidence.pack_from_options("\n\n".join(paragraphs), [])
    assert len(pack.sources) >= 3
    assert all(len(s.excerpt) <= evidence.EXCERPT_LIMIT for s in pack.sources)
    assert "".join(s.excerpt for s in pack.sources).count("段材料") == 5  # nothing lost between pieces
    claims = evidence.check([("r1:x", "X", f"[{pack.sources[-1].id}]“第5段材料”")], pack)
    assert claims[0].ok


def test_the_prompt_shows_the_sources_nearest_the_question_in_full_and_the_rest_by_title():
    pack = evidence.EvidencePack()
    for n in range(12):
        pack.add(f"page {n}", ("remote work productivity " if n == 7 else "unrelated filler ") * 60, origin="search")
    shown = pack.prompt_text("remote work productivity", limit=1500)
    assert "[S8] page 7\nremote work productivity" in shown  # the relevant one keeps its excerpt
    assert "[S1] page 0\nunrelated" not in shown and "[S1] page 0" in shown  # the others by title
    # The user's own material is shown whole and before any page, however unrelated it looks.
    pack.add("material", "    indented, as pasted\n\n" + "x" * 900)
    shown = pack.prompt_text("remote work productivity", limit=1500)
    assert "[S13] material\n    indented, as pasted\n\n" + "x" * 900 in shown
    assert "[S8] page 7\nremote" not in shown


def test_source_links_cannot_break_out_of_their_markdown():
    link = evidence.md_link("a] (javascript:alert(1)) [b", "https://example.com/x (y)")
    assert link == r"[a\] (javascript:alert(1)) \[b](https://example.com/x%20%28y%29)"
    assert evidence.md_link("t", "javascript:alert(1)") == "t"


@pytest.mark.parametrize(
    ("answer", "queries"),
    [
        ("检索一：Nvidia revenue\n检索二：无\n检索三：Nvidia revenue", ["Nvidia revenue"]),
        ("query 1: a b\n- 检索二：“c d”", ["a b", "c d"]),
        ("随便说点什么", []),
    ],
)
def test_queries_are_read_off_labelled_lines_without_repeats_or_none(answer, queries):
    from debates.engine.research import read_queries

    assert read_queries(answer, 3) == queries
