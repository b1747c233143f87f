"""A fake model that follows the output form its prompt asks for, in the prompt's language.

`FakeOpenAIServer`'s default reply is a few sentences whatever the prompt asks: a debate on it
never writes the labels, headings and parts its forms ask for, so a test of what a reader sees of
those (synthesis headings, verdict parts, parsed labels) needs each turn scripted. `follow_form`
is a server script that answers any turn as a model that follows the form would, without knowing
the formats: it reads the prompt's "## Output format" (or "## 输出格式") section and writes each of
its lines filled in (a label with a value, a heading with a line under it, a numbered item), in
English when the form is English and Chinese when it is Chinese. Options ("yes / no", "high /
medium / low", “none” “softened” …) get their first choice, a veto its "no". Every line says
something different, so the repetition cut never fires on it.

    server.script = follow_form          # or: FakeOpenAIServer(follow_form)
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

HEADINGS = ("## Output format", "## 输出格式")
COLON = re.compile(r"^(?P<label>[^:：]{1,80}?)\s*(?P<colon>: |：|:$)\s*(?P<rest>.*)$")
NUMBERED = re.compile(r"^(\d+)\.\s")
QUOTED = re.compile(r"[“\"]([^”\"]{1,20})[”\"]")
NUMERALS = "一二三四五六七八九十"

EN = [
    "A ten-person team pays for every extra service in on-call hours.",
    "The cheapest experiment is to split one module and measure the deploy time.",
    "Customers notice slow releases more than they notice architecture.",
    "Hiring a platform engineer costs more than a year of a shared database.",
    "Clear module boundaries inside one codebase keep the later split cheap.",
    "Tracing and logging must come before any network boundary.",
    "If traffic doubles, the monolith scales by adding two more instances.",
    "Independent teams are the real reason to split, and there is only one team.",
    "A failed migration would freeze product work for a whole quarter.",
    "Payments change on their own schedule and could go first.",
    "Measure the lead time of a change before deciding anything.",
    "The risk is paying the distributed-systems tax before earning revenue.",
]
ZH = [
    "十个人的团队，每多一个服务就多一份值班负担。",
    "最便宜的实验是先拆一个模块，量一量部署时间。",
    "客户在意的是发布速度，而不是架构名词。",
    "招一位平台工程师的成本，超过共享数据库一整年的开销。",
    "在同一个代码库里先划清模块边界，日后拆分就便宜。",
    "任何网络边界之前，先把链路追踪和日志做好。",
    "流量翻倍时，单体再加两台实例就能扛住。",
    "拆分的真正理由是团队各自独立，而现在只有一个团队。",
    "迁移失败会让产品开发整整停摆一个季度。",
    "支付模块有自己的变更节奏，可以最先拆出。",
    "做决定之前，先量出一次改动从提交到上线要多久。",
    "风险在于还没赚到收入，就先交了分布式系统的税。",
]
TERMS_EN = ["Service boundary", "Deploy lead time", "On-call load", "Shared database", "Team topology"]
TERMS_ZH = ["服务边界", "交付周期", "值班负担", "共享数据库", "团队拓扑"]


class _Words:
    """Sentences in one language, each used once per reply, starting where the request's digest says."""

    def __init__(self, chinese: bool, seed: bytes, others: list[str]) -> None:
        self.others = others  # the other speakers the prompt quotes, by name
        self.pool = ZH if chinese else EN
        self.at = seed[0] % len(self.pool)
        self.chinese = chinese

    def sentence(self) -> str:
        said = self.pool[self.at % len(self.pool)]
        self.at += 1
        return said

    def paragraph(self, n: int = 3) -> str:
        return ("" if self.chinese else " ").join(self.sentence() for _ in range(n))


def _text(content: Any) -> str:
    if isinstance(content, list):
        return " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return "" if content is None else str(content)


