"""The L3 character's confirmation step in real headless Chromium on a real daphne (issue 28.6):
a person the question names is distilled by the fake OpenAI server, shown with its fields to
read and edit, and seated as L3 when the user clicks Start again. The rest:
tests/web/test_characters.py."""

from __future__ import annotations

import json
import re

import pytest

from tests.web.browser import log_in

pytestmark = [pytest.mark.browser]

MUNGER = (
    "认识此人：是\n中文名：查理·芒格\n英文名：Charlie Munger\n中文简介：伯克希尔副董事长，多元思维模型的倡导者。\n"
    "英文简介：Berkshire's vice chairman, who argued for a latticework of mental models.\n"
    "关键词：多元思维模型、逆向思考\n"
    "认知框架：用多个学科的思维模型交叉检验一个判断，先想怎样会失败。\n知识域：投资、心理学误判、企业经营与激励。\n"
    "决策偏好：耐心等待少数好机会，避免愚蠢胜过追求聪明。\n对抗规则：追问激励机制是否扭曲了判断，反过来想。\n"
    "表达风格：简短尖刻，常用“我没什么要补充的”。\n来源：《穷查理宝典》"
)


def script(body):
    first = body["messages"][0]["content"]
    if "蒸馏" in first and "人物：芒格" in body["messages"][-1]["content"]:
        return MUNGER
    return None


async def test_a_named_person_is_distilled_confirmed_and_seated(browser_page, agora, fake_llm):
    page = browser_page
    fake_llm.script = script
    fake_llm.token_delay = 0.0
    await log_in(page, agora)
    await page.goto(f"{agora.url}/debates/new/?format=roundtable")
    await page.fill("#id_topic", "和芒格、霍珀讨论我们要不要做 AI 客服")
    await page.click("button[type=submit].button")
    await page.wait_for_selector("#start-notice")
    assert page.url.endswith("/debates/new/")
    # Hopper is in the bundled library: seated from there. Munger is distilled, to confirm.
    assert await page.is_checked("#persona-grace-hopper")
    assert await page.input_value("#id_character-0-name") == "查理·芒格"
    assert await page.is_checked("#id_character-0-seat")
    await page.fill("#id_character-0-expression_style", "简短尖刻，常说“我没什么要补充的”。")
    await page.click("button[type=submit].button")
    await page.wait_for_url(re.compile(r".*/debates/\d+/$"))
    pk = int(re.search(r"/debates/(\d+)/$", page.url).group(1))
    response = await page.request.get(f"{agora.url}/debates/{pk}/export.json")
    seats = [seat["persona"] for seat in json.loads(await response.text())["seats"]]
    # The moderated library has a charlie-munger of its own: the new character gets a slug beside it.
    assert seats[-2:] == ["grace-hopper", "charlie-munger-2"] and seats[:2] == ["devil-advocate", "optimist"]
