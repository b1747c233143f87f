"""The live page's reads (#31): a page load is the heaviest thing a joining viewer costs the
server (300 of them at once in the 100-debate bench), so it asks each question of the database
once — the audience row once, whether the report is in from the snapshot it already read — and
an anonymous viewer of a shared link skips the seats' read it cannot appear in. The sink's side
too: the audience window at every phase reads the report with the debate, and a status frame drawn
in every language reads the running turns once."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from debates import audience, frames
from debates.models import Debate, Report, Turn
from tests.web.test_audience import make_duel, viewer

pytestmark = pytest.mark.django_db(transaction=True)


def page_queries(client, debate) -> list[str]:
    url = f"/debates/{debate.pk}/?share={debate.share_token}"
    client.get(url)  # the first load stores the share grant in the session: count a reload
    with CaptureQueriesContext(connection) as ctx:
        assert client.get(url).status_code == 200
    return [q["sql"] for q in ctx.captured_queries]


def reads_of(queries: list[str], table: str) -> int:
    return sum(1 for sql in queries if sql.startswith("SELECT") and f'FROM "{table}"' in sql)


def test_a_live_page_reads_the_audience_once_and_asks_for_the_report_once(libraries, alice):
    debate = make_duel(alice)
    for client in (viewer(alice), viewer(debate=debate)):
        queries = page_queries(client, debate)
        assert reads_of(queries, "debates_audience") == 1, queries
        assert reads_of(queries, "debates_report") == 1, queries  # the snapshot's
        assert not [sql for sql in queries if 'INNER JOIN "debates_report"' in sql], queries


def test_an_anonymous_viewer_costs_fewer_reads_than_the_owner_and_skips_the_seats(libraries, alice):
    debate = make_duel(alice)
    owner, stranger = page_queries(viewer(alice), debate), page_queries(viewer(debate=debate), debate)
    assert reads_of(stranger, "debates_seat") == 0, stranger
    assert len(stranger) <= 12, stranger  # was 18 before #31's cut
    assert len(stranger) < len(owner)


def test_the_report_answer_is_the_snapshots_own_and_a_later_report_shows(libraries, alice):
    """Whether the report is in comes from the read the snapshot made (no second query), and a
    report written afterwards is seen by the next snapshot, as by the next page load."""
    debate = make_duel(alice)
    before = frames.snapshot(debate.pk).debate
    with CaptureQueriesContext(connection) as ctx:
        assert audience.has_report(before) is False
    assert not ctx.captured_queries
    Report.objects.create(debate=debate, verdict_markdown="**Verdict** in", transcript_markdown="", data={})
    with CaptureQueriesContext(connection) as ctx:
        assert audience.has_report(frames.snapshot(debate.pk).debate) is True
        assert audience.has_report(Debate.objects.get(pk=debate.pk)) is True  # not fetched: asks
    assert reads_of([q["sql"] for q in ctx.captured_queries], "debates_report") == 1
    page = viewer(debate=debate).get(f"/debates/{debate.pk}/?share={debate.share_token}").content.decode()
    assert "Verdict" in page


def test_the_audience_window_reads_the_report_with_the_debate(libraries, alice):
    """The sink asks for the window at every phase: the report comes with the debate's row, not
    as three EXISTS queries, and a report written since is seen."""
    debate = make_duel(alice)
    with CaptureQueriesContext(connection) as ctx:
        before = audience.window(debate.pk)
    sql = [q["sql"] for q in ctx.captured_queries]
    assert not [s for s in sql if '"debates_report"."id" IS NOT NULL' in s], sql
    Report.objects.create(debate=debate, verdict_markdown="in", transcript_markdown="", data={})
    assert before[2] is False and audience.window(debate.pk)[2] is True


def test_a_status_frame_in_every_language_reads_the_running_turns_once(libraries, alice):
    debate = make_duel(alice)
    Turn.objects.create(
        debate=debate,
        key="r1:a",
        position=1,
        round=1,
        phase="r1",
        speaker_slug="a",
        speaker_name="甲",
        speaker_name_en="Ay",
        state=Turn.State.RUNNING,
    )
    fresh = Debate.objects.get(pk=debate.pk)
    with CaptureQueriesContext(connection) as ctx:
        drawn = frames.in_every_language(lambda: frames.status(fresh))
    sql = [q["sql"] for q in ctx.captured_queries]
    assert reads_of(sql, "debates_turn") == 1, sql  # once for both; no deferred field read per row
    assert "Ay" in drawn["en"] and "甲" in drawn["zh-hans"], drawn.keys()
