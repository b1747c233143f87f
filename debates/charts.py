"""Pictures of a finished debate, drawn on the server as SVG (no script, nothing to download).

Each function takes the report's data (and the turns) and returns SVG markup, or "" when there is
nothing to draw. Every text in them is escaped; every chart names itself for screen readers
(`role="img"`, `<title>`) and carries its values as text too, since colour alone says nothing to
some readers.
"""

from __future__ import annotations

from collections import OrderedDict

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe
from django.utils.translation import gettext as _

from agora.text import strip_invisible
from debates.engine.reading import discarded_keys
from personas.models import name_in

FONT = 'font-family="system-ui, sans-serif" font-size="12"'
INK, MUTED, GRID = "#1d1d1f", "#595959", "#d8dbe3"
# Position states, each a colour and a mark that differ in shape too (readable without colour).
STATES = OrderedDict(
    [
        ("held", ("#23395d", "●")),
        ("loosened", ("#b7791f", "◐")),
        ("turned", ("#b00020", "◆")),
        ("silent", ("#9aa3b2", "○")),
    ]
)


def _svg(width: int, height: int, title: str, body: list[str]) -> SafeString:
    head = (
        f'<svg class="chart" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" '
        f'width="{width}" height="{height}" role="img" aria-label="{escape(title)}" {FONT}>'
        f"<title>{escape(title)}</title>"
    )
    return mark_safe(head + "".join(body) + "</svg>")  # noqa: S308 - every text above is escaped


def _state_labels() -> dict[str, str]:
    return {"held": _("held"), "loosened": _("loosened"), "turned": _("turned"), "silent": _("silent")}


def _text_width(text: str) -> int:
    """Rough width in pixels at 12 px: a CJK character is about twice a Latin one."""
    return sum(12 if ord(ch) > 0x2E80 else 7 for ch in text)


def _legend(y: int) -> tuple[list[str], int]:
    """The states' marks and names in a row; returns the parts and the row's width."""
    parts, x = [], 0
    for state, label in _state_labels().items():
        colour, mark = STATES[state]
        parts.append(f'<text x="{x}" y="{y}" fill="{colour}">{mark}</text>')
        parts.append(f'<text x="{x + 14}" y="{y}" fill="{INK}">{escape(label)}</text>')
        x += 14 + _text_width(label) + 18
    return parts, x


def _name(turn: dict) -> str:
    """A speaker's name as a chart shows it: no direction overrides or zero-width characters."""
    return strip_invisible(name_in(None, turn.get("speaker_name", ""), turn.get("speaker_name_en", "")))


def _grid(title: str, rows: list[str], columns: list[str], cells: dict[tuple[int, int], str]) -> SafeString:
    """Rows × columns of position states (a mark per cell), with a legend."""
    label_width = max(60, 10 + max((_text_width(r) for r in rows), default=40))
    cell = 56
    height = 30 + 26 * len(rows) + 34
    legend, legend_width = _legend(height - 6)
    width = max(label_width + cell * len(columns) + 10, legend_width)
    body = []
    for j, column in enumerate(columns):
        x = label_width + cell * j + cell // 2
        body.append(f'<text x="{x}" y="16" text-anchor="middle" fill="{MUTED}">{escape(column)}</text>')
    labels = _state_labels()
    for i, row in enumerate(rows):
        y = 30 + 26 * i + 16
        body.append(f'<text x="0" y="{y}" fill="{INK}">{escape(row)}</text>')
        body.append(f'<line x1="{label_width}" y1="{y + 6}" x2="{width - 10}" y2="{y + 6}" stroke="{GRID}"/>')
        for j in range(len(columns)):
            state = cells.get((i, j))
            if state is None:
                continue
            colour, mark = STATES[state]
            x = label_width + cell * j + cell // 2
            body.append(
                f'<text x="{x}" y="{y}" text-anchor="middle" font-size="16" fill="{colour}">'
                f"<title>{escape(row)} · {escape(columns[j])}: {escape(labels[state])}</title>{mark}</text>"
            )
    body += legend
    return _svg(width, height, title, body)


def _positions(speeches: list[dict], state_of) -> SafeString | str:
    """Speakers × rounds, each cell the state `state_of(turn)` reads from that speech."""
    if not speeches:
        return ""
    names = list(OrderedDict.fromkeys(_name(t) for t in speeches))
    rounds = sorted({t["round"] for t in speeches})
    cells = {(names.index(_name(t)), rounds.index(t["round"])): state_of(t) for t in speeches}
    columns = [_("R%(n)d") % {"n": r} for r in rounds]
    return _grid(_("Positions across rounds"), names, columns, cells)


