"""Lenient parsing and hard limits for model output.

Small models ignore length requests and drift from the asked-for structure, so every limit here is
enforced by code and every parser falls back to something sensible instead of failing the turn.
"""

from __future__ import annotations

import re
import unicodedata
from itertools import pairwise

from debates.engine.i18n import CJK

ELLIPSIS = "…"
_SENTENCE_END = re.compile(r"(?<=[。！？!?；;])|(?<=\.)\s")
_WS = re.compile(r"\s+")
_PUNCT = re.compile(r"[\s\"'“”‘’「」『』《》〈〉()（）\[\]【】,，.。!！?？:：;；、…—\-*_#>`]+")


def clip(text: str, limit: int) -> str:
    """At most `limit` characters, marked with an ellipsis when cut."""
    text = text.strip()
    if len(text) <= limit:
        return text
    return text[: max(0, limit - 1)].rstrip() + ELLIPSIS


def cut_marked(text: str, limit: int, mark: str) -> tuple[str, bool]:
    """Cut a speech at `limit` characters and append a visible mark; returns (text, was_cut)."""
    if len(text) <= limit:
        return text, False
    return text[:limit].rstrip() + mark, True


def normalise(text: str) -> str:
    """For containment checks: NFKC, lowercase, no punctuation or whitespace."""
    return _PUNCT.sub("", unicodedata.normalize("NFKC", text).lower())


# Section labels the formats ask for; a line holding only one of these is a heading, not content.
STRUCTURE_LABELS = ("正文", "立场", "立场变化", "核心论点", "核心论据", "论据", "反驳", "沉默声明", "置信度", "小结")
# Field lines about the speech rather than of it: never a speech's first sentence.
META_LABELS = ("立场变化", "沉默声明", "置信度", "小结")
# The English forms' labels ("Speech: …", "Position change: …"), read as the Chinese above are.
_EN_META = re.compile(r"(?:position change|silence|confidence|summary)\s*:", re.IGNORECASE)
_EN_STRUCTURE = re.compile(
    r"^(?:speech|body|(?:final )?position|thesis|(?:core )?arguments?|rebuttal)\s*\**\s*:\s*\**\s*", re.IGNORECASE
)


def first_sentence(text: str) -> str:
    return next(sentences(text), "")


def sentences(text: str):
    """The sentences of the lines that say something, in order: headings, labels alone and meta
    lines skipped, a structure label ("正文：", "Speech:") dropped from the front."""
    for line in text.splitlines():
        raw = line.strip()
        raw = _ANNOUNCED_HEADING.sub("", raw)
        if raw.startswith("#") or _BOLD_HEADING.fullmatch(raw):
            continue  # a heading ("## 双方主张", "**共识**") is not what the text says
        line = raw.lstrip(">*-• ").strip().strip("*").strip()
        line = _ENUMERATOR.sub("", line)  # "1. 念佛…": the number is not a sentence of its own
        if not line or _is_label_only(line) or line.startswith(META_LABELS) or _EN_META.match(line):
            continue
        # "正文：……", "Speech: …" — drop the label, keep what follows it.
        line = re.sub(rf"^(?:{'|'.join(STRUCTURE_LABELS)})\s*\**\s*[:：]\s*\**\s*", "", line)
        line = _EN_STRUCTURE.sub("", line)
        yield from (sentence.strip() for sentence in _SENTENCE_END.split(line) if sentence.strip())


