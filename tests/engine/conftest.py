"""Fixtures for engine tests: persona and spec builders, and two ways to run a debate.

`await debate(spec, fake)` runs a spec on the in-process `testkit.fake_llm.FakeLLM`, whose replies
are scripted by turn key (`fake.reply("r2:feynman", ...)`): what most engine tests need. The
`harness` fixture runs a spec through `OpenAICompatibleClient` against the loopback
`FakeOpenAIServer`, for the tests about the provider path (retries, dropped streams, the usage the
server reports) and for `tests/security`. Its client writes each turn's key into the request body
(`TURN_FIELD`), so HTTP scripts and faults pick turns by key too, never by prompt wording.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from typing import Any

import pytest

from debates.engine import events as ev
from debates.engine import registry
from debates.engine.budget import Ledger
from debates.engine.debate import run_debate
from debates.engine.spec import (
    CompletedTurn,
    DebateSpec,
    DomainTemplateSpec,
    LibrarySpec,
    PairingRuleSpec,
    PersonaSpec,
    SeatSpec,
)
from debates.engine.turns import ClientPool
from debates.providers.openai_compat import OpenAICompatibleClient
from testkit.fake_llm import Call, FakeLLM
from testkit.fake_openai import FakeOpenAIServer, RecordedRequest

# -- personas -----------------------------------------------------------------------------------


def persona(slug: str, name: str, **kw) -> PersonaSpec:
    kw.setdefault("text", f"{name}的认知框架：简短的测试人格。")
    return PersonaSpec(slug=slug, name=name, **kw)


HUINENG = persona("huineng", "慧能大师", tradition="禅宗", keywords=("禅宗", "顿悟", "自性", "参禅", "坛经"))
YINGUANG = persona("yinguang", "印光大师", tradition="净土宗", keywords=("净土", "念佛", "持名", "往生"))
KUMARAJIVA = persona("kumarajiva", "鸠摩罗什", tradition="三论/中观", keywords=("中观", "空有", "般若"))
AJAHN_CHAH = persona("ajahn-chah", "阿姜查", tradition="上座部", keywords=("戒律", "森林", "头陀", "放下"))
MAHASI = persona("mahasi-sayadaw", "马哈希尊者", tradition="上座部", keywords=("内观", "四念处", "标记", "放下"))
MASTERS = [HUINENG, YINGUANG, KUMARAJIVA, AJAHN_CHAH, MAHASI]

PAIRING_RULES = [
    PairingRuleSpec(("huineng", "yinguang"), ("禅净", "念佛", "参禅"), None, "禅净"),
    PairingRuleSpec(("ajahn-chah", "mahasi-sayadaw"), ("戒律行持", "直观内观"), 3, "戒律 vs 内观"),
]

PANEL_ROLES = [
    persona("osborn", "奥斯本", tier="panel", role="divergent", keywords=("发散", "可能性空间")),
    persona("hegel", "黑格尔", tier="panel", role="convergent", keywords=("收敛", "辩证")),
    persona("bayes", "贝叶斯", tier="panel", role="verifier", keywords=("验证", "证据")),
    persona("feynman", "费曼", tier="panel", role="auditor", keywords=("审查", "自我欺骗")),
    persona("debono", "德博诺", tier="panel", role="integrator", keywords=("横向思维", "价值回收")),
]
CICERO = persona("cicero", "西塞罗", kind="host", role="host")

DEVIL = persona("devil-advocate", "魔鬼代言人", tier="l1", role="devil-advocate", veto_right=True, keywords=("风险",))
OPTIMIST = persona("optimist", "乐观者", tier="l1", role="optimist", keywords=("机会",))
USER_ADVOCATE = persona("user-advocate", "用户代言人", tier="l1", role="user-advocate", keywords=("用户",))
RAG = persona("rag-specialist", "检索增强生成专家", tier="l2", keywords=("RAG", "检索", "知识库"))
LLM_ARCH = persona("llm-architect", "大模型架构师", tier="l2", keywords=("LLM", "推理", "微调"))
AI_PM = persona("ai-product-manager", "AI 产品经理", tier="l2", keywords=("AI", "大模型", "评测"))
GROWTH = persona("growth-pm", "增长产品经理", tier="l2", keywords=("增长", "留存"))
TABLE_POOL = [DEVIL, OPTIMIST, USER_ADVOCATE, RAG, LLM_ARCH, AI_PM, GROWTH]
TEMPLATES = [
    DomainTemplateSpec(
        "ai-product",
        "AI 产品决策",
        ("RAG", "大模型", "AI 产品"),
        ("devil-advocate", "user-advocate", "ai-product-manager", "llm-architect", "rag-specialist"),
    )
]


def manifest(slug: str, name: str, density: float | None = 8.0, schema: str = "persona-skill/v1", **kw):
    kw.setdefault("description", f"{name}：测试用描述。")
    return persona(slug, name, schema_type=schema, density_score=density, **kw)


JOBS = manifest("steve-jobs", "史蒂夫·乔布斯", keywords=("产品", "设计", "用户体验"))
MUNGER = manifest("charlie-munger", "查理·芒格", 9.0, keywords=("逆向思考", "激励"))
CONFUCIUS = manifest("confucius", "孔子", 7.5, keywords=("仁", "礼"))
SOCRATES = manifest("socrates", "苏格拉底", 8.0, keywords=("诘问", "定义"))
MODERATOR = persona("moderator", "主持人", kind="moderator")


# -- specs --------------------------------------------------------------------------------------


def options(fmt: str, **values):
    return registry.get(fmt).Options(**values)


def duel_spec(
    question: str = "参禅与念佛，哪一条路更适合今天的在家人？",
    seats=(),
    *,
    critiques=(),
    protocol=None,
    pool=None,
    pairing_rules=None,
    **kw,
) -> DebateSpec:
    library = LibrarySpec(
        pool=list(MASTERS) if pool is None else list(pool),
        critiques=list(critiques),
        pairing_rules=list(PAIRING_RULES) if pairing_rules is None else list(pairing_rules),
        protocol={"default_rounds": 4, "max_rounds": 8} if protocol is None else protocol,
    )
    kw.setdefault("options", options("duel"))
    return DebateSpec(question=question, format="duel", seats=[SeatSpec(p) for p in seats], library=library, **kw)


def panel_spec(
    question: str = "我们团队是否应该在明年全面转向远程办公？",
    roles=None,
    **values,
) -> DebateSpec:
    return DebateSpec(
        question=question,
        format="panel",
        seats=[SeatSpec(p) for p in (roles or PANEL_ROLES)],
        library=LibrarySpec(host=CICERO),
        options=options("panel", **values),
    )


def table_spec(question: str = "我们的客服产品要不要引入 RAG 知识库？", roles=None, **values) -> DebateSpec:
    roles = [DEVIL, OPTIMIST, RAG, LLM_ARCH] if roles is None else roles
    return DebateSpec(
        question=question,
        format="roundtable",
        seats=[SeatSpec(p) for p in roles],
        library=LibrarySpec(pool=list(TABLE_POOL), domain_templates=list(TEMPLATES)),
        options=options("roundtable", **values),
    )


def moderated_spec(question: str = "小公司应该先做产品还是先做销售？", seats=None, **values) -> DebateSpec:
    seats = [SeatSpec(p) for p in (JOBS, MUNGER, CONFUCIUS)] if seats is None else seats
    return DebateSpec(
        question=question,
        format="moderated",
        seats=seats,
        library=LibrarySpec(host=MODERATOR),
        options=options("moderated", **values),
    )


# -- running ------------------------------------------------------------------------------------


@dataclass
class Run:
    """One debate's outcome and events, and what the LLM was asked: `calls` (FakeLLM runs) or
    `requests` (HTTP runs)."""

    outcome: str
    sink: ev.ListSink
    ledger: Ledger
    calls: list[Call] = field(default_factory=list)
    requests: list[RecordedRequest] = field(default_factory=list)

    @property
    def events(self) -> list[ev.Event]:
        return self.sink.events

    @property
    def report(self) -> ev.Report:
        reports = self.sink.of(ev.Report)
        assert len(reports) == 1, f"expected one report, got {len(reports)}"
        return reports[0]

    @property
    def data(self) -> dict:
        return self.report.data

    @property
    def warning_codes(self) -> list[str]:
        return [w.code for w in self.sink.of(ev.Warning)]

    def warning(self, code: str) -> ev.Warning:
        found = [w for w in self.sink.of(ev.Warning) if w.code == code]
        assert found, f"no {code!r} warning among {self.warning_codes}"
        return found[0]

    @property
    def finished(self) -> ev.Finished:
        done = self.sink.of(ev.Finished)
        assert len(done) == 1
        return done[0]

    def completed(self) -> dict[str, CompletedTurn]:
        """This run's finished turns as a resumed run's spec holds them (`spec.completed`)."""
        return {
            t.key: CompletedTurn(t.key, t.text, t.summary, t.prompt_tokens, t.completion_tokens, t.data)
            for t in self.sink.of(ev.TurnFinished)
        }

    def turns(self) -> dict[str, ev.TurnFinished]:
        return {t.key: t for t in self.sink.of(ev.TurnFinished)}

    def started_keys(self) -> list[str]:
        return [t.key for t in self.sink.of(ev.TurnStarted)]

    # -- what the LLM was asked (FakeLLM runs) --------------------------------------------------

    @property
    def keys(self) -> list[str | None]:
        return [c.key for c in self.calls]

    def calls_for(self, pattern: str) -> list[Call]:
        """Calls whose key matches a shell-style pattern (`r2:*`)."""
        return [c for c in self.calls if c.key and fnmatchcase(c.key, pattern)]

    def call(self, key: str) -> Call:
        """The one call made for a turn key."""
        found = [c for c in self.calls if c.key == key]
        assert len(found) == 1, f"{len(found)} calls for {key!r}; keys: {self.keys}"
        return found[0]

    # -- what the server received (HTTP runs) ---------------------------------------------------

    def requests_for(self, key: str) -> list[RecordedRequest]:
        return [r for r in self.requests if key_of(r.body or {}) == key]


def unscripted(call: Call) -> str:
    """A FakeLLM default for tests that script every turn: an unexpected key fails the test."""
    raise AssertionError(f"no reply scripted for turn {call.key!r}")


async def debate(spec: DebateSpec, fake: FakeLLM | None = None, ledger: Ledger | None = None, research=None) -> Run:
    """Run a spec on a FakeLLM (default replies when none is given) and collect what happened;
    `research` is a search client (`debates.search`) or None."""
    fake = FakeLLM() if fake is None else fake
    before = len(fake.calls)  # a fake may serve several runs (a checkpoint and its resume)
    sink = ev.ListSink()
    ledger = Ledger() if ledger is None else ledger
    outcome = await run_debate(spec, ClientPool(fake), sink, ledger, research)
    return Run(outcome, sink, ledger, calls=fake.calls[before:])


# -- over HTTP ------------------------------------------------------------------------------------

TURN_FIELD = "agora_turn"


def key_of(body: dict[str, Any]) -> str | None:
    """The turn key a request to the fake server was sent for."""
    return body.get(TURN_FIELD)


def turn(key: str):
    """A `when` for `FakeOpenAIServer.inject`: the requests of one turn."""
    return lambda body: key_of(body) == key


def call_of(body: dict[str, Any]) -> Call:
    """A request seen as a FakeLLM call, e.g. to answer it with `testkit.fake_llm.default_reply`."""
    return Call(key_of(body), list(body.get("messages") or []), body.get("max_tokens"), body.get("stop"))


class KeyedClient(OpenAICompatibleClient):
    """The real client, telling the fake server which turn each request serves."""

    def stream(self, messages, *, extra=None, key=None, **kw):
        return super().stream(messages, extra={**(extra or {}), TURN_FIELD: key}, key=key, **kw)


@dataclass
class Harness:
    server: FakeOpenAIServer
    clients: list[OpenAICompatibleClient] = field(default_factory=list)

    def client(self, **overrides) -> OpenAICompatibleClient:
        options = {"concurrency": 5, "timeout": 10.0, "request_timeout": 5.0, "max_retries": 0, "backoff_base": 0.01}
        options.update(overrides)
        made = KeyedClient(self.server.base_url, "sk-test", "fake-model", **options)
        self.clients.append(made)
        return made

    async def run(self, spec: DebateSpec, script=None, **client_options) -> Run:
        """`script(body) -> Reply | str | None`, as `FakeOpenAIServer` takes it; `key_of(body)`
        says which turn a request serves."""
        if script is not None:
            self.server.script = script
        before = len(self.server.chat_requests)
        sink = ev.ListSink()
        ledger = Ledger()
        outcome = await run_debate(spec, ClientPool(self.client(**client_options)), sink, ledger)
        return Run(outcome, sink, ledger, requests=self.server.chat_requests[before:])


@pytest.fixture
async def harness():
    async with FakeOpenAIServer(token_delay=0.0) as server:
        made = Harness(server)
        yield made
        for client in made.clients:
            await client.aclose()
