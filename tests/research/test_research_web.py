"""Research as a user meets it: documents uploaded on the start form, the server's search chosen
there, the searches arriving live over the WebSocket, the sources in the report and the exports;
errors beside their fields; the admin's search providers."""

from __future__ import annotations

import asyncio
import html as html_lib
import json
import re

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from agora.asgi import application
from debates import runner
from debates.models import Debate, SearchProvider
from testkit.documents import make_pdf
from testkit.fake_search import FakeSearchServer
from testkit.form_model import follow_form
from tests.web.formpage import errors_in
from tests.web.pagemodel import PageModel

PANEL_QUESTION = "我们是否应该在明年买入远程办公软件公司的股票？"
PDF_LINE = "Remote teams shipped 18 percent more features in 2025."


@pytest.fixture(scope="module")
def search_server():
    with FakeSearchServer() as server:
        server.add_page(
            "remote-study",
            "Remote work productivity study",
            "A two year study of 16,000 workers found remote work raised productivity by 13 percent.\n\n"
            "Promotions fell for remote staff, which the authors tie to less visibility.",
        )
        server.add_page(
            "office-return",
            "Return to office mandates",
            "Companies that ordered a return to the office saw no gain in profits, a 2025 survey says.",
        )
        yield server


@pytest.fixture
def server_search(search_server, settings):
    """The environment's search: SearxNG at the fake, whose pages (on loopback) may be fetched."""
    search_server.reset()
    settings.AGORA_SEARCH_BACKEND = "searxng"
    settings.AGORA_SEARCH_URL = search_server.base_url
    settings.AGORA_FETCH_ALLOWED_NETWORKS = ["127.0.0.0/8"]
    return search_server


def answer(body: dict) -> str | None:
    """The fake model's answers where a debate with research needs a structured one: queries
    for the host and Bayes, and Bayes citing the uploaded PDF; the fake's own text elsewhere."""
    messages = body.get("messages") or []
    system, user = messages[0]["content"], messages[-1]["content"]
    if "可证伪：是 / 否" in user:  # admission: an investment decision
        return "类型：投资决策型\n可证伪：是\n理由：可以用财报检验。\n话题标识：remote-software-stock-buy"
    if "网络检索词" in user:
        return "检索一：remote work productivity\n检索二：无\n检索三：无"
    if "你是「贝叶斯」" in system and "盲立论" in user:
        cited = f"[S1]“{PDF_LINE[:40]}”，且 [S3]“Office rent is 40 percent”"
        return f"立场：远程可行。\n核心论据：\n1. 据 {cited}。\n反驳：无\n沉默声明：无\n小结：数据支持。"
    if "你是「费曼」" in system and "逐条反驳" in user:
        return "立场：存疑。\n核心论据：\n1. 样本太小。\n反驳：[S9]“利润率翻倍”并无出处。\n沉默声明：无\n小结：存疑。"
    # The other roles answer their forms as a model would: a reply without the speech's five parts
    # is sent back (taixu), and the extra calls would spend the hard cap before R2.
    return follow_form(body)


def upload(name: str, data: bytes, kind: str) -> SimpleUploadedFile:
    return SimpleUploadedFile(name, data, content_type=kind)


def start(client: Client, **fields):
    data = {"topic": PANEL_QUESTION, "format": "panel", "research_budget": "light"}
    data.update(fields)
    return client.post("/debates/new/", data)


