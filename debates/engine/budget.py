"""The token ledger: every turn's tokens, exact where the server reports usage, flagged where not."""

from __future__ import annotations

from dataclasses import dataclass


def money(price: tuple[float, float] | None, prompt_tokens: int, completion_tokens: int) -> float | None:
    """USD of one call at `price` (USD per million input / output tokens); None when unknown."""
    if price is None:
        return None
    return round((prompt_tokens * price[0] + completion_tokens * price[1]) / 1_000_000, 8)


@dataclass
class LedgerEntry:
    key: str
    prompt_tokens: int
    completion_tokens: int
    estimated: bool = False
    cost: float | None = 0.0  # USD; None: a call whose price is unknown
    reasoning_tokens: int = 0  # of completion_tokens, the thinking's (priced and capped as output)

    @property
    def total(self) -> int:
        return self.prompt_tokens + self.completion_tokens


class Ledger:
    """Sums per turn. `cap` (tokens) makes `exceeded` true once spending passes it; the turns that
    are exempt (the panel's baseline measurement) are charged but do not count against the cap.
    `reserve` is the part of the cap kept for the turns that must run whatever happens (a
    verdict): the others may start only while the counted spending leaves it untouched.

    The cap holds because a turn is paid for before it starts: `hold` books its whole allowance
    (its prompt and the completion limit its request carries), and only a turn whose allowance
    fits beside what is spent and what the turns in flight have booked may start; `charge` then
    replaces the booking with what the turn really cost. Turns that run at once (a parallel
    round) are all booked before any of them can spend."""

    def __init__(self, cap: int | None = None) -> None:
        self.cap = cap
        self.money_cap: float | None = None  # USD: past it no turn but a reserved one starts
        self.reserve = 0
        self.entries: dict[str, LedgerEntry] = {}
        self.exempt: set[str] = set()
        self.held: dict[str, int] = {}  # turn key -> tokens booked for it while it runs
        # Research is not paid in tokens but in searches, pages and time: counted apart.
        self.research = {"searches": 0, "fetches": 0, "seconds": 0.0, "fetched_tokens": 0}

    def research_charge(self, *, searches=0, fetches=0, seconds=0.0, fetched_tokens=0) -> None:
        self.research["searches"] += searches
        self.research["fetches"] += fetches
        self.research["seconds"] = round(self.research["seconds"] + seconds, 2)
        self.research["fetched_tokens"] += fetched_tokens

    def charge(
        self,
        key: str,
        prompt_tokens: int,
        completion_tokens: int,
        *,
        estimated=False,
        exempt=False,
        cost=0.0,
        reasoning=0,
    ):
        """`completion_tokens` include the thinking's (`reasoning` of them), as servers count them:
        thinking is paid as output and counts against the cap like any output. The turn's booking
        (`hold`), if any, ends: what it really cost takes its place."""
        self.held.pop(key, None)
        # A key charged twice (a turn sent back once) accumulates: both calls were paid for.
        entry = self.entries.get(key)
        if entry is None:
            self.entries[key] = LedgerEntry(key, prompt_tokens, completion_tokens, estimated, cost, reasoning)
        else:
            entry.prompt_tokens += prompt_tokens
            entry.completion_tokens += completion_tokens
            entry.reasoning_tokens += reasoning
            entry.estimated = entry.estimated or estimated
            entry.cost = None if entry.cost is None or cost is None else entry.cost + cost
        if exempt:
            self.exempt.add(key)

    @property
    def booked(self) -> int:
        """Tokens booked for the turns in flight."""
        return sum(self.held.values())

    def room(self, *, reserved: bool = False) -> int | None:
        """Tokens a turn may still book: the cap less what is counted and booked, and less the
        reserve unless the turn is one it is kept for. None: no cap."""
        if self.cap is None:
            return None
        return self.cap - self.counted - self.booked - (0 if reserved else self.reserve)

    def hold(self, key: str, tokens: int, *, reserved: bool = False) -> bool:
        """Book `tokens` for the turn `key` if they fit (see `room`); false, booking nothing, if not."""
        room = self.room(reserved=reserved)
        if room is not None and tokens > room:
            return False
        self.held[key] = self.held.get(key, 0) + tokens
        return True

    def release(self, key: str) -> None:
        """End a booking without a charge (a turn that never reached the server)."""
        self.held.pop(key, None)

    @property
    def prompt_tokens(self) -> int:
        return sum(e.prompt_tokens for e in self.entries.values())

    @property
    def completion_tokens(self) -> int:
        return sum(e.completion_tokens for e in self.entries.values())

    @property
    def reasoning_tokens(self) -> int:
        return sum(e.reasoning_tokens for e in self.entries.values())

    @property
    def total(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    @property
    def counted(self) -> int:
        """Tokens that count against the cap."""
        return sum(e.total for k, e in self.entries.items() if k not in self.exempt)

    @property
    def money(self) -> float:
        """USD of every call whose price is known."""
        return round(sum(e.cost for e in self.entries.values() if e.cost), 8)

    @property
    def money_unknown(self) -> bool:
        """Some call that cost tokens has no known price: the money is a lower bound."""
        return any(e.cost is None and e.total for e in self.entries.values())

    @property
    def estimated(self) -> bool:
        return any(e.estimated for e in self.entries.values())

    @property
    def exceeded(self) -> bool:
        return self.cap is not None and self.counted > self.cap

    @property
    def spent_for_rounds(self) -> bool:
        """True once the turns that are not reserved may no longer start: the token cap (with the
        verdict's reserve kept) or the money budget is spent."""
        tokens = self.cap is not None and self.counted + self.booked + self.reserve >= self.cap
        return tokens or (self.money_cap is not None and self.money >= self.money_cap)

    def as_dict(self) -> dict:
        return {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            **({"reasoning_tokens": self.reasoning_tokens} if self.reasoning_tokens else {}),
            "total": self.total,
            "cap": self.cap,
            "reserve": self.reserve,
            "counted_against_cap": self.counted,
            "estimated": self.estimated,
            "cost": self.money,
            "cost_unknown": self.money_unknown,
            **({"money_cap": self.money_cap} if self.money_cap is not None else {}),
            **({"research": dict(self.research)} if self.research["searches"] else {}),
            "turns": {
                k: {
                    "prompt": e.prompt_tokens,
                    "completion": e.completion_tokens,
                    "estimated": e.estimated,
                    **({"reasoning": e.reasoning_tokens} if e.reasoning_tokens else {}),
                    **({"cost": e.cost} if e.cost is not None else {}),  # absent: no known price
                }
                for k, e in self.entries.items()
            },
        }
