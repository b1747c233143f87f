"""What the bundled local model writes, per format: are the parts there, is the template echoed,
are the summaries summaries, does a speaker keep its side, how fast.

    .venv/bin/python -m bench.local_quality [--no-forms] [--per-format 3] [--out FILE]

Twelve questions (three per format, from the bundled libraries' own pairing rules and domain
templates) run on Qwen2.5-Coder-1.5B under the local llama.cpp server, each created as the start
form creates it and run to its end by `runner.execute` into a throw-away SQLite database. Sizes are
kept small so the run takes about 40 minutes on 2 cores: duels of two rounds, panels whose cap
ends them after R1, roundtables in standard mode run through the checkpoint, moderated debates of
one round. `--no-forms` runs what Agora did before (no grammar sent, no second try for a speaker
that lost its side) for the before/after comparison.

Per format it prints:
- turns: the structured turns (every turn that has a form; moderated speeches are free text);
- fields complete: turns whose every part is there, labelled, in order, non-empty;
- template echoes: turns that copy the prompt's instructions (phrases of the output formats, the
  text of a line of the turn's own format) or write one of its labels again inside a value;
- valid summaries: summaries that are not empty, not the question, not a heading or a label, and
  within the format's limit (all turns);
- side flips (duels): speeches whose own stance line names the opponent's school and keywords
  more than the speaker's own (`debates.engine.duel.speaks_for`), counted on the speech that
  stands (after any second try). The method's agreement with the speeches labelled by reading in
  bench/data/side_flip_labels.json (58, from five runs) is printed;
- tokens/s: completion tokens over the turns' wall time, as the server counted them.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

QUESTIONS = {
    "duel": [
        {"topic": "念佛与参禅，哪条路更适合现代人修行？", "format": "duel", "rounds": 2},
        {"topic": "顿悟与次第，修行应从哪里下手？", "format": "duel", "rounds": 2},
        {"topic": "戒律行持与直观内观，哪个是解脱的根本？", "format": "duel", "rounds": 2},
    ],
    "panel": [
        {"topic": "我们团队是否应该在明年全面转向远程办公？", "format": "panel", "token_budget": 9000},
        {"topic": "我们公司明年是否应该把核心交易系统迁到云上？", "format": "panel", "token_budget": 9000},
        {"topic": "初创公司是否应该在 A 轮融资前建立专职数据团队？", "format": "panel", "token_budget": 9000},
    ],
    "roundtable": [
        {"topic": "我们的客服产品要不要引入 RAG 知识库？", "format": "roundtable", "mode": "standard"},
        {"topic": "单体应用要不要重构成微服务架构？", "format": "roundtable", "mode": "standard"},
        {"topic": "新用户留存下滑，增长团队该先做拉新还是先做留存？", "format": "roundtable", "mode": "standard"},
    ],
    "moderated": [
        {
            "topic": "小公司应该先做产品还是先做销售？",
            "format": "moderated",
            "personas": ["steve-jobs", "charlie-munger", "confucius"],
            "rounds": 1,
        },
        {
            "topic": "做决定时，该相信直觉还是相信分析？",
            "format": "moderated",
            "personas": ["charlie-munger", "socrates", "zhuangzi"],
            "rounds": 1,
        },
        {
            "topic": "一个人该追求有用，还是该追求自在？",
            "format": "moderated",
            "personas": ["confucius", "zhuangzi", "steve-jobs"],
            "rounds": 1,
        },
    ],
}
# Phrases of the output formats' instructions: a turn holding one copied the template.
ECHOES = (
    "输出格式",
    "按下面三部分写",
    "按五要素输出",
    "按两段输出",
    "每项单独成行起头",
    "每段单独成行起头",
    "编号列出",
    "只选一个词",
    "不超过 80 字",
    "不超过 60 字",
    "（2–3 条）",
    "高 / 中 / 低",
    "修正 / 坚持",
    "无 / 松动 / 转向",
    "一句话（",
    "本轮规则",
)


def setup(db: Path, fresh: bool = True) -> None:
    os.environ.update(
        {
            "DJANGO_SETTINGS_MODULE": "agora.settings",
            "DATABASE_URL": f"sqlite:///{db}",
            "OPENAI_BASE_URL": "",
            "AGORA_MAX_RUNNING_PER_USER": "1000",
            "DEBUG": "0",
            "LOG_LEVEL": "WARNING",
        }
    )
    import django

    django.setup()
    if not fresh:
        return
    from django.contrib.auth.models import User
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    call_command("load_libraries", verbosity=0)
    User.objects.create_user("bench", password="bench-password-1")


JUDGE: dict = {}  # the side-flip check as it was before `without_forms` switched the engine's off


def judge(text: str, side, speaker) -> bool:
    from debates.engine import duel

    return JUDGE.get("speaks_for", duel.speaks_for)(text, side, speaker)


def without_forms() -> None:
    """What Agora did before: no grammar for the local model, no second try on a lost side."""
    from debates.engine import duel
    from debates.providers.local import LocalModelClient

    LocalModelClient.supports_grammar = False
    JUDGE["speaks_for"] = duel.speaks_for  # the measurement still judges every speech
    duel.speaks_for = lambda *args: False


def form_of(fmt: str, key: str, turn) -> object | None:
    """The form a turn was asked to write, by its key (None: free text)."""
    from debates.engine import duel, panel, roundtable

    names = [n for n in (turn.data or {}).get("others", [])]
    if fmt == "duel":
        return duel.CLOSE_FORM if key == "duel:close" else duel.SPEECH_FORM if key.startswith("duel:") else None
    if fmt == "panel":
        if key.startswith(("host:admission",)):
            return panel.ADMISSION_GRAMMAR_FORM
        if key.startswith("r4:"):
            return panel.CLOSING_FORM
        return panel.SPEECH_FORM if key[:1] == "r" else None
    if fmt == "roundtable":
        if key == "host:suitability":
            return roundtable.SUITABILITY_GRAMMAR
        if key.startswith("r1:"):
            return roundtable.R1_GRAMMAR
        if key.startswith("r2:"):
            return roundtable.challenge_form(names or ["?"])
        if key.startswith("r3:"):
            return roundtable.revision_form("否决：" in turn.text or "失败场景" in turn.text)
    return None


def echoed(turn, form=None) -> bool:
    """The reply copies the prompt's instructions: one of the known phrases, the text of a line of
    the turn's own output format (what follows its label, six characters or more), or one of the
    form's labels written again inside a value, as a heading or with punctuation after it
    ("## 小结", "立场变化（转向）；小结；" inside the speech)."""
    if any(e in turn.text for e in ECHOES):
        return True
    for label in form.labels() if form else ():
        copies = re.findall(
            rf"(?:^|\n)[#\s*]*{re.escape(label)}(?=[:：（(，,。；;\s])|{re.escape(label)}(?=[:：（(，,。；;])",
            turn.text,
        )
        if len(copies) > 1:  # the label itself is one
            return True
    prompt = next((m["content"] for m in reversed(turn.messages or []) if m.get("role") == "user"), "")
    section = prompt.split("## 输出格式", 1)[1].split("\n## ", 1)[0] if "## 输出格式" in prompt else ""
    for line in section.splitlines():
        value = line.split("：", 1)[-1].strip(" …\t")
        if len(value) >= 6 and value in turn.text:
            return True
    return False


def complete(form, text: str) -> bool:
    """Every part labelled at a line start, in order, with something after its label."""
    from debates.engine.text import field_value

    at = 0
    for label in form.labels():
        found = text.find(f"{label}：", at)
        if found < 0 or (found > 0 and text[found - 1] != "\n") or not field_value(text[found:], (label,)):
            return False
        at = found + len(label)
    return True


def valid_summary(summary: str, question: str, limit: int) -> bool:
    from debates.engine.text import STRUCTURE_LABELS, restates

    s = summary.strip()
    if not s or len(s) > limit or s.startswith("#") or s.strip("：:* ") in STRUCTURE_LABELS:
        return False
    return not restates(s, question)  # the question again; a part of it that picks a side answers it


def measure(fmt: str, pks: list[int]) -> dict:
    from debates.engine import registry
    from debates.engine.text import summary_of
    from debates.models import Debate
    from personas.models import Persona

    limit = registry.get(fmt).summary_limit
    stats = {"debates": len(pks), "outcomes": [], "turns": 0, "complete": 0, "echoes": 0}
    stats |= {"summaries": 0, "valid_summaries": 0, "speeches": 0, "flips": 0, "tokens": 0, "seconds": 0.0}
    stats["examples"] = []
    for pk in pks:
        debate = Debate.objects.get(pk=pk)
        stats["outcomes"].append(debate.status)
        turns = list(debate.turns.filter(state="done").order_by("position"))
        # The duel's pair: whoever spoke (the pairing picks them when nobody is seated).
        speakers = {t.speaker_slug for t in turns if t.key.startswith("duel:") and t.key != "duel:close"}
        personas = {p.slug: p for p in Persona.objects.filter(slug__in=speakers, library__format=fmt)}
        for turn in turns:
            stats["tokens"] += turn.completion_tokens
            stats["seconds"] += turn.latency or 0.0
            stats["summaries"] += 1  # every turn's summary is read (the transcript, the stop rule)
            names = [t.speaker_name for t in turns if t.speaker_slug != turn.speaker_slug and t.key[:3] == "r1:"]
            turn.data = {**(turn.data or {}), "others": list(dict.fromkeys(names))}
            form = form_of(fmt, turn.key, turn)
            # The stored text and summary derived again from the reply by the engine's own rules
            # (a no-op on a run of today's code), so --from-db measures an earlier run's replies
            # as Agora would store them now.
            turn.text = form.tidy(turn.text) if form is not None else turn.text
            summary = summary_of(turn.text, limit, debate.question)
            stats["valid_summaries"] += valid_summary(summary, debate.question, limit)
            if form is not None:
                stats["turns"] += 1
                stats["complete"] += complete(form, turn.text)
                stats["echoes"] += echoed(turn, form)
            if fmt == "duel" and turn.key.startswith("duel:") and turn.key != "duel:close":
                later = [t for t in turns if t.key == turn.key + ":again"]
                if later:
                    continue  # the second try is the speech that stands
                slug = turn.key.split(":")[2]
                opponent = next((p for s, p in personas.items() if s != slug), None)
                me = personas.get(slug)
                if me and opponent:
                    from debates.specs import persona_spec

                    stats["speeches"] += 1
                    flipped = judge(turn.text, persona_spec(opponent), persona_spec(me))
                    stats["flips"] += flipped
                    stats["examples"].append(
                        {"speaker": slug, "opponent": opponent.slug, "text": turn.text, "flip_by_method": flipped}
                    )
    return stats


def agreement() -> dict | None:
    """The side-flip method against speeches labelled by reading (bench/data/side_flip_labels.json)."""
    path = ROOT / "bench" / "data" / "side_flip_labels.json"
    if not path.exists():
        return None
    from debates.engine.spec import PersonaSpec

    labelled = json.loads(path.read_text(encoding="utf-8"))
    people = {p["slug"]: PersonaSpec(**p) for p in labelled["personas"]}
    agree = sum(
        judge(s["text"], people[s["opponent"]], people[s["speaker"]]) == s["flip"] for s in labelled["speeches"]
    )
    return {
        "labelled": len(labelled["speeches"]),
        "agree": agree,
        "flips_labelled": sum(s["flip"] for s in labelled["speeches"]),
    }


def pct(a: int, b: int) -> str:
    return f"{100 * a / b:.0f}% ({a}/{b})" if b else "—"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--no-forms", action="store_true", help="before: no grammar, no second try")
    parser.add_argument("--per-format", type=int, default=3)
    parser.add_argument("--formats", default=",".join(QUESTIONS))
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "out" / "local_quality.json")
    parser.add_argument("--from-db", type=Path, help="measure the debates of an earlier run's database again")
    parser.add_argument(
        "--defaults",
        action="store_true",
        help="each format's defaults as the start form sizes them for the bundled model: one ordinary question "
        "per format (only the question and the format given), wall time, load and repetitions cut",
    )
    args = parser.parse_args(argv)
    if args.defaults:
        defaults(args)
        return

    if args.from_db:
        setup(args.from_db, fresh=False)
        from debates.models import Debate

        by_format: dict[str, list[int]] = {}
        for pk, fmt in Debate.objects.order_by("pk").values_list("pk", "format"):
            by_format.setdefault(fmt, []).append(pk)
        report({fmt: measure(fmt, pks) for fmt, pks in by_format.items()}, args, 0.0)
        return
    workdir = Path(tempfile.mkdtemp(prefix="agora-quality-"))
    setup(workdir / "quality.sqlite3")
    if args.no_forms:
        without_forms()
    from django.contrib.auth.models import User

    from debates import runner
    from debates.forms import create_debate

    owner = User.objects.get(username="bench")
    started = time.monotonic()
    results = {}
    loop = asyncio.new_event_loop()
    for fmt in args.formats.split(","):
        pks = []
        for values in QUESTIONS[fmt][: args.per_format]:
            values = {**values, "no_interrupt": True} if fmt == "roundtable" else values
            debate, errors = create_debate(values, owner=owner)
            if debate is None:
                raise SystemExit(f"the form refused {values}: {errors}")
            t0 = time.monotonic()
            outcome = loop.run_until_complete(runner.execute(debate.pk))
            print(f"{fmt:<10} #{debate.pk} {outcome:<8} {time.monotonic() - t0:6.0f} s  {values['topic']}", flush=True)
            pks.append(debate.pk)
        results[fmt] = measure(fmt, pks)
    print(f"database: {workdir / 'quality.sqlite3'}")
    report(results, args, time.monotonic() - started)


def load() -> str:
    """The machine's load averages (1, 5, 15 min), as uptime prints them."""
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def defaults(args) -> None:
    """One ordinary question per format, with nothing but the question and the format: the
    defaults a newcomer gets on the bundled model (`Format.local`). Prints the wall time beside
    the load before and after, and the turns cut for repeating themselves."""
    workdir = Path(tempfile.mkdtemp(prefix="agora-defaults-"))
    setup(workdir / "defaults.sqlite3")
    from django.contrib.auth.models import User

    from debates import runner
    from debates.forms import create_debate
    from debates.models import Debate

    owner = User.objects.get(username="bench")
    loop = asyncio.new_event_loop()
    rows = []
    for fmt in args.formats.split(","):
        values = {"topic": QUESTIONS[fmt][0]["topic"], "format": fmt}
        if fmt == "moderated":
            values["personas"] = QUESTIONS[fmt][0]["personas"]
        if fmt == "roundtable":
            values["no_interrupt"] = True
        debate, errors = create_debate(values, owner=owner)
        if debate is None:
            raise SystemExit(f"the form refused {values}: {errors}")
        before, t0 = load(), time.monotonic()
        outcome = loop.run_until_complete(runner.execute(debate.pk))
        wall = time.monotonic() - t0
        debate = Debate.objects.get(pk=debate.pk)
        turns = list(debate.turns.filter(state="done"))
        cut = sum(1 for t in turns if (t.data or {}).get("repetition_cut"))
        tokens = sum(t.completion_tokens for t in turns)
        row = {
            "format": fmt,
            "outcome": outcome,
            "status": debate.status,
            "wall_s": round(wall, 1),
            "turns": len(turns),
            "completion_tokens": tokens,
            "repetitions_cut": cut,
            "options": debate.options,
            "load_before": before,
            "load_after": load(),
        }
        rows.append(row)
        print(
            f"{fmt:<10} {debate.status:<8} {wall:6.0f} s  {len(turns):>2} turns  {tokens:>5} tokens  "
            f"cut {cut}  load {before} → {row['load_after']}  {values['topic']}",
            flush=True,
        )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    out = args.out.with_name("local_defaults.json")
    out.write_text(json.dumps(rows, ensure_ascii=False, indent=1))
    print(f"written: {out}")


