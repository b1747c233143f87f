"""L3 characters: a real person the user names, distilled into a persona (the roundtable seed's
人物蒸馏与持久化, its trigger 「和 XX、XX 讨论」).

Django-free: which people a question (or the start form's "Add a character" field) asks for, the
prompt and labelled form of the one distillation call, and what its answer must hold to become a
persona. Where it holds too little the character is refused with the reason: the seed offers no
degraded substitute. The web side (`debates.characters`) makes the call with the debate's model,
runs the purity check and saves what the user confirms.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from debates.engine.i18n import Text, gettext_noop, say, text
from debates.engine.structure import Form, Part

# -- who is asked for -------------------------------------------------------------------------------

# 「和巴菲特、霍珀讨论…」「我想跟芒格聊聊…」「请与 A 和 B 一起探讨…」: the seed's trigger, at the start of
# the question or of a sentence in it (after 请 / 我想 / 我们 …), so "要不要和老板讨论加薪" is about a
# talk with one's boss, not a call for a character (and 老板 is no one's name anyway: `NOT_PEOPLE`).
_ZH_TRIGGER = re.compile(
    r"(?:^|[。！？；!?;\n]\s*)(?:请|我想|我要|我们想|我们|想|帮我|让我们|让)?\s*(?:和|与|跟|同)\s*"
    r"(?P<names>[^，。！？；：,.!?;:\n]{1,80}?)\s*(?:一起|一块儿|一块)?"
    r"(?:讨论|聊聊|聊一聊|聊|辩论|探讨|商量|谈谈|论一论|议一议)"
)
# "Discuss with Warren Buffett and Grace Hopper whether …", "With Warren Buffett, Charlie Munger
# and Grace Hopper: should we …", "… let's talk it over with Grace Hopper." A name is a run of
# capitalised words (with van / de / bin … inside), so the list ends at the first lowercase word.
_NAME = r"[A-Z][\w.'’-]*(?:\s+(?:(?:van|von|de|da|der|di|du|la|le|bin|ibn)\s+)?[A-Z][\w.'’-]*)*"
_EN_TRIGGER = re.compile(
    r"(?:^|\b(?i:discuss|talk|debate|chat|argue|deliberate|think|roundtable)\w*"
    r"(?:\s+(?i:it|this|that|things))?(?:\s+(?i:over|through|out))?\s+)"
    rf"(?i:with)\s+(?P<names>{_NAME}(?:(?:\s*,\s*(?:and\s+)?|\s+and\s+|\s*&\s*){_NAME})*)"
)
_SPLIT = re.compile(r"\s*(?:、|，|,|；|;|/|／|\n|\band\b|&|以及|及|和|与|跟)\s*")
# Words the trigger may catch that name nobody to distil.
NOT_PEOPLE = frozenset(
    """
    我 我们 你 你们 他 她 他们 她们 大家 自己 团队 同事 老板 领导 上司 下属 客户 用户 朋友 家人 父母 爸妈 孩子
    老师 同学 伴侣 老婆 老公 男朋友 女朋友 合伙人 投资人 专家 AI 人工智能 模型 大模型 chatgpt gpt llm agora
    me us you him her them myself my team the team everyone someone experts
    """.casefold().split()
)
MAX_CHARACTERS = 4  # the table's seats are 3–7: more named people than this cannot all sit


def split_names(raw: str) -> list[str]:
    """The people a list names ("巴菲特、霍珀", "Warren Buffett and Grace Hopper"), each once, in order."""
    names: list[str] = []
    for part in _SPLIT.split(raw or ""):
        name = part.strip(" \t\"'“”‘’「」『』《》()（）[]【】.。:：")
        name = re.sub(r"^(?:the|a)\s+", "", name, flags=re.IGNORECASE)
        if not name or len(name) > 40 or name.casefold() in NOT_PEOPLE:
            continue
        if re.fullmatch(r"[A-Z]{1,3}", name):  # an acronym (AI, HR), not a person
            continue
        if name.casefold() not in {n.casefold() for n in names}:
            names.append(name)
    return names


def asked_characters(question: str) -> list[str]:
    """The real people the question asks to discuss with (「和 XX、XX 讨论」, "with X and Y")."""
    names: list[str] = []
    for pattern in (_ZH_TRIGGER, _EN_TRIGGER):
        for match in pattern.finditer(question or ""):
            names += [n for n in split_names(match.group("names")) if n.casefold() not in {x.casefold() for x in names}]
    return names


# -- the distillation call ---------------------------------------------------------------------------

# The persona's fields the call fills, with their labels in both languages (the form asks in the
# debate's language; the parser reads either: a model may answer in the other).
FIELDS = (
    ("known", "认识此人", "Known"),
    ("name", "中文名", "Chinese name"),
    ("name_en", "英文名", "English name"),
    ("description", "中文简介", "Chinese description"),
    ("description_en", "英文简介", "Description"),
    ("keywords", "关键词", "Keywords"),
    ("cognitive_frame", "认知框架", "Cognitive frame"),
    ("knowledge_domain", "知识域", "Knowledge domain"),
    ("decision_preferences", "决策偏好", "Decision preferences"),
    ("adversarial_rules", "对抗规则", "Adversarial rules"),
    ("expression_style", "表达风格", "Expression style"),
    ("sources", "来源", "Sources"),
)
PERSONA_PARTS = ("cognitive_frame", "knowledge_domain", "decision_preferences", "adversarial_rules", "expression_style")
# The parts' names in refusals (msgids).
PART_NAMES = {
    "cognitive_frame": gettext_noop("cognitive frame"),
    "knowledge_domain": gettext_noop("knowledge domain"),
    "decision_preferences": gettext_noop("decision preferences"),
    "adversarial_rules": gettext_noop("adversarial rules"),
    "expression_style": gettext_noop("expression style"),
}
MIN_PART = 8  # characters: less is no description of a way of thinking
MAX_TOKENS = 2000
_EMPTY = frozenset(["", "无", "未知", "不详", "暂无", "none", "n/a", "unknown", "-", "—", "…", "..."])
_NO = frozenset(["否", "不认识", "不", "no", "unknown", "未知"])


def form(lang: str) -> Form:
    """The labelled parts the call writes, in the debate's language (a grammar for local models)."""
    zh = lang != "en"
    label = {key: zh_label if zh else en_label for key, zh_label, en_label in FIELDS}
    parts = [Part(label["known"], choices=("是", "否") if zh else ("yes", "no"))]
    parts += [Part(label[k], chars=40) for k in ("name", "name_en")]
    parts += [Part(label[k], chars=120) for k in ("description", "description_en")]
    parts += [Part(label["keywords"], chars=80)]
    parts += [Part(label[k], chars=220, lines=3) for k in PERSONA_PARTS]
    parts += [Part(label["sources"], chars=200)]
    return Form(tuple(parts), colon="：" if zh else ": ").fit(MAX_TOKENS)


