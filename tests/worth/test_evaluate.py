"""`manage.py evaluate` on the fake server with judges that follow a known rule: the win table,
the order swap, agreement and the JSONL come out as that rule says they must."""

from __future__ import annotations

import io
import json
import re

import pytest
from django.core.management import call_command

from debates import baselines, evaluation

pytestmark = pytest.mark.django_db(transaction=True)
QUESTIONS = "bench/questions/checkable.jsonl"


def answers_and(judge):
    """A fake model whose single answers and merges are recognisable, and whose judge follows `judge`."""

    def script(body):
        messages = body.get("messages") or []
        system, user = messages[0]["content"], messages[-1]["content"]
        if system == baselines.SINGLE_SYSTEM:
            return "SINGLE-ANSWER 答：391。"
        if system == baselines.MERGE_SYSTEM:
            return "MERGED-ANSWER 综合：391。"
        if system == evaluation.JUDGE_SYSTEM:
            first = user.split("## Answer A", 1)[1].split("## Answer B", 1)[0]
            second = user.split("## Answer B", 1)[1]
            return f"胜者：{judge(first, second)}\n理由：按规则。"
        return None

    return script


def rank(text: str) -> int:
    """The rule: the debate's conclusion beats the merge, which beats the single answer."""
    return 0 if "SINGLE-ANSWER" in text else 1 if "MERGED-ANSWER" in text else 2


def run(tmp_path, *args) -> tuple[str, list[dict]]:
    out, jsonl = io.StringIO(), tmp_path / "judgements.jsonl"
    call_command("evaluate", QUESTIONS, "--format", "moderated", "--limit", "2", "--out", str(jsonl), *args, stdout=out)
    return out.getvalue(), [json.loads(line) for line in jsonl.read_text().splitlines()]


def test_a_judge_with_a_known_rule_reproduces_its_win_table(libraries, fast_llm, tmp_path):
    fast_llm.script = answers_and(lambda a, b: "A" if rank(a) > rank(b) else "B" if rank(b) > rank(a) else "平局")
    printed, judgements = run(tmp_path, "--judges", "default/judge-a,default/judge-b")
    # 2 questions × 3 pairs × 2 orders × 2 judges
    assert len(judgements) == 24 and {j["verdict"] for j in judgements} <= {"A", "B"}
    table = re.findall(r"^(\w+)\s+(\w+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)%", printed, re.M)
    assert table == [
        ("debate", "single", "8", "0", "0", "8", "100"),
        ("debate", "vote", "8", "0", "0", "8", "100"),
        ("single", "vote", "0", "8", "0", "8", "0"),
    ]
    assert "same winner in both orders: 100%" in printed and "judges agree: 100%" in printed
    assert "accuracy against the gold answers, single: 50%" in printed  # 391 is right for c01 only


def test_a_judge_that_always_picks_a_is_caught_by_the_order_swap(libraries, fast_llm, tmp_path):
    fast_llm.script = answers_and(lambda a, b: "A")
    printed, judgements = run(tmp_path, "--arms", "debate,single")
    assert len(judgements) == 4
    assert re.search(r"^debate\s+single\s+2\s+2\s+0\s+4\s+50%", printed, re.M)  # no winner, only a position
    assert "same winner in both orders: 0%" in printed and "judges agree: — (one judge)" in printed


def test_the_interval_is_wilsons():
    low, high = evaluation.wilson(14, 20)
    assert (round(low, 3), round(high, 3)) == (0.481, 0.855)