# A line all in bold is a heading ("**共识**", "**Reasons:**"), unless it ends a sentence: "**We
# should hire senior engineers.**" is the speech's claim in bold (the bundled model's Jobs, debate 72).
_BOLD_HEADING = re.compile(r"\*\*[^*]+(?<![.。!?！？])\*\*[:：]?")
# A heading announced in a sentence: "Let me start with this: **Hiring Senior Engineers or Training
# Juniors**" (debate 72, then its summary was "Let me start with this…"). A bold claim after the
# colon ends a sentence and stays ("Let me start with this: **we should hire seniors.**").
# Who announces what the speech will do ("So, let me…", "I'd like to…"), here and in `_ANNOUNCEMENT`.
_ANNOUNCER = (
    r"(?:(?:so|well|now|okay|alright|first|first of all|to begin|to start)\W+)?"
    r"(?:let'?s|let us|let me|i'?d like to|i would like to|i will|i'?ll|i want to|we will|we'?ll"
    r"|today,? we(?:'?ll| will)?)"
)
_HEADING_ANNOUNCED = (
    rf"{_ANNOUNCER}"
    r"\s+(?:start|begin|open)(?:\s+(?:with|by))?(?:\s+(?:this|the question|the topic|the following))?\s*[:：]"
    r"|(?:那么|好)?[，,]?(?:让我们?|我们)(?:先)?从(?:这里|这个问题|这个话题)?开始[：:]"
)
# At the line's start or after a sentence of its own ("Certainly, Steve Jobs. Let me start with this: …").
_ANNOUNCED_HEADING = re.compile(
    rf"(?:^|(?<=[.!?。！？]))\s*(?:{_HEADING_ANNOUNCED})\s*{_BOLD_HEADING.pattern}\s*$", re.IGNORECASE
)

_ENUMERATOR = re.compile(r"^(?:\d{1,2}|[一二三四五六七八九十]{1,3}|[a-zA-Z])[.、)）]\s*(?=\S)")
# Where a sentence may end, and where (failing that) a clause may.
_SENTENCE_STOP = re.compile(r"[。！？!?；;](?=[」』”’\"')）\]]*)|(?<![0-9A-Z])\.(?=\s|$)")
_CLAUSE_STOP = re.compile(r"[，、,：:—]")


# Words that ask what to do ("该不该上微服务？", "should we …"): such a question is a decision,
# whatever a small host calls it (the panel's admission, the roundtable's suitability).
WHAT_TO_DO = r"该不该|要不要|应不应|是否应|应该|应当|值不值|值得|\bshould\b|\bought to\b|\bworth\b"


def asks_what_to_do(question: str) -> bool:
    return re.search(WHAT_TO_DO, question, re.IGNORECASE) is not None


def _says_something(text: str) -> bool:
    """Words, not just a number or punctuation ("1.", "——")."""
    return bool(re.search(r"[^\W\d_]", text))


# A salutation and nothing else ("Good evening, everyone.", "各位好！"), or thanks ("Thank you,
# Charlie."): the bundled model opens speeches with them, and they told a reader of the summary
# nothing.
_GREETING = re.compile(
    r"^\W*(?:(?:good (?:morning|afternoon|evening)|hello|hi|greetings|welcome)(?:,? (?:everyone|all|friends|"
    r"colleagues|ladies and gentlemen|my friends))?|ladies and gentlemen|dear (?:friends|colleagues|all)|"
    r"(?:大家|各位|诸位)(?:朋友|同事|同学|嘉宾)?(?:们)?[，,]?(?:好|晚上好|早上好|下午好)|女士们，?先生们)\W*$",
    re.IGNORECASE,
)
_THANKS = re.compile(
    r"^\W*(?:thank you|thanks|谢谢|感谢|多谢|(?:it'?s|it is|i'?m|i am) (?:great|good|a pleasure|an honou?r|glad|happy|"
    r"delighted) to be here|很高兴(?:来到|在)这里)",
    re.IGNORECASE,
)  # … and being glad to be there ("It's great to be here today.")
# Thanks for the chance to speak say nothing of the question at any length ("Thank you for the
# opportunity to share my perspective on this important question.", the bundled model's Jobs, debate 80).
_THANKS_FOR_CHANCE = re.compile(
    r"^\W*(?:thank you|thanks)(?:\s+(?:so|very)\s+much)?\s+for\s+(?:the|this|giving me the)\s+"
    r"(?:opportunity|chance|invitation)\b",
    re.IGNORECASE,
)
_INTERJECTION_WORDS = "absolutely|certainly|sure|of course|great|okay|ok|well|indeed|yes|alright|right|当然|好的|没问题"
# An interjection with no more than a name after it ("Absolutely, Charlie Munger.").
_INTERJECTION = re.compile(rf"^\W*(?:{_INTERJECTION_WORDS})(?=\s*[,!.，！。]|\s*$)", re.IGNORECASE)
# One with its punctuation, before the speech goes on ("Certainly! Steve Jobs: …").
_INTERJECTION_LEAD = re.compile(rf"[ \t]*(?:{_INTERJECTION_WORDS})[ \t]*[,!.，！。][ \t]*", re.IGNORECASE)


