"""The stream's resume rule without a server: cursors read back what they wrote, refuse what is
not theirs, and a client following the events, cut anywhere, ends with every turn's text once."""

from __future__ import annotations

import pytest

from debates.api.changes import Follower, State, TurnRow, changes
from debates.api.cursor import Cursor, Mark

STATUS = {"status": "running", "detail": "", "tokens": {}}


def turn(pk: int, text: str, state: str = "running", attempt: int = 0) -> TurnRow:
    return TurnRow(pk, f"t{pk}", pk, 1, "opening", "s", "S", state, "", attempt, text)


def state(*turns: TurnRow, seq: int = 1, status: str = "running") -> State:
    return State(seq, {**STATUS, "status": status}, list(turns))


class Client:
    """What a client holds, built from events only (as docs/api.md tells a client to)."""

    def __init__(self):
        self.texts: dict[int, str] = {}
        self.done: set[int] = set()
        self.last_id: str | None = None

    def apply(self, event: str, data: dict, event_id: str) -> None:
        if event == "turn":
            self.texts[data["turn"]] = ""
        elif event == "delta":
            assert data["offset"] == len(self.texts[data["turn"]]), "a gap or a repeat"
            self.texts[data["turn"]] += data["text"]
        elif event == "replace":
            self.texts[data["turn"]] = data["text"]
        elif event == "turn_done":
            assert data["turn"] not in self.done
            self.done.add(data["turn"])
        elif event == "reset":
            self.texts, self.done = {}, set()
        self.last_id = event_id


def follow(client: Client, snapshot: State, limit: int | None = None) -> list[str]:
    """Deliver up to `limit` events of `snapshot` to a client that reconnected with its last id."""
    cursor = Cursor.decode(client.last_id)
    follower = Follower(cursor or Cursor(), rejected=bool(client.last_id) and cursor is None)
    from debates.api import changes as module

    # `read` validates the cursor against the debate; here the same rule, on the test's rows.
    if not module._fits(follower.cursor, snapshot.seq, snapshot.turns):
        follower.cursor, snapshot.reset = Cursor(), True
    delivered = []
    for event, data in changes(snapshot, follower):
        if limit is not None and len(delivered) == limit:
            break
        client.apply(event, data, follower.cursor.encode())
        delivered.append(event)
    return delivered


def test_a_cursor_reads_back_what_it_wrote():
    cursor = Cursor(seq=300, report=True)
    cursor.turns = {5: Mark(done=True), 6: Mark(done=True), 9: Mark(1, done=True), 11: Mark(0, 42, 123456)}
    cursor.turns[12] = Mark(done=True)
    text = cursor.encode()
    assert text == "v1.8c.1.5~6,9-1-d,b-0-16-2n9c,c~c"
    again = Cursor.decode(text)
    assert again.resolve({5, 6, 7, 9, 11, 12})
    assert again.turns == cursor.turns  # 7 is another debate's turn: not in the range's marks


@pytest.mark.parametrize(
    "bad",
    ["", "v2.1.0.", "v1.1.2.", "v1.-1.0.", "v1.1.0.5-0-x", "v1.1.0.9~5", "v1.1.0.5-0-d,5-0-d", "v1.A.0.", "x" * 20000],
)
def test_malformed_ids_are_refused(bad):
    assert Cursor.decode(bad) is None


def test_an_id_naming_another_debates_turn_is_refused():
    cursor = Cursor.decode("v1.1.0.5-0-3-0")
    assert not cursor.resolve({6, 7})


@pytest.mark.parametrize("cut_every", [1, 2, 3, 5])
def test_cut_anywhere_every_character_arrives_once(cut_every):
    client = Client()
    growth = [
        state(turn(1, "Hel"), seq=2),
        state(turn(1, "Hello wor"), turn(2, ""), seq=3),
        state(turn(1, "Hello world", "done"), turn(2, "Ans"), seq=4),
        state(turn(1, "Hello world", "done"), turn(2, "Answer\u200b!", "done"), seq=5, status="done"),
    ]
    for snapshot in growth:
        for _attempt in range(100):
            delivered = follow(client, snapshot, cut_every)
            if len(delivered) < cut_every or "end" in delivered:
                break
        else:
            raise AssertionError("reconnecting never reaches the end")
    assert client.texts == {1: "Hello world", 2: "Answer!"}
    assert client.done == {1, 2}


def test_a_final_text_other_than_the_streamed_one_comes_as_a_replace():
    client = Client()
    follow(client, state(turn(1, "a long reply that")))
    events = []
    follower = Follower(Cursor.decode(client.last_id))
    follower.cursor.resolve({1})
    for event, data in changes(state(turn(1, "a short reply", "done"), seq=2), follower):
        events.append(event)
        client.apply(event, data, follower.cursor.encode())
    assert events[:2] == ["replace", "turn_done"]
    assert client.texts[1] == "a short reply"


def test_a_turn_started_again_starts_its_text_again():
    client = Client()
    follow(client, state(turn(1, "first try", "failed")))
    follow(client, state(turn(1, "second", attempt=1), seq=3))
    assert client.texts[1] == "second"


def test_a_foreign_id_starts_over_with_a_reset():
    client = Client()
    client.last_id = "v1.1.0.zz-0-3-0"
    follow(client, state(turn(1, "text", "done"), seq=2, status="done"))
    assert client.texts == {1: "text"}
