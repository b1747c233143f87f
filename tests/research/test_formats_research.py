"""Research in the other formats: the roundtable's deep mode and the moderated debate's optional
pack search before the first round (through the real SearxNG client and the loopback fake); the
duel never searches; without a search provider each says research was skipped."""

from __future__ import annotations

import pytest

from debates.engine import events as ev
from debates.search.fetch import PageFetcher
from debates.search.searxng import SearxngClient
from testkit.fake_llm import FakeLLM
from testkit.fake_search import FakeSearchServer
from tests.engine.conftest import (
    DEVIL,
    LLM_ARCH,
    OPTIMIST,
    RAG,
    USER_ADVOCATE,
    debate,
    duel_spec,
    moderated_spec,
    table_spec,
)

DEEP_TABLE = [DEVIL, OPTIMIST, USER_ADVOCATE, RAG, LLM_ARCH]


@pytest.fixture(scope="module")
def search_server():
    with FakeSearchServer() as server:
        server.add_page("rag", "RAG for customer support", "A knowledge base cut support tickets by a fifth.")
        server.add_page("sales", "Product first or sales first", "Most small firms that sold first grew faster.")
        yield server


@pytest.fixture
async def searx(search_server):
    search_server.reset()
    client = SearxngClient(search_server.base_url, timeout=5.0, fetcher=PageFetcher(["127.0.0.0/8"]))
    yield client
    await client.aclose()


def search_turns(run) -> list[ev.TurnStarted]:
    return [t for t in run.sink.of(ev.TurnStarted) if t.phase == "search"]


async def test_the_roundtable_researches_in_deep_mode_before_round_one(search_server, searx):
    fake = FakeLLM().reply("host:queries", "检索一：RAG support\n检索二：knowledge base tickets\n检索三：small firms")
    run = await debate(table_spec(roles=DEEP_TABLE, mode="deep", force=True, no_interrupt=True), fake, research=searx)
    assert run.outcome == "done"
    searched = search_turns(run)
    assert [t.key for t in searched] == ["search:pack:1", "search:pack:2", "search:pack:3"]  # deep: 3 queries
    assert len(search_server.searches) == 3
    order = run.started_keys()
    assert order.index("search:pack:3") < min(order.index(k) for k in order if k.startswith("r1:"))
    assert "[S1] RAG for customer support" in run.calls_for("r1:*")[0].user
    assert {s["url"] for s in run.data["evidence"]["sources"]} == {
        p and search_server.page_url(p) for p in ("rag", "sales")
    }


async def test_the_roundtable_in_standard_mode_does_not_search(search_server, searx):
    run = await debate(table_spec(force=True, no_interrupt=True), research=searx)
    assert run.outcome == "done" and not search_turns(run) and not search_server.searches
    assert "research_skipped" not in run.warning_codes  # nothing called for research


async def test_a_deep_roundtable_without_search_says_so_and_keeps_its_host_notes():
    run = await debate(table_spec(roles=DEEP_TABLE, mode="deep", force=True, no_interrupt=True))
    assert run.outcome == "done" and "research_skipped" in run.warning_codes
    assert run.calls_for("host:research")  # the facts to verify, listed by the host as before
    assert not search_turns(run)


@pytest.mark.parametrize("research", [True, False])
async def test_the_moderated_debate_searches_only_when_asked(search_server, searx, research):
    fake = FakeLLM().reply("host:queries", "检索一：sales first\n检索二：product first")
    run = await debate(moderated_spec(research=research, rounds=1), fake, research=searx)
    assert run.outcome == "done"
    assert len(search_turns(run)) == (2 if research else 0)  # the standard budget's two queries
    assert len(search_server.searches) == (2 if research else 0)
    if research:
        first_speech = next(c for c in run.calls if c.key and not c.key.startswith(("host:", "search:")))
        assert "[S1]" in first_speech.user


async def test_the_duel_never_searches(search_server, searx):
    run = await debate(duel_spec(), research=searx)
    assert run.outcome == "done" and not search_turns(run) and not search_server.searches
    assert "research_skipped" not in run.warning_codes