# A sentence that only announces the speech ("So, let's dive into the question of whether…",
# "让我们来探讨一下这个问题。"): the bundled model's English moderated speeches opened with one, and
# it names the question's words, so it won the summary. Only one whose object is the question
# itself: "Let me start by acknowledging that the question is about value" makes a claim, and one
# that goes on past a colon ("Let's look at the numbers: …") says something.
_ANNOUNCEMENT = re.compile(
    rf"^\W*{_ANNOUNCER}"
    r"\s+(?:(?:briefly|now|first|quickly)\s+)?(?:dive|delve|jump|discuss|explore|talk|look|consider|examine|address|unpack)"
    r"(?:\s+(?:into|about|at|through))?\s+(?:the|this|today'?s)\s+(?:question|topic|issue|debate|matter)\b[^:：;；—]*$"
    # or only says what the question is about ("The question is about hiring seniors or training juniors.")
    r"|^\W*(?:the|this|today'?s)\s+(?:question|topic|issue|debate)\s+(?:here\s+)?(?:is|concerns)\s+"
    r"(?:about|whether|of|how)\b[^:：;；—]*$"
    r"|^\W*(?:那么|好|首先)?[，,]?(?:让我们|我们来|下面我们|今天我们|我来|我想)(?:一起)?(?:来)?"
    r"(?:探讨|讨论|谈谈|分析|看看|聊聊|说说)[^：:；;]*(?:问题|话题|议题)\W*$"
    r"|^\W*(?:这个|今天的|本场的?)(?:问题|话题|议题)是关于[^：:；;，,]*的?\W*$",
    re.IGNORECASE,
)


def _substantial(sentence: str) -> bool:
    """More than an interjection, a courtesy or an announcement of the speech: three words or
    more, or six Chinese characters."""
    sentence = sentence.strip()
    words, chinese = len(re.findall(r"[A-Za-z0-9]+", sentence)), len(CJK.findall(sentence))
    courtesy = (
        _GREETING.match(sentence)
        or _ANNOUNCEMENT.match(sentence)
        or (_INTERJECTION.match(sentence) and words <= 4 and chinese <= 8)
        or (_THANKS.match(sentence) and words <= 12 and chinese <= 20)
        or (_THANKS_FOR_CHANCE.match(sentence) and words <= 20)
    )
    return not courtesy and (words >= 3 or chinese >= 6)


# Words of a question that say nothing of its subject.
_FUNCTION_WORDS = frozenset(
    "should would could which what when where whether their there these those about with from into than "
    "that this does have more most better rather over first".split()
)


def _question_words(question: str) -> tuple[set[str], set[str]]:
    """The question's content words (English, four letters or more) and Chinese bigrams."""
    words = {w for w in re.findall(r"[a-z]{4,}", question.lower()) if w not in _FUNCTION_WORDS}
    return words, _chinese_bigrams(question)


def _chinese_bigrams(text: str) -> set[str]:
    chinese = "".join(CJK.findall(text))
    return bigrams(chinese) if len(chinese) > 1 else set()


def _on_the_question(sentence: str, asked: tuple[set[str], set[str]]) -> bool:
    """`sentence` speaks of the question's subject: one of its content words, or two of its
    Chinese bigrams ("念佛", "参禅")."""
    words, pairs = asked
    return bool(words & set(re.findall(r"[a-z]{4,}", sentence.lower()))) or len(pairs & _chinese_bigrams(sentence)) >= 2