def messages(name: str, lang: str, found: list[dict] | None = None) -> list[dict]:
    """The one call that distils `name`: who the person is, never any question (the purity rule).
    `found`: pages research found about the person ({"title", "url", "text"}), numbered sources."""
    system = say(
        lang,
        "你是人物研究者，把一位真实人物蒸馏成一个可反复使用的讨论角色。角色只写这个人是谁、怎么想："
        "认知框架、知识域、决策偏好、对抗规则、表达风格。绝不写任何具体议题、任务或某一场讨论的内容"
        "（纯净性原则：议题在运行时另行注入）。只写有公开记录可查的事实与思想，不编造言论。"
        "如果你不认识这个名字所指的真实人物，或无法确定是哪一位，就在“认识此人”一栏写“否”，其余各栏写“无”。",
        "You are a researcher of people: distil one real person into a reusable discussion persona. The persona "
        "says only who the person is and how they think: cognitive frame, knowledge domain, decision preferences, "
        "adversarial rules, expression style. Never write any particular question, task or discussion into it "
        "(the purity rule: the question is added at run time). Write only what the public record shows; invent "
        "no quotations. If you do not know a real person by this name, or cannot tell which one is meant, answer "
        "no under Known and none everywhere else.",
    )
    shape = "\n".join(f"{p.label}{form(lang).colon}…" for p in form(lang).parts)
    lines = [say(lang, f"人物：{name}", f"Person: {name}")]
    if found:
        lines.append(
            say(
                lang,
                "## 检索到的资料（可在“来源”里按编号引用）",
                "## What research found (cite by number under Sources)",
            )
        )
        lines += [
            f"[{n}] {page.get('title', '')} — {page.get('url', '')}\n{page.get('text', '')}"
            for n, page in enumerate(found, 1)
        ]
    lines.append(
        say(
            lang,
            "逐行按下面的格式回答，每个标签各占一行，标签后直接写内容；“关键词”用顿号分隔；"
            "“来源”写这些判断依据的书、信件、演讲或访谈：",
            "Answer in exactly this form, each label on its own line with its content after it; separate the "
            "keywords with commas; under Sources name the books, letters, speeches or interviews these rest on:",
        )
    )
    lines.append(shape)
    return [{"role": "system", "content": system}, {"role": "user", "content": "\n\n".join(lines)}]