def form_of(prompt: str) -> tuple[list[str], bool] | None:
    """The lines of the prompt's output form (up to its first blank line) and whether it is Chinese."""
    for heading in HEADINGS:
        at = prompt.rfind(heading + "\n")
        if at >= 0:
            body = prompt[at + len(heading) + 1 :].split("\n\n", 1)[0]
            return [line.strip() for line in body.splitlines() if line.strip()], heading == HEADINGS[1]
    return None


def _value(label: str, rest: str, words: _Words) -> str:
    if re.search(r"hyphens|连字符", rest):
        return "startup-microservices-decision"
    if re.fullmatch(r"(Term|术语)\s*\S{1,2}", label):
        index = (int(label[-1]) if label[-1].isdigit() else NUMERALS.find(label[-1]) + 1) - 1
        return (TERMS_ZH if words.chinese else TERMS_EN)[index % 5]
    if label.strip() in ("Veto", "否决"):
        return "否" if words.chinese else "no"
    if label.strip() in ("Type", "类型"):  # the panel's admission: its types are listed above the form
        return "选择决策型" if words.chinese else "choice decision"
    if label.strip() in ("Challenge target", "质询对象") and words.others:
        return words.others[0]
    quoted = QUOTED.findall(rest)
    if len(quoted) >= 2 or (quoted and rest.startswith(("“", '"'))):  # a choice, or the one word asked for
        return quoted[0]
    options = [o.strip() for o in re.split(r"\s+/\s+", re.sub(r"[（(].*$", "", rest))]
    if len(options) > 1 and all(0 < len(o) <= 20 for o in options):
        return options[0]
    return words.sentence()


def _line(line: str, words: _Words) -> list[str]:
    if line.startswith("#"):
        return [re.split(r"\s*[（(]", line, maxsplit=1)[0]]
    if re.fullmatch(r"[（(].*[）)]", line) or re.fullmatch(r"[…. ]+", line):
        return [words.sentence()] if line.startswith("…") else []
    if line.startswith("- "):
        inner = _line(line[2:], words)
        return [f"- {inner[0]}", *inner[1:]] if inner else [f"- {words.sentence()}"]
    numbered = NUMBERED.match(line)
    if numbered:
        return [f"{numbered.group(1)}. {words.sentence()}"]
    match = COLON.match(line)
    if match:
        label, colon, rest = match.group("label"), match.group("colon"), match.group("rest")
        if rest.startswith("- "):  # "At most 3 lines: - Blind spot: …"
            return _line(rest, words)
        if not rest.strip():  # "Arguments:" before its numbered items
            return [f"{label}{colon.strip() if colon != '：' else colon}"]
        return [f"{label}{colon}{_value(label, rest, words)}"]
    return [words.sentence()]


def _introduction(line: str) -> bool:
    """The form's first line says how to write it ("Four lines:", "Write only your speech as …")."""
    match = COLON.match(line)
    return not match or not match.group("rest").strip() or line.startswith(("Write", "只输出", "按"))


def follow_form(request: dict[str, Any]) -> str | None:
    """A `FakeOpenAIServer` script: the reply a model following the prompt's output form would
    write; None (the server's default reply) when the prompt has no form."""
    messages = request.get("messages") or []
    prompt = next((_text(m.get("content")) for m in reversed(messages) if m.get("role") == "user"), "")
    found = form_of(prompt)
    if found is None:
        return None
    lines, chinese = found
    digest = hashlib.sha256(json.dumps(messages, sort_keys=True, ensure_ascii=False).encode()).digest()
    system = next((_text(m.get("content")) for m in messages if m.get("role") == "system"), "")
    me = system.split("\n", 1)[0]
    others = [n for n in re.findall(r"^### (.+?)·R\d", prompt, re.M) if n not in me]
    words = _Words(chinese, digest, others)
    if lines and _introduction(lines[0]):
        lines = lines[1:]
    written = []
    for at, line in enumerate(lines):
        written += _line(line, words)
        if line.startswith("#") and (at + 1 == len(lines) or lines[at + 1].startswith("#")):
            written.append(words.sentence())  # a heading with nothing under it in the form
    return "\n".join(written) if written else words.paragraph()