_LETTERS = re.compile(r"[^\W\d_]{2}")  # two letters either side of a clip: it would split a word


def whole_sentences(text: str, limit: int) -> str:
    """`text` within `limit` characters, ending where a sentence ends. A summary that stops
    mid-phrase (a grammar's or a token limit's cut: "…因此，无论在") loses its broken tail, back to
    its last full sentence; with no full sentence to keep, a long one ends at its last clause,
    marked with an ellipsis. Text that ends on a sentence, or is short and has no sentence end in
    it at all, is left as it is (over `limit`, it is clipped)."""
    text = _ENUMERATOR.sub("", text.strip())
    if len(text) <= limit and _ends_sentence(text):
        return text
    head = text[:limit]
    ends = [m.end() for m in _SENTENCE_STOP.finditer(head) if _says_something(head[: m.end()])]
    if ends and ends[-1] >= len(head) * 0.3:
        return head[: ends[-1]].strip()
    if len(text) <= limit and len(text) < limit * 0.5:
        return text  # short, one phrase: nothing says it was cut
    room = text[: limit - 1]
    clauses = [m.start() for m in _CLAUSE_STOP.finditer(room) if _says_something(room[: m.start()])]
    if clauses and clauses[-1] >= len(room) * 0.3:
        return room[: clauses[-1]].rstrip() + ELLIPSIS
    # Nor in the middle of a word ("…architecture is beneficia…"): back to the last space.
    space = room.rfind(" ")
    if _LETTERS.match(text[len(room) - 1 : len(room) + 1]) and space >= len(room) * 0.5:
        return room[:space].rstrip(" ,;:") + ELLIPSIS
    return clip(text, limit)


def _ends_sentence(text: str) -> bool:
    return bool(re.search(r"(?:[。！？!?；;…]|(?<![0-9])\.)[」』”’\"')）\]]*$", text))


def _is_label_only(line: str) -> bool:
    return bool(re.fullmatch(r"[\w\s·]{1,12}[:：]", line)) or line.strip("*：: ") in STRUCTURE_LABELS


def field_value(text: str, labels: tuple[str, ...], *, multiline: bool = False) -> str:
    """The value after the last line labelled with any of `labels` ("小结：…", "**Summary**: …").

    With `multiline`, the value runs until the next labelled line or blank line.
    """
    label_re = "|".join(re.escape(label) for label in labels)
    pattern = re.compile(
        rf"^[ \t>*#\-•]*(?:\*\*)?\s*【?(?:{label_re})】?\s*(?:\*\*)?\s*[:：]?\s*(?:\*\*)?\s*(.*)$",
        re.IGNORECASE | re.MULTILINE,
    )
    matches = list(pattern.finditer(text))
    if not matches:
        return ""
    match = matches[-1]
    value = match.group(1).strip()
    if not multiline:
        return value.strip("*").strip()
    lines = [value] if value else []
    for line in text[match.end() :].split("\n")[1:]:
        if not line.strip():
            if lines:
                break
            continue
        if re.match(r"^[ \t>*#\-•]*(?:\*\*)?\s*【?[\w\u4e00-\u9fff ]{1,10}】?\s*(?:\*\*)?[:：]", line) and lines:
            break
        lines.append(line.strip())
    return "\n".join(lines).strip()


# The summary the formats ask for ("小结"), before words a speech may also use for other lines.
OWN_SUMMARY_LABELS = ("小结", "本轮小结", "summary", "round summary")
SUMMARY_LABELS = (*OWN_SUMMARY_LABELS, "摘要", "总结")


# The notes a speech cut at a limit ends on, in the debate's language. They are part of the stored
# speech, which the later speakers read as well; a summary leaves them out (`_without_cut_note`).
CUT_MARK = {"zh": "……【超出字数，已由主持人截断】", "en": " … [cut at the limit by the moderator]"}  # moderated
CAPPED_MARK = {"zh": "……【回复超出上限，已截断】", "en": " … [reply cut at its ceiling]"}  # past its ceiling
REPEATED_MARK = {"zh": "……【截断：模型在重复自己】", "en": " … [cut: the model repeated itself]"}  # repeating itself
_CUT_NOTE = re.compile(
    "(?:"
    + "|".join(re.escape(m) for marks in (CUT_MARK, CAPPED_MARK, REPEATED_MARK) for m in marks.values())
    + r")\s*$"
)


