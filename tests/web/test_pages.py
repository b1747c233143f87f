"""The home page's history (statuses in words, its two empty states, filters in the address), the
admin's index in both languages, and the friendly 404 and 403 pages with DEBUG on and off."""

from __future__ import annotations

import re

import pytest
from django.core.exceptions import PermissionDenied
from django.test import Client, RequestFactory
from django.urls import reverse

from agora.errors import FriendlyErrorsMiddleware
from debates.models import Debate, Status

pytestmark = pytest.mark.django_db

EN = {"HTTP_ACCEPT_LANGUAGE": "en"}
ZH = {"HTTP_ACCEPT_LANGUAGE": "zh-hans"}
HTMX = {"HTTP_HX_REQUEST": "true"}


def debate(owner, question="何为禅？", status=Status.DONE, fmt="duel") -> Debate:
    return Debate.objects.create(owner=owner, question=question, format=fmt, status=status)


def history(client, query="", **headers) -> str:
    response = client.get("/" + query, **headers)
    assert response.status_code == 200
    html = response.content.decode()
    return html.split('<div id="history">', 1)[1].split("</div>", 1)[0]


# -- home -----------------------------------------------------------------------------------------


def test_statuses_are_words_in_the_viewers_language(client, alice):
    debate(alice, status=Status.WAITING)
    debate(alice, status=Status.LOADING)
    en, zh = history(client, **EN), history(client, **ZH)
    assert ">waiting at checkpoint</span>" in en and ">loading model</span>" in en
    assert ">检查点等待中</span>" in zh
    for code in ("loading_model", "waiting"):
        assert f">{code}<" not in en and f">{code}<" not in zh


def test_no_debates_yet_and_no_results_for_the_filters_differ(client, alice):
    empty = history(client, **EN)
    assert 'data-empty="none"' in empty and "No debates yet." in empty
    assert "<table" not in empty
    assert 'data-empty="none"' in history(client, "?q=anything", **EN), "nothing to filter yet"

    debate(alice, question="念佛与参禅")
    filtered = history(client, "?q=no-such-words", **EN)
    assert 'data-empty="filtered"' in filtered and "No debates match these filters." in filtered
    assert 'href="/"' in filtered, "a way to clear them"
    assert "没有符合这些筛选条件的辩论。" in history(client, "?status=failed", **ZH)
    assert "念佛与参禅" in history(client, "?q=念佛", **EN)


def test_the_filter_form_puts_its_filters_into_the_address(client, alice):
    debate(alice)
    html = client.get("/", **EN).content.decode()
    form = re.search(r'<form class="filters"[^>]*>', html, re.S).group(0)
    assert 'hx-push-url="true"' in form and 'hx-get="/"' in form
    response = client.get("/", {"q": "禅", "format": "duel", "status": ""}, **HTMX)
    assert response["HX-Push-Url"] == "/?q=%E7%A6%85&format=duel", "empty filters left out"
    assert client.get("/", {"q": "", "format": "", "status": ""}, **HTMX)["HX-Push-Url"] == "/"
    assert "HX-Request" in response["Vary"], "the list alone and the page are cached apart"
    assert "<html" not in response.content.decode()
    # A history restore (back button) gets the whole page.
    restore = client.get("/", {"q": "禅"}, **HTMX, HTTP_HX_HISTORY_RESTORE_REQUEST="true")
    assert "<html" in restore.content.decode()


def test_a_reloaded_address_shows_the_filters_it_holds(client, alice):
    debate(alice)
    html = client.get("/", {"q": "禅", "format": "duel", "status": "done"}, **EN).content.decode()
    assert 'name="q" value="禅"' in html
    assert '<option value="duel" selected>' in html and '<option value="done" selected>' in html


def test_pages_keep_the_filters(client, alice):
    for n in range(45):
        debate(alice, question=f"问题 {n}")
    debate(alice, question="other", status=Status.FAILED)
    html = history(client, "?q=问题&status=done&page=2", **EN)
    links = re.findall(r'<a href="(\?[^"]+)" rel="(prev|next)"', html)
    assert links == [
        ("?q=%E9%97%AE%E9%A2%98&amp;status=done&amp;page=1", "prev"),
        ("?q=%E9%97%AE%E9%A2%98&amp;status=done&amp;page=3", "next"),
    ]
    assert "2 / 3" in html


# -- admin ----------------------------------------------------------------------------------------


def admin_index(client, **headers) -> str:
    response = client.get(reverse("admin:index"), **headers)
    assert response.status_code == 200
    return response.content.decode()


def sections(html: str) -> list[str]:
    return re.findall(r'<caption>\s*<a [^>]*class="section"[^>]*>([^<]+)</a>', html)


def model_names(html: str) -> list[str]:
    return re.findall(r'<th scope="row" id="[^"]+">\s*<a href="[^"]*"[^>]*>([^<]+)</a>', html)


