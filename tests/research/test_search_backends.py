"""Both search backends against the fake search server: results, keys, and every failure mapped
to an error whose message tells the user what to do."""

from __future__ import annotations

import socket
import time

import pytest

from debates.search import backends
from debates.search.brave import BraveClient
from debates.search.errors import (
    FetchRefused,
    SearchBadResponse,
    SearchError,
    SearchRateLimited,
    SearchTimeout,
    SearchUnavailable,
)
from debates.search.fetch import PageFetcher
from debates.search.searxng import SearxngClient
from testkit.fake_search import FakeSearchServer

BRAVE_KEY = "brave-test-key-123"
LOOPBACK = ("127.0.0.1/32",)  # the fake runs on loopback, which fetches refuse by default


@pytest.fixture(scope="module")
def server():
    with FakeSearchServer(api_key=BRAVE_KEY) as fake:
        fake.add_page(
            "tides",
            "Why the tides turn twice a day",
            "The moon's gravity pulls the ocean toward it, raising a bulge of water.\n\n"
            "A second bulge forms on the far side, so most coasts see two high tides a day.",
            published="2026-03-01",
        )
        fake.add_page(
            "trees",
            "How street trees cool a city",
            "Shade from street trees lowers pavement temperatures on summer afternoons.\n\n"
            "Trees also cool the air by evaporating water through their leaves.",
            published="",
        )
        fake.add_page(
            "week",
            "What the four-day week trials found",
            "Companies tried a four-day working week without cutting pay; most kept their output.",
            published="2025-11-20",
        )
        fake.add_page(
            "chao", "潮汐为什么一天两次", "月球的引力拉动海水，在地球两侧形成两个隆起。", published="2026-01-05"
        )
        yield fake


@pytest.fixture(autouse=True)
def clean(server):
    server.reset()
    yield
    server.reset()


def searxng(server: FakeSearchServer, **kwargs) -> SearxngClient:
    kwargs.setdefault("fetcher", PageFetcher(LOOPBACK))
    return SearxngClient(server.base_url, **kwargs)


def brave(server: FakeSearchServer, key: str | None = BRAVE_KEY, **kwargs) -> BraveClient:
    kwargs.setdefault("fetcher", PageFetcher(LOOPBACK))
    return BraveClient(key, base_url=server.brave_base_url, **kwargs)


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# -- results ----------------------------------------------------------------------------------


async def test_searxng_results_best_first_with_dates(server):
    client = searxng(server)
    results = await client.search("why do tides turn", n=5)
    await client.aclose()
    assert results[0].title == "Why the tides turn twice a day"
    assert results[0].url == server.page_url("tides")
    assert results[0].snippet.startswith("The moon's gravity pulls the ocean")
    assert results[0].published == "2026-03-01"
    assert len(results) == 1  # only the tides page shares a word with the query
    sent = server.searches[-1]
    assert sent.api == "searxng"
    assert sent.query == {"q": "why do tides turn", "format": "json", "pageno": "1"}
    assert "authorization" not in sent.headers


async def test_searxng_respects_n_and_missing_dates(server):
    client = searxng(server)
    results = await client.search("zebra crossing", n=2)  # matches nothing: the fake returns every page
    await client.aclose()
    assert [r.url for r in results] == [server.page_url("tides"), server.page_url("trees")]
    assert results[1].published == ""  # publishedDate null


async def test_searxng_trailing_slash_and_bearer_key(server):
    client = SearxngClient(server.base_url + "/", api_key="proxy-key", fetcher=PageFetcher(LOOPBACK))
    results = await client.search("street trees")
    await client.aclose()
    assert results[0].url == server.page_url("trees")
    assert server.searches[-1].path == "/search"
    assert server.searches[-1].headers["authorization"] == "Bearer proxy-key"
    assert client.describe() == f"searxng · {server.base_url}"
    assert "proxy-key" not in client.describe() + repr(client)


async def test_chinese_query_matches_by_bigram(server):
    client = searxng(server)
    results = await client.search("潮汐是怎么形成的", n=5)
    await client.aclose()
    assert [r.title for r in results] == ["潮汐为什么一天两次"]
    assert results[0].published == "2026-01-05"


async def test_brave_results_tags_stripped_and_key_sent(server):
    client = brave(server)
    results = await client.search("moon tides", n=3)
    await client.aclose()
    assert results[0].title == "Why the tides turn twice a day"
    # The fake wraps the matched word in <strong> and escapes the apostrophe, as Brave does.
    assert results[0].snippet.startswith("The moon's gravity pulls")
    assert "<" not in results[0].snippet and "&#" not in results[0].snippet
    assert results[0].published == "2026-03-01"
    sent = server.searches[-1]
    assert sent.api == "brave"
    assert sent.headers["x-subscription-token"] == BRAVE_KEY
    assert sent.headers["accept"] == "application/json"
    assert sent.query == {"q": "moon tides", "count": "3"}
    assert client.describe() == f"brave · {server.brave_base_url}"
    assert BRAVE_KEY not in client.describe() + repr(client)


async def test_brave_respects_n(server):
    client = brave(server)
    results = await client.search("nothing matches this", n=2)
    await client.aclose()
    assert len(results) == 2
    assert server.searches[-1].query["count"] == "2"


# -- keys and configuration -----------------------------------------------------------------


