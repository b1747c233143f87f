"""`manage.py debate` in a real subprocess against the fake OpenAI server: it streams with speaker
labels and ends on the report, with the same persistence as the web."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys

import pytest

from testkit.servers import ROOT


@pytest.fixture
def cli_env(tmp_path, template_db, fake_llm):
    db = tmp_path / "cli.sqlite3"
    shutil.copy(template_db, db)
    return {
        **os.environ,
        "DATABASE_URL": f"sqlite:///{db}",
        "OPENAI_BASE_URL": fake_llm.base_url,
        "OPENAI_API_KEY": "sk-test-cli",
    }


def run_cli(env, *args, timeout=120):
    return subprocess.run(
        [sys.executable, "manage.py", "debate", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


def test_cli_completes_a_duel_and_prints_the_report(cli_env):
    result = run_cli(cli_env, "念佛与参禅，哪条路更适合现代人修行？", "--format", "duel", "--rounds", "2")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "【慧能大师】" in out and "【印光大师】" in out  # speaker labels, from the pairing rule
    assert out.count("— 小结:") == 5  # 2 rounds x 2 speakers + the close
    assert "# 祖师对辩\n" in out and "## 中立收束" in out  # the report, in the question's language
    assert "\n结果：已完成\n" in out and "outcome" not in out  # the ending, in the question's language


def test_an_english_question_is_printed_in_english(cli_env):
    question = "Is chanting the Buddha's name or Chan meditation the better practice for a busy modern person?"
    result = run_cli(cli_env, question, "--format", "duel", "--rounds", "1", "--personas", "huineng,yinguang")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "【Huineng】" in out and "【Yinguang】" in out and "【慧能大师】" not in out
    assert out.count("— Summary:") == 3 and "小结" not in out
    assert "# Duel\n" in out
    assert "\nOutcome: done\n" in out and "结果" not in out


def test_cli_completes_a_panel_with_evidence(cli_env, tmp_path):
    evidence = tmp_path / "evidence.txt"
    evidence.write_text("去年云成本上涨 30%，团队有 12 名工程师。", encoding="utf-8")
    result = run_cli(
        cli_env, "我们公司明年是否应该把核心交易系统迁到云上？", "--format", "panel", "--evidence", str(evidence)
    )
    assert result.returncode == 0, result.stderr
    out = result.stdout
    for name in ("奥斯本", "黑格尔", "贝叶斯", "费曼", "德博诺"):
        assert f"【{name}】" in out
    assert "# 五角色辩论\n" in out and "裁决书" in out
    assert "无外部证据底座" not in out  # evidence was given


def test_cli_reports_form_errors_like_the_web(cli_env):
    result = run_cli(cli_env, "念佛", "--format", "duel", "--personas", "huineng,nobody")
    assert result.returncode != 0
    assert "personas" in result.stderr and "nobody" in result.stderr


def test_an_english_questions_form_errors_are_in_english(cli_env):
    """The terminal sends no language: the question's picks it (the site's default is Chinese)."""
    english = "Should a 10-person startup adopt microservices now?"
    result = run_cli(cli_env, english, "--format", "panel", "--rounds", "2")
    assert result.returncode != 0
    assert "rounds" in result.stderr and not re.search("[\u4e00-\u9fff]", result.stderr), result.stderr
    chinese = run_cli(cli_env, "我们十个人的创业公司现在应该改用微服务吗？", "--format", "panel", "--rounds", "2")
    assert chinese.returncode != 0 and re.search("[\u4e00-\u9fff]", chinese.stderr), chinese.stderr


def test_cli_debate_is_saved_like_a_web_one(cli_env):
    context = "我在家修行，每天只有半小时。"
    args = ("--format", "duel", "--personas", "huineng,zhiyi", "--rounds", "1", "--context", context)
    assert run_cli(cli_env, "顿悟与渐修", *args).returncode == 0
    dump = subprocess.run(
        [sys.executable, "manage.py", "dumpdata", "debates.debate", "debates.turn"],
        cwd=ROOT,
        env=cli_env,
        capture_output=True,
        text=True,
        check=True,
    )
    rows = json.loads(dump.stdout)
    debate = next(r for r in rows if r["model"] == "debates.debate")
    assert debate["fields"]["status"] == "done" and debate["fields"]["format"] == "duel"
    assert debate["fields"]["options"]["user_context"] == context
    turns = [r for r in rows if r["model"] == "debates.turn"]
    assert all(context in json.dumps(t["fields"]["messages"], ensure_ascii=False) for t in turns)  # every prompt
    assert {t["fields"]["key"] for t in turns} == {"duel:1:huineng", "duel:1:zhiyi", "duel:close"}


def test_cli_researches_and_reads_documents(cli_env, tmp_path):
    from testkit.fake_search import FakeSearchServer

    notes = tmp_path / "notes.md"
    notes.write_text("# 成本\n\n办公室租金占管理费用的四成。", encoding="utf-8")
    with FakeSearchServer() as search:
        search.add_page("remote", "Remote work study", "Remote work raised productivity by 13 percent in a study.")
        env = {
            **cli_env,
            "AGORA_SEARCH_BACKEND": "searxng",
            "AGORA_SEARCH_URL": search.base_url,
            "AGORA_FETCH_ALLOWED_NETWORKS": "127.0.0.0/8",
        }
        result = run_cli(
            env,
            "我们团队是否应该在明年全面转向远程办公？",
            "--format",
            "panel",
            "--budget",
            "light",
            "--document",
            str(notes),
        )
        assert result.returncode == 0, result.stderr
        assert len(search.searches) == 1  # light: one query, the host's
    out = result.stdout
    assert "🔍" in out and search.page_url("remote") in out  # the search, as it happened
    assert "**S1** notes.md · 成本" in out and "Remote work study" in out  # the report's sources

    bad = run_cli(cli_env, "我们团队是否应该在明年全面转向远程办公？", "--format", "panel", "--document", str(tmp_path))
    assert bad.returncode != 0 and "--document" in bad.stderr


@pytest.mark.parametrize(
    ("language", "expected"), [("zh-hans", "李四 的发言超过 250 字，已截断。"), ("en", "Li Si spoke past 250")]
)
def test_the_terminal_prints_engine_messages_in_the_debates_language(language, expected):
    """A warning is a message with its values (a Text), drawn as the pages draw it: in the
    debate's language, the speaker named as that reader knows them (it printed the English msgid)."""
    import asyncio
    import io

    from django.core.management.base import OutputWrapper
    from django.utils import translation

    from debates.engine import events as ev
    from debates.engine.i18n import named, text
    from debates.management.commands.debate import TerminalSink

    out = io.StringIO()
    sink = TerminalSink(OutputWrapper(out), english=language == "en")
    said = "%(speaker)s spoke past %(max)d characters: the speech was cut."
    warning = text(said, speaker=named("李四", "Li Si", "zh-hans"), max=250)
    with translation.override(language):
        asyncio.run(sink.emit(ev.Warning("speech_cut", warning)))
    assert expected in out.getvalue(), out.getvalue()


