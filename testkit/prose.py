"""Long ordinary text for tests that need a reply over some length: it never repeats a unit, so
the repetition cut (`debates.engine.repetition`) leaves it whole and what the test checks (a
character limit, a clip, a count) is what acts on it. `"…" * 30` padding is a loop to that cut."""

from __future__ import annotations

WHO = ["团队", "客户", "老板", "新人", "对手", "投资人", "用户", "同事", "家人", "顾问", "供应商"]
DOES = ["先看", "再算", "细问", "重估", "写下", "拆开", "比较", "记住", "核对", "放慢", "讲清", "试算", "追问"]
WHAT = ["成本", "风险", "收入", "时间", "边界", "代价", "节奏", "证据", "目标", "口碑", "现金流", "人手"]
PLACE = ["在第一季度", "上线之前", "每周例会上", "签约之后", "预算会上", "复盘时", "出差途中"]


def prose(length: int, stops: bool = True) -> str:
    """Chinese sentences, at least `length` characters, no two alike and no unit repeated: the
    word lists' lengths share no factor, so the sentence sequence repeats only after thousands.
    `stops=False`: one run-on phrase with no punctuation (where a clip, not a sentence end, must
    shorten it)."""
    out, i = [], 0
    while sum(map(len, out)) < length:
        out.append(f"{PLACE[i % 7]}{WHO[i % 11]}{DOES[i % 13]}{WHAT[i % 12]}{'。' if stops else ''}")
        i += 1
    return "".join(out)