def _without_cut_note(text: str) -> str:
    """`text` without the note a cut ended it on, the words the cut broke off marked with an
    ellipsis; a Latin word the cut may have split is dropped, as `whole_sentences` never ends inside
    one ("…a diverse set of skills a" → "…a diverse set of skills…")."""
    body = _CUT_NOTE.sub("", text).rstrip()
    if body == text.rstrip() or _ends_sentence(body):
        return body
    space = body.rfind(" ")
    if body[-1].isalpha() and not CJK.match(body[-1]) and space >= len(body) * 0.5:
        body = body[:space].rstrip(" ,;:")
    return body + ELLIPSIS


def summary_of(text: str, limit: int, question: str = "") -> str:
    """The speaker's own summary line if it wrote one, else its first sentence; never over `limit`,
    and ending on a sentence (`whole_sentences`), never a bare list number.
    A "总结：" line elsewhere in the speech never replaces the asked-for "小结". A line that only
    says the question again (small models open with it) is passed over for the next one."""
    text = _without_cut_note(text)
    summary = field_value(text, OWN_SUMMARY_LABELS) or field_value(text, SUMMARY_LABELS)
    # missing, a copied "…", a bare "1.", the question again
    if not _says_something(summary) or restates(summary, question):
        candidates = [
            s
            for s in sentences(_without_labels(text, SUMMARY_LABELS))
            if _says_something(s) and not restates(s, question)
        ]
        # An opening interjection ("Absolutely!", "当然！") says nothing the reader can use, nor does
        # a self-introduction: of the first few sentences, one on the question's subject is taken.
        substantial = [c for c in candidates if _substantial(c)]
        asked = _question_words(question)
        on_it = [c for c in substantial[:3] if _on_the_question(c, asked)]
        summary = next(iter(on_it or substantial or candidates), "") or summary or text.strip()
        summary = _without_self_introduction(summary, limit)
    # Plain text beside the speech: Markdown's bold marks would show as they are ("Bayes**: …").
    return whole_sentences(_WS.sub(" ", summary.replace("**", "")), limit)


# "As an Apple co-founder known for product taste, radical simplicity, and end-to-end control, I
# firmly believe that…": the persona's own description, copied from its prompt before the claim
# (the bundled model's English moderated Jobs). The claim is the summary; the page names the speaker.
_SELF_INTRODUCTION = re.compile(
    r"^(?:As|Being)\b.{1,160}?,\s+(I\s+(?:(?:firmly|strongly|truly|still)\s+)?"
    r"(?:believe|think|hold|argue|maintain|recommend|advise|would|am convinced)\b.+)$"
    r"|^作为[^。！？]{1,60}?[，,]\s*(我(?:坚持|始终)?(?:认为|主张|相信|建议|觉得|以为).+)$",
    re.DOTALL,
)


# The wrapper the moderated seed forbids ("作为乔布斯，我会说：…"; the bundled model's "As Steve Jobs,
# I would say: We should hire senior engineers."): the summary is what it says.
_WOULD_SAY = re.compile(
    r"^(?:As\b[^,]{1,160},\s*)?(?:I(?:'d|\s+would|\s+will)?\s+say\s*[:,]"
    # or names its view before stating it ("As a thinker and teacher, my core view on the question
    # is that we should train juniors.", the bundled model's Confucius, debate 63)
    r"|my\s+(?:core\s+|main\s+|own\s+)?(?:view|position|answer|stance)(?:\s+on\s+[^,:]{1,80}?)?\s+is(?:\s+(?:clear|simple|unequivocal))?(?:\s+that|:))"
    r"\s*(\S.*)$"
    r"|^(?:作为[^，,。]{1,30}[，,]\s*)?我(?:会|想|要)说[：:，,]\s*(\S.*)$",
    re.DOTALL | re.IGNORECASE,
)


