"""Options describe themselves: every field of every format's `Options` carries its kind, label and
bounds; the registry refuses an undescribed field and one option name given two kinds; a format's
own check refuses zero and values outside the declared bounds instead of reading them as empty."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from debates.engine import registry
from debates.engine.format import Format, Seating
from debates.engine.options import OptionError, describe, offered, option
from debates.engine.spec import CommonOptions, LibrarySpec


def test_every_field_of_every_registered_format_describes_itself():
    for fmt in registry.all_formats():
        described = describe(fmt.Options)
        assert set(described) == fmt.Options.names()
        for name, opt in described.items():
            assert opt.name == name and opt.label, (fmt.name, name)
            assert opt.default == getattr(fmt.Options(), name), (fmt.name, name)


def test_the_options_offered_at_the_doors_leave_out_the_internal_ones():
    table = offered(registry.get("roundtable").Options)
    assert {"mode", "no_interrupt", "force", "evidence", "documents"} <= set(table)
    assert not {"joined", "left", "max_tokens", "temperature"} & set(table)
    assert {"research_budget", "token_budget", "proposition_type"} <= set(offered(registry.get("panel").Options))


def _format(name: str, options_class: type) -> Format:
    return type(
        name.title(), (Format,), {"name": name, "label": name, "Options": options_class, "seating": Seating((1, 2))}
    )()


def test_the_registry_refuses_an_undescribed_field():
    @dataclass
    class Plain(CommonOptions):
        loudness: int | None = None

    with pytest.raises(OptionError, match="loudness"):
        registry.register(_format("plain", Plain))
    assert "plain" not in registry.names()


def test_the_registry_refuses_one_option_name_with_two_kinds():
    @dataclass
    class Clash(CommonOptions):  # the panel's and the moderated format's token_budget is a number
        token_budget: str = option("", kind="text", label="Token budget")

    with pytest.raises(OptionError, match="token_budget"):
        registry.register(_format("clash", Clash))
    assert "clash" not in registry.names()

    @dataclass
    class Same(CommonOptions):
        token_budget: int | None = option(None, kind="int", label="Token budget", minimum=1)

    try:
        registry.register(_format("same", Same))
        assert "same" in registry.names()
    finally:
        registry.unregister("same")


@pytest.mark.parametrize(
    ("fmt", "values", "field"),
    [
        ("duel", {"rounds": 0}, "rounds"),
        ("moderated", {"rounds": 0}, "rounds"),
        ("moderated", {"max_chars": 0}, "max_chars"),
        ("moderated", {"token_budget": 0}, "token_budget"),
        ("panel", {"token_budget": 0}, "token_budget"),
        ("panel", {"money_budget": 0.0}, "money_budget"),
        ("panel", {"proposition_type": "gossip"}, "proposition_type"),
        ("panel", {"research_budget": "huge"}, "research_budget"),
    ],
)
def test_zero_and_out_of_range_values_are_refused_not_read_as_the_default(fmt, values, field):
    format_ = registry.get(fmt)
    problems = format_.check("念佛与参禅，哪条路更适合现代人修行？", [], format_.Options(**values), LibrarySpec())
    assert field in problems, problems