# -- what the answer must hold -------------------------------------------------------------------------


@dataclass
class Draft:
    """A distilled persona before anyone confirms it: the Persona model's fields."""

    asked: str
    name: str = ""
    name_en: str = ""
    description: str = ""
    description_en: str = ""
    keywords: list[str] = field(default_factory=list)
    cognitive_frame: str = ""
    knowledge_domain: str = ""
    decision_preferences: str = ""
    adversarial_rules: str = ""
    expression_style: str = ""
    sources: list[str] = field(default_factory=list)

    def persona_fields(self) -> dict:
        return {
            k: getattr(self, k)
            for k in ("name", "name_en", "description", "description_en", "keywords", *PERSONA_PARTS)
        }


class Refused(Exception):
    """No persona can be made of this answer: `reason` says why (a `Text`, rendered per reader)."""

    def __init__(self, reason: Text) -> None:
        super().__init__(str(reason))
        self.reason = reason


_LABELS = sorted(((label, key) for key, zh, en in FIELDS for label in (zh, en)), key=lambda x: -len(x[0]))
_LABEL_LINE = re.compile(
    r"^[ \t>*#\-•]*(?:\*\*)?\s*【?(?P<label>"
    + "|".join(re.escape(label) for label, _key in _LABELS)
    + r")】?\s*(?:\*\*)?\s*[:：]\s*(?:\*\*)?\s*(?P<value>.*)$",
    re.IGNORECASE,
)
_KEYS = {label.casefold(): key for label, key in _LABELS}


def _labelled(answer: str) -> dict[str, str]:
    values: dict[str, list[str]] = {}
    current = None
    for line in answer.splitlines():
        match = _LABEL_LINE.match(line)
        if match:
            current = _KEYS[match.group("label").casefold()]
            values[current] = [match.group("value").strip()]
        elif current is not None:
            values[current].append(line.strip())
    return {key: "\n".join(v for v in lines if v).strip() for key, lines in values.items()}


def _from_json(answer: str) -> dict[str, str]:
    """A model that answers with a JSON object instead of the form (some do when asked for structure)."""
    start, end = answer.find("{"), answer.rfind("}")
    if start < 0 or end <= start:
        return {}
    try:
        data = json.loads(answer[start : end + 1])
    except ValueError:
        return {}
    if not isinstance(data, dict):
        return {}
    keys = {key for key, _zh, _en in FIELDS}
    out = {}
    for k, v in data.items():
        key = _KEYS.get(str(k).casefold(), str(k))
        if key in keys:
            out[key] = "、".join(map(str, v)) if isinstance(v, list) else str(v)
    return out


def _items(value: str, limit: int) -> list[str]:
    items = [i.strip(" -•*\t") for i in re.split(r"[、，,；;\n]|(?<=\])\s", value or "")]
    return [i for i in items if i.casefold() not in _EMPTY][:limit]


def _filled(value: str) -> str:
    value = (value or "").strip().strip("*").strip()
    return "" if value.casefold() in _EMPTY else value


def parse(answer: str, asked: str) -> Draft:
    """The persona the answer describes, or Refused with the reason."""
    values = _labelled(answer or "")
    if len([k for k in values if k in PERSONA_PARTS]) < 2:
        values = _from_json(answer or "") or values
    if _filled(values.get("known", "")).casefold() in _NO:
        raise Refused(text(gettext_noop("the model does not know a real person called “%(name)s”"), name=asked))
    missing = [k for k in PERSONA_PARTS if len(_filled(values.get(k, ""))) < MIN_PART]
    if missing:
        message = gettext_noop("the model's answer lacks what a persona needs (%(parts)s)")
        raise Refused(text(message, parts=_parts_text(missing)))
    latin = not re.search("[\u3400-\u9fff]", asked)
    name = _filled(values.get("name", "")) or asked
    name_en = _filled(values.get("name_en", "")) or (asked if latin else "")
    return Draft(
        asked=asked,
        name=name[:120],
        name_en=name_en[:120],
        description=_filled(values.get("description", ""))[:300],
        description_en=_filled(values.get("description_en", ""))[:300],
        keywords=[k[:40] for k in _items(values.get("keywords", ""), 8)],
        sources=[s[:300] for s in _items(values.get("sources", ""), 12)],
        **{k: _filled(values[k]) for k in PERSONA_PARTS},
    )


def _parts_text(missing: list[str]) -> Text:
    """The missing parts as one Text the reader's language renders ("cognitive frame, style")."""
    params = {f"p{n}": text(PART_NAMES[k]) for n, k in enumerate(missing)}
    return Text(", ".join(f"%(p{n})s" for n in range(len(missing))), params)