def duel_positions(data: dict) -> SafeString | str:
    """Each master's position per round as the speech declared it: held, loosened or turned (its
    `position`, the part the speech states; a record from before it kept only whether it moved).
    An attempt written again is not a position the debate had."""
    turns = data.get("turns", [])
    discarded = discarded_keys(t.get("key", "") for t in turns)
    speeches = [t for t in turns if "moved" in (t.get("data") or {}) and t.get("key") not in discarded]
    return _positions(speeches, _declared_state)


def _declared_state(turn: dict) -> str:
    declared = turn["data"].get("position")
    if declared in STATES:
        return declared
    return "loosened" if turn["data"].get("moved") else "held"


def _summary_state(summary: str) -> str:
    """What a panel role's own summary says it did (the format asks it to say hold/loosen/turn)."""
    if "转向" in summary or "turn" in summary.lower():
        return "turned"
    if "松动" in summary or "loosen" in summary.lower():
        return "loosened"
    return "held"


def panel_positions(data: dict) -> SafeString | str:
    """The position-evolution table as a picture: each role, each round."""
    speeches = [t for t in data.get("turns", []) if "silent" in (t.get("data") or {})]
    return _positions(speeches, lambda t: "silent" if t["data"].get("silent") else _summary_state(t.get("summary", "")))


LEVELS = {"low": 1, "medium": 2, "high": 3}


def roundtable_confidence(data: dict) -> SafeString | str:
    """Each role's confidence in R1 and in its final round (a line per role, a legend beside)."""
    by_role: dict[str, dict[int, int]] = OrderedDict()
    for t in data.get("turns", []):
        level = LEVELS.get((t.get("data") or {}).get("confidence", ""))
        if level:
            by_role.setdefault(_name(t), {})[t["round"]] = level
    if not any(len(levels) > 1 for levels in by_role.values()):
        return ""  # only first-round confidences: nothing moved, nothing to draw
    names = {1: _("low"), 2: _("medium"), 3: _("high")}
    axis = 10 + max(_text_width(n) for n in names.values())
    x1, x3, top, step = axis + 20, axis + 200, 16, 36
    legend_x = x3 + 40
    height = max(top + 2 * step + 40, top + 18 * len(by_role) + 10)
    width = legend_x + 30 + max(_text_width(name) for name in by_role)
    body = []
    for level, name in names.items():
        y = top + (3 - level) * step
        body.append(f'<text x="0" y="{y + 4}" fill="{MUTED}">{escape(name)}</text>')
        body.append(f'<line x1="{x1 - 10}" y1="{y}" x2="{x3 + 10}" y2="{y}" stroke="{GRID}"/>')
    body.append(f'<text x="{x1}" y="{top + 2 * step + 28}" text-anchor="middle" fill="{MUTED}">R1</text>')
    final = max(r for levels in by_role.values() for r in levels)
    body.append(f'<text x="{x3}" y="{top + 2 * step + 28}" text-anchor="middle" fill="{MUTED}">R{final}</text>')
    palette = ["#23395d", "#b00020", "#1b7a44", "#b7791f", "#6b3fa0", "#0f6e8c", "#7a4b00"]
    for i, (role, levels) in enumerate(by_role.items()):
        colour = palette[i % len(palette)]
        offset = (i - len(by_role) / 2) * 3  # lines that coincide stay apart
        first, last = levels.get(min(levels)), levels.get(max(levels))
        ya, yb = top + (3 - first) * step + offset, top + (3 - last) * step + offset
        body.append(f'<line x1="{x1}" y1="{ya}" x2="{x3}" y2="{yb}" stroke="{colour}" stroke-width="2"/>')
        body.append(
            f'<circle cx="{x1}" cy="{ya}" r="4" fill="{colour}"/><circle cx="{x3}" cy="{yb}" r="4" fill="{colour}"/>'
        )
        ly = top + 18 * i
        body.append(
            f'<line x1="{legend_x}" y1="{ly}" x2="{legend_x + 20}" y2="{ly}" stroke="{colour}" stroke-width="3"/>'
        )
        summary = f"{role}: {names[first]} → {names[last]}"
        body.append(
            f'<text x="{legend_x + 26}" y="{ly + 4}" fill="{INK}"><title>{escape(summary)}</title>{escape(role)}</text>'
        )
    return _svg(width, height, _("Confidence per role, R1 to R3"), body)