def _terminal(events, english=False) -> str:
    import asyncio
    import io

    from django.core.management.base import OutputWrapper

    from debates.management.commands.debate import TerminalSink

    out = io.StringIO()
    sink = TerminalSink(OutputWrapper(out), english=english)

    async def play():
        for event in events:
            await sink.emit(event)

    asyncio.run(play())
    return out.getvalue()


def _finished(key):
    from debates.engine import events as ev

    return ev.TurnFinished(key, text="", summary="小结。", prompt_tokens=1, completion_tokens=1)


@pytest.mark.parametrize(
    ("deltas", "printed"),
    [
        (["正", "文", "：", "我认为修行在于心。"], "【甲】我认为修行在于心。"),
        (["  Spee", "ch: ", "I think so."], "【甲】I think so."),
        (["**Speech**"], "【甲】**Speech**"),  # not the label alone: kept as it is
        (["正", "在讨论"], "【甲】正在讨论"),  # starts like the label, is not it
        (["Speeches differ."], "【甲】Speeches differ."),
        (["正"], "【甲】正"),  # a speech of one character that could have been a label
    ],
)
def test_the_terminal_drops_the_speechs_label_as_the_page_does(deltas, printed):
    from debates.engine import events as ev

    key = "duel:1:a"
    out = _terminal(
        [ev.TurnStarted(key, 1, "r1", "a", "甲", []), *(ev.TextDelta(key, d) for d in deltas), _finished(key)]
    )
    assert printed + "\n  — 小结:" in out, out


