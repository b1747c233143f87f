"""How far a default panel gets within its token cap (issue 27, the first hour).

A panel with the remote-model defaults (no budget, standard research budget, the bundled panel
library's five roles) on the loopback fake server, each turn answered as a model following its
prompt's output form would (`testkit.form_model.follow_form`: ordinary-length speeches), in
English and in Chinese. Prints the rounds the speeches reached, the round the cap stopped (if
any), the tokens counted against the cap and the cap, and each kind of turn's largest booking
(prompt estimate + completion limit) beside what it spent.

    .venv/bin/python -m bench.panel_rounds
"""

from __future__ import annotations

import asyncio
import os
import re

QUESTIONS = {
    "en": "Should a 10-person startup adopt microservices now?",
    "zh": "我们 10 人的创业公司现在要不要上微服务？",
}


async def measure(lang: str) -> dict:
    from debates.engine import events as ev
    from debates.engine import registry
    from debates.engine.budget import Ledger
    from debates.engine.debate import run_debate
    from debates.engine.spec import DebateSpec, SeatSpec
    from debates.engine.turns import ClientPool
    from debates.providers.openai_compat import OpenAICompatibleClient
    from testkit.fake_openai import FakeOpenAIServer
    from testkit.form_model import follow_form
    from testkit.libraries import bundled

    library = bundled("panel")
    spec = DebateSpec(
        question=QUESTIONS[lang],
        format="panel",
        seats=[SeatSpec(p) for p in library.pool],
        library=library,
        options=registry.get("panel").Options(),
    )
    booked: dict[str, int] = {}

    class Watching(Ledger):
        def hold(self, key, tokens, *, reserved=False):
            ok = super().hold(key, tokens, reserved=reserved)
            booked[key] = max(booked.get(key, 0), tokens)
            return ok

    async with FakeOpenAIServer(follow_form, token_delay=0.0) as server:
        client = OpenAICompatibleClient(server.base_url, "sk-bench", "fake-model", concurrency=5, max_retries=0)
        sink, ledger = ev.ListSink(), Watching()
        outcome = await run_debate(spec, ClientPool(client), sink, ledger)
        await client.aclose()
    report = sink.of(ev.Report)[0].data
    rounds = sorted({int(m.group(1)) for k in ledger.entries if (m := re.match(r"r(\d):", k))})
    kinds: dict[str, list[int]] = {}
    for key, tokens in booked.items():
        kind = re.sub(r":[a-z-]+$", "", key) if key.startswith("r") else key
        spent = ledger.entries[key].total if key in ledger.entries else 0
        kinds.setdefault(kind, [0, 0])
        kinds[kind][0] = max(kinds[kind][0], tokens)
        kinds[kind][1] = max(kinds[kind][1], spent)
    return {
        "lang": lang,
        "outcome": outcome,
        "rounds": rounds,
        "stopped_by_cap_in_round": report.get("stopped_by_cap_in_round"),
        "counted": ledger.counted,
        "cap": ledger.cap,
        "reserve": ledger.reserve,
        "baseline": report.get("token_cap", {}).get("baseline_tokens"),
        "warnings": [w.code for w in sink.of(ev.Warning)],
        "booked_vs_spent": kinds,
    }


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "agora.settings")
    import django

    django.setup()
    for lang in QUESTIONS:
        got = asyncio.run(measure(lang))
        print(
            f"{lang}: {got['outcome']}, rounds {got['rounds']}, stopped by the cap in "
            f"R{got['stopped_by_cap_in_round']}, counted {got['counted']:,} of cap {got['cap']:,} "
            f"(baseline {got['baseline']:,}, verdict reserve {got['reserve']:,})"
        )
        for kind, (most, spent) in got["booked_vs_spent"].items():
            print(f"    {kind:<22} booked up to {most:>6,}   spent up to {spent:>6,}")
        print(f"    warnings: {', '.join(got['warnings']) or 'none'}")


if __name__ == "__main__":
    main()