def ledger(data: dict, cap: int | None = None) -> SafeString | str:
    """Tokens per speaker (prompt and completion), and the whole run against its cap."""
    entries = (data.get("ledger") or {}).get("turns") or {}
    speaker_of = {t["key"]: _name(t) for t in data.get("turns", [])}
    per = OrderedDict()
    for key, spent in entries.items():
        name = speaker_of.get(key, key)
        prompt, completion = per.get(name, (0, 0))
        per[name] = (prompt + spent.get("prompt", 0), completion + spent.get("completion", 0))
    if not per:
        return ""
    total = sum(p + c for p, c in per.values())
    cap = cap or (data.get("ledger") or {}).get("cap")
    whole = _("Whole debate")
    label_width = 10 + max(_text_width(name) for name in [*per, whole])
    bar_width, row = 220, 22
    scale = max(total if cap else max(p + c for p, c in per.values()), cap or 0, 1)
    rows = list(per.items()) + ([(whole, None)] if cap else [])
    height = 10 + row * len(rows) + 30
    width = label_width + bar_width + 110
    body = []
    for i, (name, spent) in enumerate(rows):
        y = 10 + row * i
        body.append(f'<text x="0" y="{y + 13}" fill="{INK}">{escape(name)}</text>')
        if spent is None:  # the whole run against the cap
            used = round(bar_width * total / scale)
            limit = round(bar_width * cap / scale)
            body.append(f'<rect x="{label_width}" y="{y + 2}" width="{used}" height="14" fill="#23395d"/>')
            body.append(
                f'<line x1="{label_width + limit}" y1="{y - 2}" x2="{label_width + limit}" y2="{y + 20}" '
                f'stroke="#b00020" stroke-width="2"/>'
            )
            note = _("%(total)d of %(cap)d") % {"total": total, "cap": cap}
            body.append(f'<text x="{label_width + bar_width + 8}" y="{y + 13}" fill="{INK}">{escape(note)}</text>')
            continue
        prompt, completion = spent
        wp, wc = round(bar_width * prompt / scale), round(bar_width * completion / scale)
        body.append(f'<rect x="{label_width}" y="{y + 2}" width="{wp}" height="14" fill="#8fa3c4"/>')
        body.append(f'<rect x="{label_width + wp}" y="{y + 2}" width="{wc}" height="14" fill="#23395d"/>')
        body.append(f'<text x="{label_width + wp + wc + 6}" y="{y + 13}" fill="{INK}">{prompt + completion}</text>')
    legend_y = height - 8
    prompt_label, completion_label = escape(_("prompt")), escape(_("completion"))
    body.append(f'<rect x="0" y="{legend_y - 10}" width="12" height="12" fill="#8fa3c4"/>')
    body.append(f'<text x="16" y="{legend_y}" fill="{INK}">{prompt_label}</text>')
    body.append(f'<rect x="90" y="{legend_y - 10}" width="12" height="12" fill="#23395d"/>')
    body.append(f'<text x="106" y="{legend_y}" fill="{INK}">{completion_label}</text>')
    return _svg(width, height, _("Tokens per speaker"), body)


def positions(data: dict) -> SafeString | str:
    """The picture of how positions moved, for whichever kind of record this debate kept (a
    duel's declared moves, a panel's summaries and silences, a roundtable's confidences)."""
    for chart in (duel_positions, roundtable_confidence, panel_positions):
        drawn = chart(data)
        if drawn:
            return drawn
    return ""


def votes(sides: list[dict]) -> SafeString | str:
    """The room's vote (#30, `audience.results`): each side's share before and after as two bars,
    and its swing in points written beside them."""
    if not sides or not any(s.get("before") or s.get("after") for s in sides):
        return ""
    label_width = max(60, 10 + max(_text_width(s["label"]) for s in sides))
    bar, row_height = 200, 44
    width, height = label_width + bar + 150, 30 + row_height * len(sides) + 24
    colours = {"before": "#9aa3b2", "after": "#23395d"}
    names = {"before": _("before"), "after": _("after")}
    body = []
    for i, side in enumerate(sides):
        y = 30 + row_height * i
        name = strip_invisible(side["label"])
        body.append(f'<text x="0" y="{y + 18}" fill="{INK}">{escape(name)}</text>')
        for j, phase in enumerate(("before", "after")):
            percent = side.get(f"{phase}_percent")
            length = round(bar * (percent or 0) / 100)
            shown = "–" if percent is None else f"{percent}%"
            top = y + 4 + 18 * j
            body.append(
                f'<rect x="{label_width}" y="{top}" width="{length}" height="14" fill="{colours[phase]}">'
                f"<title>{escape(name)} · {escape(names[phase])}: {shown}</title></rect>"
            )
            x = label_width + length + 4
            body.append(f'<text x="{x}" y="{top + 11}" fill="{MUTED}">{escape(names[phase])} {shown}</text>')
        if side.get("swing") is not None:
            body.append(
                f'<text x="{width - 4}" y="{y + 18}" text-anchor="end" fill="{INK}" font-weight="600">'
                f"{escape(side.get('swing_text', ''))}</text>"
            )
    return _svg(width, height, _("The room’s vote, before and after"), body)
