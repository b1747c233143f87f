"""The API speaks its token owner's language when a request asks for none: a token made on the
token page by someone reading the site in English is answered in English (messages, names, the
stream), one made in Chinese in Chinese, and a request's own Accept-Language still wins. Real
daphne, real HTTP (httpx sends no Accept-Language), the fake OpenAI server."""

from __future__ import annotations

import time

import pytest

from testkit.http import Browser
from testkit.servers import USERS
from tests.api.client import NEW_TOKEN, Api

pytestmark = pytest.mark.slow

QUESTION = {"topic": "念佛与参禅，哪条路更适合现代人修行？", "format": "duel", "rounds": 1}


def token_made_in(base_url: str, language: str) -> str:
    """A token made on alice's token page after she chose `language` with the language switcher."""
    browser = Browser(base_url)
    browser.log_in("alice", USERS["alice"])
    browser.post("/i18n/setlang/", {"language": language, "next": "/accounts/tokens/"}, form_page="/accounts/tokens/")
    _status, _url, body = browser.post("/accounts/tokens/", {"name": f"made in {language}"})
    return NEW_TOKEN.search(body).group(1)


def finished(api: Api, pk: int, timeout: float = 60) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        debate = api.get(f"/debates/{pk}").json()
        if debate["status"] == "done":
            return debate
        time.sleep(0.05)
    raise AssertionError(f"not done within {timeout}s")


def has_chinese(text: str) -> bool:
    return any("\u4e00" <= ch <= "\u9fff" for ch in text)


def test_the_api_answers_in_the_language_the_token_was_made_in(agora, fake_llm):
    english = Api(agora.url, token_made_in(agora.url, "en"))
    chinese = Api(agora.url, token_made_in(agora.url, "zh-hans"))

    missing = english.get("/debates/999999")
    assert missing.status_code == 404 and missing.headers["Content-Language"] == "en"
    assert not has_chinese(missing.json()["detail"])
    assert has_chinese(chinese.get("/debates/999999").json()["detail"])
    asked = english.get("/debates/999999", headers={"Accept-Language": "zh-hans"})
    assert has_chinese(asked.json()["detail"]), "a request's own language wins"

    started = english.post("/debates", {**QUESTION, "personas": ["huineng", "yinguang"]})
    assert started.status_code == 201, started.text
    debate = finished(english, started.json()["id"])
    names = {t["speaker"]: t["speaker_name"] for t in debate["turns"]}
    assert names["huineng"] == "Huineng" and names["yinguang"] == "Yinguang"
    both = next(t["speaker_names"] for t in debate["turns"] if t["speaker"] == "huineng")
    assert both == {"zh-hans": "慧能大师", "en": "Huineng"}
    assert {t["speaker_name"] for t in chinese.get(f"/debates/{debate['id']}").json()["turns"]} >= {"慧能大师"}

    streamed = [e.data for e in english.events(debate["id"]) if e.event == "turn"]
    assert {e["speaker_name"] for e in streamed if e["speaker"] == "huineng"} == {"Huineng"}