def test_a_parallel_turn_printed_later_loses_its_label_too():
    from debates.engine import events as ev

    a, b = "r1:a", "r1:b"
    out = _terminal(
        [
            ev.TurnStarted(a, 1, "r1", "a", "甲", []),
            ev.TurnStarted(b, 1, "r1", "b", "乙", []),
            ev.TextDelta(b, "正文：乙的话。"),
            ev.TextDelta(a, "正文：甲的话。"),
            _finished(b),
            _finished(a),
        ]
    )
    assert "【甲】甲的话。" in out and "【乙】乙的话。" in out and "正文" not in out, out


def test_a_warning_is_marked_once_and_a_rewritten_turn_says_so():
    from debates.engine import events as ev

    out = _terminal(
        [
            ev.Warning("one_sided", "⚠️ Cross-critique covers this pair in one direction only."),
            ev.Warning("other", "plain"),
            ev.TurnStarted("duel:1:a", 1, "r1", "a", "A", []),
            ev.TextDelta("duel:1:a", "First."),
            _finished("duel:1:a"),
            ev.TurnStarted("duel:1:a:again", 1, "r1", "a", "A", []),
            ev.TextDelta("duel:1:a:again", "Second."),
            _finished("duel:1:a:again"),
        ],
        english=True,
    )
    assert "\n⚠️ Cross-critique" in out and "⚠ ⚠" not in out and "\n⚠ plain\n" in out, out
    assert "↻ written again:\n【A】Second." in out, out


def test_a_turn_without_a_summary_prints_no_empty_summary_line():
    from debates.engine import events as ev

    out = _terminal(
        [
            ev.TurnStarted("host:admission", 0, "admission", "host", "Cicero", []),
            ev.TextDelta("host:admission", "Type: choice decision"),
            ev.TurnFinished("host:admission", text="", summary="", prompt_tokens=1, completion_tokens=1),
        ],
        english=True,
    )
    assert "【Cicero】Type: choice decision\n" in out and "Summary" not in out, out


def test_a_turn_the_format_replaced_shows_what_replaced_it():
    """The panel's baseline measurement streams a few tokens of model text, then the format puts the
    line saying what was measured in its place: the terminal prints that line too, as the page
    shows it; a turn that finished as it streamed is not printed twice."""
    from debates.engine import events as ev

    measured = "(Baseline measurement, not a speech.)"
    out = _terminal(
        [
            ev.TurnStarted("host:measure", 0, "measure", "host", "Cicero", []),
            ev.TextDelta("host:measure", "### Five **Ba"),
            ev.TurnFinished("host:measure", text=measured, summary="", prompt_tokens=1, completion_tokens=1),
            ev.TurnStarted("duel:1:a", 1, "r1", "a", "A", []),
            ev.TextDelta("duel:1:a", "Speech: I hold this."),
            ev.TurnFinished(
                "duel:1:a", text="Speech: I hold this.", summary="Held.", prompt_tokens=1, completion_tokens=1
            ),
        ],
        english=True,
    )
    assert f"### Five **Ba\n  ↳ {measured}\n" in out, out
    assert out.count("I hold this.") == 1, out


def test_a_speech_that_carries_its_summary_line_is_not_summed_up_twice():
    from debates.engine import events as ev

    out = _terminal(
        [
            ev.TurnStarted("duel:1:a", 1, "r1", "a", "A", []),
            ev.TextDelta("duel:1:a", "Speech: I hold this.\nSummary: I hold it."),
            ev.TurnFinished("duel:1:a", text="", summary="I hold it.", prompt_tokens=1, completion_tokens=1),
            ev.TurnStarted("duel:1:b", 1, "r1", "b", "B", []),
            ev.TextDelta("duel:1:b", "Speech: I do not."),
            ev.TurnFinished("duel:1:b", text="", summary="B does not.", prompt_tokens=1, completion_tokens=1),
        ],
        english=True,
    )
    assert out.count("I hold it.") == 1 and "— Summary: I hold it." not in out, out
    assert "— Summary: B does not." in out, out  # no line of its own: the summary under it