@pytest.mark.django_db(transaction=True)
async def test_documents_and_searches_become_sources_seen_live_and_in_the_report(
    libraries, fast_llm, server_search, alice, no_runs
):
    fast_llm.script = answer
    client = Client(HTTP_ACCEPT_LANGUAGE="en")
    await sync_to_async(client.force_login)(alice)
    # Created through the form with two documents and the server's search; run below, watched.
    response = await sync_to_async(start)(
        client,
        search="env",
        documents=[
            upload("study.pdf", make_pdf([PDF_LINE, "Appendix."]), "application/pdf"),
            upload("notes.md", b"# Costs\n\nOffice rent is 40 percent of overhead.", "text/markdown"),
        ],
    )
    assert response.status_code == 302, errors_in(response.content.decode(), "form-errors")
    debate = await Debate.objects.aget(pk=no_runs[0])
    assert debate.research and debate.search_provider is None
    assert [d["name"] for d in debate.options["documents"]] == ["study.pdf", "notes.md"]

    headers = [(b"origin", b"http://127.0.0.1"), (b"cookie", f"sessionid={client.cookies['sessionid'].value}".encode())]
    viewer = WebsocketCommunicator(application, f"/ws/debates/{debate.pk}/", headers=headers)
    assert (await viewer.connect())[0]
    page = PageModel()
    page.apply(await viewer.receive_from(timeout=5))  # the catch-up of a queued debate
    run = asyncio.ensure_future(runner.execute(debate.pk))
    live = []
    while not live or 'data-status="done"' not in live[-1]:  # (a timeout here ends the consumer)
        live.append(await viewer.receive_from(timeout=30))
        page.apply(live[-1])
    assert await run == "done"
    await viewer.disconnect()

    joined = "".join(live)
    # The searches arrived as they happened: the host's before R1, Bayes' own in R2.
    assert joined.count('data-phase="search"') >= 2
    assert "remote work productivity" in joined and server_search.page_url("remote-study") in joined
    assert len(server_search.searches) == 2

    debate = await Debate.objects.aget(pk=debate.pk)
    report = await sync_to_async(lambda: debate.report)()
    sources = report.data["evidence"]["sources"]
    titles = [s["title"] for s in sources]
    assert titles[:3] == ["study.pdf · p. 1", "study.pdf · p. 2", "notes.md · Costs"]
    assert any(s.get("url") == server_search.page_url("remote-study") for s in sources)
    checks = {(c["turn"], c["source"]): c["ok"] for c in report.data["source_checks"]}
    assert checks[("r1:bayes", "S1")] and checks[("r1:bayes", "S3")]  # the PDF and the Markdown, cited
    assert checks[("r2:feynman", "S9")] is False
    assert report.data["ledger"]["research"]["searches"] == 2

    html = (await sync_to_async(client.get)(f"/debates/{debate.pk}/report/")).content.decode()
    assert ">Sources</h3>" in html and "study.pdf · p. 1" in html
    # The warning's ⚠️ is drawn as an icon with its text alternative (no emoji font needed).
    assert re.search(
        r'<span class="icon icon-warn" role="img" aria-label="Warning"></span> '
        r"费曼 → \[S9\] “利润率翻倍”: no source with this number is in the evidence pack",
        html,
    )
    assert re.search(r'id="research-ledger">Research: 2 searches, [1-9]\d* pages fetched', html)
    link = re.search(r'<a href="([^"]+remote-study)" rel="([^"]+)"', html)
    assert link and "nofollow" in link.group(2)
    exported = json.loads((await sync_to_async(client.get)(f"/debates/{debate.pk}/export.json")).content)
    assert exported["report"]["data"]["evidence"]["sources"][0]["file"] == "study.pdf"


@pytest.mark.django_db
def test_an_unreadable_document_is_refused_beside_its_field_in_the_readers_language(libraries, no_runs, alice):
    client = Client(HTTP_ACCEPT_LANGUAGE="zh-hans")
    client.force_login(alice)
    response = start(client, documents=[upload("scan.pdf", b"%PDF-1.4 garbage", "application/pdf")])
    assert response.status_code == 200 and not Debate.objects.exists()
    errors = errors_in(response.content.decode(), "field-documents")
    assert "scan.pdf" in errors and "重新选择" in errors


@pytest.mark.django_db
def test_documents_read_once_survive_a_page_that_asks_to_confirm(libraries, no_runs, alice):
    client = Client(HTTP_ACCEPT_LANGUAGE="en")
    client.force_login(alice)
    notes = upload("notes.md", b"# Costs\n\nOffice rent is 40 percent of overhead.", "text/markdown")
    first = client.post(
        "/debates/new/",
        {"topic": "我们的客服产品要不要引入 RAG 知识库？", "format": "roundtable", "documents": [notes]},
    )
    html = first.content.decode()
    assert first.status_code == 200 and "Already read: notes.md" in html  # Agora chose the roles: confirm
    carried = re.search(r'name="documents_read" value="([^"]+)"', html).group(1)
    personas = re.findall(r'name="personas" value="([^"]+)"[^>]* checked', html)
    assert personas
    second = client.post(
        "/debates/new/",
        {
            "topic": "我们的客服产品要不要引入 RAG 知识库？",
            "format": "roundtable",
            "personas": personas,
            "documents_read": html_lib.unescape(carried),  # as the browser sends the hidden field
        },
    )
    assert second.status_code == 302
    assert Debate.objects.get().options["documents"][0]["sections"][0]["text"].startswith("Office rent")


@pytest.mark.django_db
def test_the_form_says_when_no_search_is_set_up_and_refuses_a_search_it_cannot_use(
    libraries, no_runs, alice, settings, monkeypatch
):
    client = Client(HTTP_ACCEPT_LANGUAGE="en")
    client.force_login(alice)
    settings.AGORA_SEARCH_BACKEND = ""
    page = client.get("/debates/new/?format=panel").content.decode()
    assert "No search provider is set up, so research is skipped" in page

    monkeypatch.delenv("BRAVE_API_KEY", raising=False)
    brave = SearchProvider.objects.create(name="brave", kind="brave", api_key_env="BRAVE_API_KEY")
    response = start(client, search=f"p{brave.pk}")
    assert not Debate.objects.exists()
    assert "set BRAVE_API_KEY" in errors_in(response.content.decode(), "field-search")