def _without_self_introduction(sentence: str, limit: int) -> str:
    """The claim after a long self-description; a lead that only names the speaker ("As Steve
    Jobs, I believe…") is short and says who holds the claim: kept, unless it only wraps the
    claim ("As Steve Jobs, I would say: …") or the sentence is longer than `limit`, where a cut at
    its clause would leave only the lead ("As a Confucian philosopher…", debate 69)."""
    sentence = sentence.strip()
    if said := _WOULD_SAY.match(sentence):
        claim = said.group(1) or said.group(2)
        return claim[:1].upper() + claim[1:]
    found = _SELF_INTRODUCTION.match(sentence)
    if not found:
        return sentence
    lead = sentence[: found.start(1 if found.group(1) else 2)]
    long = len(re.findall(r"[A-Za-z]+", lead)) >= 6 or len(CJK.findall(lead)) >= 12
    return sentence[len(lead) :] if long or len(sentence) > limit else sentence


def without_own_name(text: str, names) -> str:
    """A reply without its speaker's own name written as a label before it ("Charlie Munger: …",
    "**史蒂夫·乔布斯：**…", "【查理·芒格】…"): small models copy the "Name: speech" lines of the
    earlier speeches they are given; also on the first line after headings it opened with ("####
    Opening statements"), or as a heading itself ("## Steve Jobs"). A name followed by words of
    the speech stays ("Munger once said")."""
    names = [n for n in dict.fromkeys(names) if n]
    if not names:
        return text
    alternatives = "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True))
    # Headings it opened with are passed over, except one that is only the name ("## Steve Jobs").
    own_heading = rf"[ \t]*#{{1,6}}[ \t]*(?:\*\*)?(?:{alternatives})(?:\*\*)?[ \t]*[:：]?[ \t]*\n"
    start = re.match(rf"(?:(?!{own_heading})[ \t]*#{{1,6}}[^\n]*\n|[ \t]*\n)*", text).end()
    label = re.compile(
        rf"\s*(?:\*\*|【|\[)?\s*(?:{alternatives})\s*(?:\*\*)?\s*(?:[:：]|】|\])\s*(?:\*\*)?[ \t]*"
        rf"|[ \t]*\*\*\s*(?:{alternatives})\s*\*\*[ \t]*\n\s*"  # the name alone in bold on its line ("**Steve Jobs**")
        rf"|{own_heading}\s*"  # or as a heading of its own
    )
    # Also behind an opening interjection, which stays ("Certainly! Steve Jobs: As an Apple…").
    kept = _INTERJECTION_LEAD.match(text, start)
    if kept and (behind := label.match(text, kept.end())):
        start, found = kept.end(), behind
    else:
        found = label.match(text, start)
    return text[:start] + text[found.end() :] if found and text[found.end() :].strip() else text


# The most a lead before a restated question may hold, normalised ("依慧能大师之见", "inmahasisayadawsview").
_LEAD_CHARS = 24


def restates(line: str, question: str) -> bool:
    """`line` is the question again, or most of it (a part that picks a side is an answer), also
    behind a short lead: the duel's summary starts in the speaker's name under the grammar, and
    the bundled model then wrote the question ("依慧能大师之见，上班族每天只有二十分钟，该参禅还是念佛？")."""
    said, asked = normalise(line), normalise(question)
    if not said or not asked or answers_yes_no(line, question):
        return False
    if (said in asked and len(said) >= 0.8 * len(asked)) or similarity(line, question) > 0.8:
        return True
    return said.endswith(asked) and len(said) - len(asked) <= _LEAD_CHARS


# English yes/no questions open on one of these ("Should we …?"); the answer puts its subject first.
_AUXILIARIES = frozenset(
    "should shall is are was were do does did can could will would must may might has have had".split()
)
# A Chinese yes/no question asks with a particle at its end or an "A-not-A" pair; an answer drops both.
_ZH_ASKING = re.compile(r"[吗么嘛][?？]?\s*$|(.)不\1|是否|可否|能否|与否")
_WORD = re.compile(r"[a-z']+")