async def test_brave_wrong_key_is_unavailable_and_says_which_variable(server):
    client = brave(server, key="wrong-key-456")
    with pytest.raises(SearchUnavailable) as caught:
        await client.search("tides")
    await client.aclose()
    message = str(caught.value)
    assert "BRAVE_API_KEY" in message and "401" in message
    assert "wrong-key-456" not in message
    assert not caught.value.retryable


async def test_brave_missing_key_fails_before_any_request(server):
    client = brave(server, key=None)
    with pytest.raises(SearchUnavailable, match="set BRAVE_API_KEY"):
        await client.search("tides")
    assert server.searches == []


async def test_searxng_json_disabled_says_how_to_enable(server):
    server.json_enabled = False
    client = searxng(server)
    with pytest.raises(SearchUnavailable) as caught:
        await client.search("tides")
    await client.aclose()
    assert "403" in str(caught.value)
    assert "search.formats: [html, json]" in str(caught.value)


async def test_build_makes_each_backend_and_requires_a_searxng_url(server):
    client = backends.build("brave", base_url="", api_key="k", timeout=3, allowed_networks=["10.0.0.0/8"], name="web")
    assert isinstance(client, BraveClient)
    assert client.base_url == "https://api.search.brave.com/res/v1"
    assert client.name == "web" and client.timeout == 3
    assert client.fetcher.allowed_networks == ("10.0.0.0/8",)
    with pytest.raises(ValueError, match="needs a base URL"):
        backends.build("searxng", base_url="", api_key=None, timeout=3, allowed_networks=(), name="s")
    with pytest.raises(ValueError, match="unknown search backend"):
        backends.build("bing", base_url="", api_key=None, timeout=3, allowed_networks=(), name="b")
    client = backends.build("searxng", base_url=server.base_url, api_key=None, timeout=3, allowed_networks=(), name="s")
    assert [r.url for r in await client.search("four-day week", n=1)] == [server.page_url("week")]
    await client.aclose()


async def test_empty_query_is_refused_without_a_request(server):
    client = searxng(server)
    with pytest.raises(SearchError, match="empty"):
        await client.search("   ")
    assert server.searches == []


# -- failures ---------------------------------------------------------------------------------


@pytest.mark.parametrize("make", [searxng, brave])
async def test_rate_limit_carries_retry_after(server, make):
    server.fail_next("429")
    client = make(server)
    with pytest.raises(SearchRateLimited) as caught:
        await client.search("tides")
    assert caught.value.retry_after == 2
    assert caught.value.retryable
    assert "429" in str(caught.value) and "2 s" in str(caught.value)
    # The fault was used up: the next search succeeds.
    assert await client.search("tides")
    await client.aclose()


@pytest.mark.parametrize("make", [searxng, brave])
async def test_server_error_is_unavailable(server, make):
    server.fail_next("500")
    client = make(server)
    with pytest.raises(SearchUnavailable, match="HTTP 500"):
        await client.search("tides")
    await client.aclose()


@pytest.mark.parametrize("make", [searxng, brave])
async def test_hang_times_out_within_the_clients_timeout(server, make):
    server.fail_next("hang")
    client = make(server, timeout=0.5)
    started = time.monotonic()
    with pytest.raises(SearchTimeout) as caught:
        await client.search("tides")
    elapsed = time.monotonic() - started
    await client.aclose()
    assert 0.4 <= elapsed < 2.0
    assert "0.5 s" in str(caught.value)
    assert caught.value.retryable
    assert len(server.searches) == 1


@pytest.mark.parametrize("make", [searxng, brave])
async def test_junk_body_is_a_bad_response(server, make):
    server.fail_next("junk")
    client = make(server)
    with pytest.raises(SearchBadResponse, match="not JSON"):
        await client.search("tides")
    await client.aclose()


async def test_connection_refused_searxng_says_to_check_it_runs():
    client = SearxngClient(f"http://127.0.0.1:{closed_port()}")
    with pytest.raises(SearchUnavailable) as caught:
        await client.search("tides")
    await client.aclose()
    assert "could not reach SearxNG" in str(caught.value)
    assert "search.formats: [html, json]" in str(caught.value)


async def test_connection_refused_brave():
    client = BraveClient(BRAVE_KEY, base_url=f"http://127.0.0.1:{closed_port()}/res/v1")
    with pytest.raises(SearchUnavailable, match="could not reach Brave Search"):
        await client.search("tides")
    await client.aclose()


# -- reading a result -------------------------------------------------------------------------


@pytest.mark.parametrize("make", [searxng, brave])
async def test_fetch_through_a_client_returns_readable_text(server, make):
    client = make(server)
    [result] = await client.search("street trees", n=1)
    page = await client.fetch(result.url)
    await client.aclose()
    assert page.url == page.final_url == result.url
    assert page.title == "How street trees cool a city"
    assert "Shade from street trees lowers pavement temperatures" in page.text
    assert "evaporating water through their leaves" in page.text
    assert "The Fake Gazette" not in page.text  # header, nav and footer are dropped
    assert "Most read" not in page.text


async def test_default_fetcher_refuses_a_loopback_result(server):
    client = SearxngClient(server.base_url)  # the search endpoint may be local; result pages may not
    [result] = await client.search("street trees", n=1)
    before = server.connections
    with pytest.raises(FetchRefused, match="loopback"):
        await client.fetch(result.url)
    await client.aclose()
    assert server.connections == before
