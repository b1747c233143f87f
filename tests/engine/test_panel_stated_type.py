"""A proposition type stated on the form is the type the panel debates (#48): the option's help
promises "it is debated as this type even when the host's own answer cannot be read", and the
seed lists the type as what admission must know. A host whose admission reply breaks its four
lines twice refused the debate and asked the user to rephrase, the type stated or not."""

from __future__ import annotations

import pytest

from .conftest import debate, panel_spec
from .test_panel import ADMIT_OK, panel_fake

# Neither a type nor whether it can be falsified: the four lines broken, as a small model does.
CHATTY = "这个命题很有意思，值得讨论。"
CHATTY_AGAIN = "I think it can be debated."


@pytest.mark.parametrize(
    ("question", "stated"),
    [
        ("Should I take a job at a big tech company or join a five-person startup?", "choice"),
        ("我们团队是否应该在明年全面转向远程办公？", "choice"),
        ("Does remote work lower a software team's output?", "truth"),
    ],
)
async def test_a_stated_type_is_debated_when_the_hosts_admission_cannot_be_read(question, stated):
    fake = panel_fake(admission=CHATTY)
    fake.reply("host:admission-again", CHATTY_AGAIN)
    run = await debate(panel_spec(question, token_budget=1, proposition_type=stated), fake)

    assert run.outcome == "done", run.finished.reason
    assert run.data["proposition_type"] == stated
    assert run.keys[:2] == ["host:admission", "host:admission-again"]  # asked once more, as without a type
    unread = run.warning("admission_unread")
    assert CHATTY_AGAIN in unread.text and "debated as the type stated on the form" in unread.text


async def test_without_a_stated_type_an_unreadable_admission_still_refuses():
    fake = panel_fake(admission=CHATTY)
    fake.reply("host:admission-again", CHATTY_AGAIN)
    run = await debate(panel_spec(token_budget=1), fake)
    assert run.outcome == "refused" and "asked twice" in run.finished.reason


async def test_a_stated_type_still_refuses_what_the_host_reads_as_unfalsifiable():
    """The type is the user's to state; whether a statement can be falsified stays the host's (R6)."""
    unfalsifiable = ADMIT_OK.replace("类型：选择决策型", "类型：认知求真型").replace("可证伪：是", "可证伪：否")
    assert unfalsifiable != ADMIT_OK
    spec = panel_spec("市场是有效的吗？", token_budget=1, proposition_type="truth")
    run = await debate(spec, panel_fake(unfalsifiable))
    assert run.outcome == "refused" and "did not pass admission" in run.finished.reason