def test_the_admin_index_in_english(admin_client):
    html = admin_index(admin_client, **EN)
    assert "<title>Site administration | Agora</title>" in html
    assert '<div id="site-name"><a href="/admin/">Agora</a></div>' in html
    names = sections(html)
    assert {"Persona libraries", "Debates", "Tasks", "Authentication and Authorization"} <= set(names)
    assert len(names) == len(set(names)), "each section has its own name"
    models = model_names(html)
    for name in ("Reports", "Turns", "Debates", "Providers", "Task Results", "Personas", "Libraries"):
        assert name in models, (name, models)


def test_the_admin_index_in_chinese(admin_client):
    html = admin_index(admin_client, **ZH)
    names, models = sections(html), model_names(html)
    assert {"人格库", "辩论", "任务"} <= set(names) and len(names) == len(set(names))
    assert {"报告", "发言", "任务结果"} <= set(models)
    for name in names + models:
        assert not re.search(r"[A-Za-z]{2,}", name), f"untranslated: {name}"
    assert '<div id="site-name"><a href="/admin/">Agora</a></div>' in html
    # Every word on the page is Chinese, headings for screen readers included (but two names).
    html = html.replace("<strong>admin</strong>", "")  # the user's name
    body = re.sub(r"<(svg|script|style)\b.*?</\1>|<[^>]+>", " ", html.split("<body", 1)[1].split(">", 1)[1], flags=re.S)
    assert not re.findall(r"[A-Za-z]{2,}", body.replace("Agora", "")), "untranslated text on the admin index"


# -- error pages ----------------------------------------------------------------------------------


@pytest.fixture(params=[True, False], ids=["debug", "production"])
def debug(request, settings):
    settings.DEBUG = request.param
    return request.param


def revoked_link(owner) -> str:
    shared = debate(owner)
    token = shared.share_token
    Debate.objects.filter(pk=shared.pk).update(shared=False)
    return f"/debates/{shared.pk}/?share={token}"


@pytest.mark.parametrize(("headers", "words"), [(EN, "This page is not here"), (ZH, "找不到这个页面")])
def test_a_revoked_share_link_shows_the_friendly_404(debug, alice, headers, words):
    response = Client().get(revoked_link(alice), **headers)
    html = response.content.decode()
    assert response.status_code == 404
    assert words in html and 'data-error="404"' in html
    assert 'href="/"' in html and 'href="/accounts/login/"' in html, "a way back, and to log in"
    assert "No such debate" not in html and "Page not found" not in html and "Traceback" not in html
    assert "URLconf" not in html and "Debate matching" not in html


def test_the_404_says_nothing_about_whether_a_debate_exists(debug, alice, bob):
    private = debate(alice)
    other = Client()
    other.force_login(bob)
    existing = other.get(f"/debates/{private.pk}/", **EN)
    missing = other.get("/debates/999999/", **EN)
    assert existing.status_code == missing.status_code == 404
    strip = lambda html: re.sub(r"[A-Za-z0-9]{64}|/debates/\d+/", "", html)  # noqa: E731 - CSRF tokens, the address
    assert strip(existing.content.decode()) == strip(missing.content.decode())


def test_an_address_nothing_answers_gets_the_friendly_404_in_production(settings):
    settings.DEBUG = False
    response = Client().get("/no/such/page/", **ZH)
    assert response.status_code == 404
    assert "找不到这个页面" in response.content.decode() and 'href="/"' in response.content.decode()


def test_an_invalid_setup_link_says_what_to_do(debug):
    response = Client().get("/setup/" + "x" * 43 + "/", **EN)
    assert response.status_code == 404
    html = response.content.decode()
    assert "This setup link is not valid (any more)." in html and 'data-error="404"' in html


def test_the_admin_keeps_djangos_own_pages(admin_client, settings):
    settings.DEBUG = True
    response = admin_client.get("/admin/debates/debate/999999/change/", follow=True)
    assert 'data-error="404"' not in response.content.decode()


def test_permission_denied_shows_the_friendly_403_with_debug_on(settings, alice):
    settings.DEBUG = True
    request = RequestFactory().get("/debates/new/", HTTP_ACCEPT_LANGUAGE="zh-hans")
    request.user = alice
    request.resolver_match = None
    from django.utils import translation

    with translation.override("zh-hans"):
        response = FriendlyErrorsMiddleware(lambda r: None).process_exception(request, PermissionDenied("internal"))
    html = response.content.decode()
    assert response.status_code == 403 and "你无法打开这个页面" in html and 'href="/"' in html
    assert "internal" not in html


def test_the_403_page_is_djangos_403_template_with_debug_off(client, settings):
    settings.DEBUG = False
    from django.utils import translation
    from django.views.defaults import permission_denied

    request = RequestFactory().get("/")
    request.user = client.get("/").wsgi_request.user
    with translation.override("en"):
        response = permission_denied(request, PermissionDenied())
    assert response.status_code == 403
    assert "You cannot open this page" in response.content.decode()
