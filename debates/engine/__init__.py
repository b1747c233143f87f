"""The debate engine: plain async code, no Django.

    from debates.engine.debate import run_debate
    outcome = await run_debate(spec, ClientPool(client), sink)

takes a `DebateSpec`, LLM clients and an event sink; emits `events` in order and returns the
outcome: "done", "waiting" (a checkpoint), "failed" or "refused". Formats live one per module
(`duel`, `panel`, `roundtable`, `moderated`) and are listed by `registry`. This package's
`__init__` imports nothing, so its modules can import each other without a cycle through it.
"""