@pytest.mark.django_db
def test_the_admin_tests_a_search_provider(superuser, search_server, monkeypatch):
    search_server.reset()
    monkeypatch.setenv("FAKE_SEARCH_API_KEY", "k-123")
    provider = SearchProvider.objects.create(
        name="fake-brave", kind="brave", base_url=search_server.brave_base_url, api_key_env="FAKE_SEARCH_API_KEY"
    )
    search_server.api_key = "k-123"
    client = Client(HTTP_ACCEPT_LANGUAGE="en")
    client.force_login(superuser)
    response = client.post(
        "/admin/debates/searchprovider/",
        {"action": "test_search", "_selected_action": [provider.pk]},
        follow=True,
    )
    assert "ake-brave answers: 2 results" in response.content.decode()  # (the admin capitalises it)
    assert search_server.searches[-1].headers.get("x-subscription-token") == "k-123"
    search_server.api_key = None


@pytest.mark.django_db
def test_the_form_offers_the_servers_search_and_says_what_it_does(libraries, alice, settings):
    settings.AGORA_SEARCH_BACKEND, settings.AGORA_SEARCH_URL = "searxng", "http://127.0.0.1:9"
    client = Client(HTTP_ACCEPT_LANGUAGE="en")
    client.force_login(alice)
    page = client.get("/debates/new/?format=panel").content.decode()
    assert re.search(r'<option value="env" selected>Server search \(searxng\)</option>', page)
    assert "every page found becomes a numbered source" in page and "research is skipped" not in page
    duel = client.get("/debates/new/?format=duel").content.decode()
    assert 'id="field-search"' not in duel  # a duel never researches


@pytest.mark.django_db(transaction=True)
async def test_a_failed_search_is_shown_on_its_turn_and_the_debate_goes_on(libraries, fast_llm, server_search, alice):
    from debates.forms import create_debate

    server_search.fail_next("500", times=5)
    debate, errors = await sync_to_async(create_debate)(
        {"topic": "我们团队是否应该在明年全面转向远程办公？", "format": "panel", "search": "env"}, owner=alice
    )
    assert not errors, errors
    assert await runner.execute(debate.pk) == "done"
    client = Client(HTTP_ACCEPT_LANGUAGE="en")
    await sync_to_async(client.force_login)(alice)
    page = (await sync_to_async(client.get)(f"/debates/{debate.pk}/")).content.decode()
    article = re.search(r'<article[^>]*data-key="search:pack:1".*?</article>', page, re.S).group(0)
    assert "This search failed:" in article and "500" in article and "went on without it" in article
    assert "Retry turn" not in article  # the debate did not stop for it: nothing to retry from
    assert "The search" in page and "failed" in page  # and the warnings say so


@pytest.mark.django_db(transaction=True)
async def test_a_search_servers_address_reaches_staff_only(
    libraries, fast_llm, search_server, settings, alice, superuser
):
    """A private SearxNG that does not answer: its address is in the turn's error for staff, and
    nowhere in what the owner (or a shared link) sees or exports."""
    from debates.forms import create_debate

    settings.AGORA_SEARCH_BACKEND, settings.AGORA_SEARCH_URL = "searxng", "http://10.66.0.7:9"
    settings.AGORA_SEARCH_TIMEOUT = 0.5
    debate, errors = await sync_to_async(create_debate)(
        {
            "topic": "我们团队是否应该在明年全面转向远程办公？",
            "format": "panel",
            "search": "env",
            "research_budget": "light",
        },
        owner=alice,
    )
    assert not errors, errors
    assert await runner.execute(debate.pk) == "done"
    client = Client(HTTP_ACCEPT_LANGUAGE="en")
    await sync_to_async(client.force_login)(alice)
    for path in (f"/debates/{debate.pk}/", f"/debates/{debate.pk}/report/", f"/debates/{debate.pk}/export.json"):
        body = (await sync_to_async(client.get)(path)).content.decode()
        assert "10.66.0.7" not in body, path
    assert "This search failed:" in (await sync_to_async(client.get)(f"/debates/{debate.pk}/")).content.decode()
    staff = Client(HTTP_ACCEPT_LANGUAGE="en")
    await sync_to_async(staff.force_login)(superuser)
    assert "10.66.0.7" in (await sync_to_async(staff.get)(f"/debates/{debate.pk}/")).content.decode()