def answers_yes_no(line: str, question: str) -> bool:
    """`line` answers the yes/no `question` in its words, as a statement: "We should rewrite our
    monolith as microservices." for "Should we rewrite our monolith as microservices?" (the
    bundled model's panel position, near enough in characters to pass for the question again) or
    "我们要取消年终绩效考核。" for "我们要不要取消年终绩效考核？"."""
    if line.rstrip(" *").endswith(("?", "？")):
        return False
    asked = _WORD.findall(question.lower())
    if len(asked) >= 2 and asked[0] in _AUXILIARIES:
        said = _WORD.findall(line.lower())
        subject, verb = asked[1], asked[0]
        at = next((i for i, (a, b) in enumerate(pairwise(said)) if a == subject and b.startswith(verb)), None)
        # "…whether we should rewrite…" asks it again, indirectly
        return at is not None and not {"whether", "if"} & set(said[:at])
    if CJK.search(question) and _ZH_ASKING.search(question.strip()):
        return not _ZH_ASKING.search(line.strip())
    return False


def after_question(line: str, question: str) -> str | None:
    """What `line` says after opening with the question, written as asked behind at most a short
    lead (the bundled model's English verdict: "Charlie Munger: Should a first-time founder raise
    venture money or bootstrap? The decision depends…"); None where the question does not open it."""
    core = question.strip().rstrip("?？.。!！ ").lower()
    if len(normalise(core)) < 8:
        return None
    at = line.lower().find(core)
    if at < 0 or len(normalise(line[:at])) > _LEAD_CHARS:
        return None
    return line[at + len(core) :].lstrip(" ?？.。!！:：,，;；-—")


def _without_labels(text: str, labels: tuple[str, ...]) -> str:
    return "\n".join(line for line in text.splitlines() if not any(label in line.lower() for label in labels))


def bigrams(text: str) -> set[str]:
    norm = normalise(text)
    return {norm[i : i + 2] for i in range(len(norm) - 1)} or ({norm} if norm else set())


def similarity(a: str, b: str) -> float:
    """Jaccard similarity of character bigrams: language-agnostic, good enough for 'did it move?'."""
    x, y = bigrams(a), bigrams(b)
    if not x or not y:
        return 0.0
    return len(x & y) / len(x | y)


def bullet_items(text: str, limit: int | None = None) -> list[str]:
    """Numbered or bulleted items in `text`, cleaned; at most `limit`."""
    items = []
    for line in text.splitlines():
        match = re.match(r"^\s*(?:[-*•]|\d+[.、)）]|[一二三四五六七八九十]+[、.])\s*(.+)$", line)
        if match:
            items.append(match.group(1).strip())
    return items[:limit] if limit else items


_SLUG_WORD = re.compile(r"[a-z][a-z0-9]*")


def topic_slug(candidate: str, question: str, fallback_words: tuple[str, ...] = ("debate",)) -> str:
    """3–6 lowercase English words joined by '-': the model's suggestion if usable, else words
    from the question, padded from `fallback_words` (the archive name must never be empty)."""
    words = _SLUG_WORD.findall(candidate.lower())
    if not 3 <= len(words) <= 6:
        # A Chinese question is romanised (pinyin, tones dropped), so the archive name still says
        # what it was about: "念佛与参禅…" → nian-fo-yu-can-chan-na.
        # Imported here: its phrase table takes 0.3 s to load, paid by every `manage.py` command
        # if imported above (debates/warm.py loads it before a web process serves anything).
        from pypinyin import lazy_pinyin

        words = _SLUG_WORD.findall(" ".join(lazy_pinyin(question)).lower())[:6]
        for word in fallback_words:
            if len(words) >= 3:
                break
            words.append(word)
        while len(words) < 3:
            words.append("topic")
    return "-".join(words[:6])