def report(results: dict, args, seconds: float) -> None:
    print(f"\nlocal model quality · {'before (no forms)' if args.no_forms else 'with forms'} · {seconds:.0f} s\n")
    print(
        f"{'format':<11}{'turns':>6}  {'fields complete':<17}{'echoes':<14}{'valid summaries':<18}"
        f"{'side flips':<14}{'tok/s':>6}"
    )
    for fmt, s in results.items():
        flips = pct(s["flips"], s["speeches"]) if fmt == "duel" else "—"
        rate = s["tokens"] / s["seconds"] if s["seconds"] else 0
        print(
            f"{fmt:<11}{s['turns']:>6}  {pct(s['complete'], s['turns']):<17}{pct(s['echoes'], s['turns']):<14}"
            f"{pct(s['valid_summaries'], s['summaries']):<18}{flips:<14}{rate:6.1f}"
        )
    check = agreement()
    if check:
        print(
            f"\nside-flip method vs {check['labelled']} speeches labelled by reading: agrees on "
            f"{check['agree']}/{check['labelled']} ({check['flips_labelled']} labelled flips)"
        )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(
        json.dumps({"forms": not args.no_forms, "results": results, "agreement": check}, ensure_ascii=False, indent=1)
    )
    print(f"\nwritten: {args.out}")


if __name__ == "__main__":
    main()
