"""How ratings are shown, the same on every page, in the CSV and in the terminal: a rating's interval as
text (marked when the bootstrap alone was not trusted), the one-line method of the intervals, the
ranks (shared by equal ratings), the likelihood of superiority over the next bot, and the inline SVG
charts of the ratings and of their history."""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the shapes only: the pages and tables need no numpy
    from arena.ratings.fit import BotRating, HistoryPoint, RatingTable

#: The mark of an interval for which the bootstrap alone was not trusted (see :func:`arena.ratings.fit.rate`).
MARK = "*"
#: Most characters of a bot's label in the rating chart (a longer name keeps its start and end: :func:`chart_label`).
LABEL_CHARS = 40
#: Pixels a label's character takes, a little more than the pages' 14px font's average (the label column's width).
LABEL_CHAR_PX = 8


def chart_label(name: str, most: int = LABEL_CHARS) -> str:
    """``name`` as a chart label of at most ``most`` characters: a longer one keeps its start (the name) and
    its end (``@version``: two versions of one bot stay apart) around "…"."""
    if len(name) <= most:
        return name
    head = (most - 1) // 2
    return name[:head] + "…" + name[len(name) - (most - 1 - head):]


def interval_note(ratings: RatingTable) -> str:
    """The footnote for intervals marked :data:`MARK` ('' if none is), with each bot's method and reason."""
    marked = [(n, r) for n, r in ratings["ratings"].items() if r.get("ci_note")]
    if not marked:
        return ""
    needed = ratings.get("bootstrap_min_units", 5)
    whys = "; ".join(f"{n}: {r.get('ci_method', '')}, {r['ci_note']}" for n, r in marked)
    return (
        f"{MARK} the bootstrap cannot estimate the spread from fewer than {needed} duplicate pairs in a pairing, "
        "or when it finds none: shown is the wider of the bootstrap and the normal-approximation interval "
        f"(Fisher information of the fit) — {whys}"
    )


def interval_text(r: BotRating, digits: int) -> str:
    """A rating's 95% interval as ``[lo, hi]`` with ``digits`` decimals, marked :data:`MARK` when the
    bootstrap alone was not trusted for it."""
    mark = MARK if r.get("ci_note") else ""
    return f"[{r['ci'][0]:.{digits}f}, {r['ci'][1]:.{digits}f}]{mark}"


def ranks(ratings: RatingTable, names: Sequence[str] | None = None) -> dict[str, int]:
    """bot -> its rank among ``names`` (in ranking order, best first; default every rated bot): its place,
    or the place of the bot above it when their published ratings are equal ("1, 2, 2, 4"), so bots the
    ratings cannot tell apart never get different ranks."""
    out: dict[str, int] = {}
    above: tuple[str, float] | None = None
    for place, name in enumerate(ratings["ratings"] if names is None else names, start=1):
        elo = ratings["ratings"][name]["elo"]
        out[name] = out[above[0]] if above is not None and above[1] == elo else place
        above = (name, elo)
    return out


def los_next(ratings: RatingTable) -> dict[str, float]:
    """bot -> the likelihood (0-1) that it is better than the bot ranked just below it."""
    return {e["better"]: e["los"] for e in ratings.get("los", [])}


def intervals_method(ratings: RatingTable) -> str:
    """How the 95% intervals of ``ratings`` were made, one line (the leaderboards show it): the normal
    approximation (marked live when published before the bootstrap, :mod:`arena.ratings.publication`) or the
    bootstrap with its resamples."""
    n = ratings.get("bootstrap", 0)
    if ratings.get("publication") == "live":  # arena.ratings.publication.live_ratings: published before a bootstrap
        last = ratings.get("last_bootstrap")
        after = f"; the last bootstrap covered {last['games']} games" if last else ""
        return f"normal approximation (live: bootstrap intervals follow in the background{after})"
    if not n:
        return "normal approximation"
    text = f"bootstrap over duplicate pairs ({n} resamples)"
    if any(r.get("ci_note") for r in ratings["ratings"].values()):
        text += f"; where marked {MARK}, the wider of that and the normal approximation"
    return text


def rating_chart(ratings: RatingTable) -> str:
    """An inline SVG of every bot's rating (a dot) with its 95% interval (a bar), bots in ranking order; the
    labels' column as wide as the longest :func:`chart_label` (its full name is the label's tooltip)."""
    items = list(ratings["ratings"].items())
    if not items:
        return "<p>No ratings.</p>"
    labels = {name: chart_label(name) for name, _ in items}
    lo = min(r["ci"][0] for _, r in items)
    hi = max(r["ci"][1] for _, r in items)
    if hi - lo < 1:
        lo, hi = lo - 50, hi + 50
    pad = (hi - lo) * 0.05
    lo, hi = lo - pad, hi + pad
    left, width, row = max(160, 20 + LABEL_CHAR_PX * max(len(x) for x in labels.values())), 560, 28
    height = row * len(items) + 40

    def x(v: float) -> float:
        return float(left + (v - lo) / (hi - lo) * width)

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{left + width + 40}" height="{height}" '
        f'role="img" aria-label="Ratings with 95% intervals">'
    ]
    for t in range(5):
        v = lo + (hi - lo) * t / 4
        parts.append(f'<line x1="{x(v):.1f}" y1="10" x2="{x(v):.1f}" y2="{height - 25}" stroke="#eee"/>')
        parts.append(f'<text x="{x(v):.1f}" y="{height - 8}" text-anchor="middle" fill="#666">{v:.0f}</text>')
    for k, (name, r) in enumerate(items):
        y = 25 + k * row
        parts.append(f'<text x="{left - 10}" y="{y + 4}" text-anchor="end">{html.escape(labels[name])}'
                     f"<title>{html.escape(name)}</title></text>")
        parts.append(
            f'<line x1="{x(r["ci"][0]):.1f}" y1="{y}" x2="{x(r["ci"][1]):.1f}" y2="{y}" '
            'stroke="#4a6fa5" stroke-width="2"/>'
        )
        for end in r["ci"]:
            parts.append(
                f'<line x1="{x(end):.1f}" y1="{y - 6}" x2="{x(end):.1f}" y2="{y + 6}" stroke="#4a6fa5" '
                'stroke-width="2"/>'
            )
        parts.append(
            f'<circle cx="{x(r["elo"]):.1f}" cy="{y}" r="5" fill="#c0392b">'
            f"<title>{html.escape(name)}: {r['elo']:.1f} [{r['ci'][0]:.1f}, {r['ci'][1]:.1f}]</title>"
            "</circle>"
        )
    parts.append("</svg>")
    return "".join(parts)
_COLOURS = ("#4a6fa5", "#c0392b", "#27ae60", "#8e44ad", "#d35400", "#16a085", "#7f8c8d", "#b7950b")


def history_chart(points: Sequence[HistoryPoint]) -> str:
    """An inline SVG of each bot's rating after every checkpoint of :func:`arena.ratings.fit.history`, with
    its 95% interval as a shaded band (colours repeat after eight bots; hover a line for its name)."""
    if len(points) < 2:
        return "<p class=meta>The history needs two checkpoints or more.</p>"
    bots = list(points[-1]["ratings"])
    values = [v for p in points for r in p["ratings"].values() for v in r["ci"]]
    lo, hi = min(values), max(values)
    if hi - lo < 1:
        lo, hi = lo - 50, hi + 50
    left, width, top, height = 60, 640, 10, 260
    last = points[-1]["games"]

    def x(n: float) -> float:
        return float(left + n / last * width)

    def y(v: float) -> float:
        return float(top + (hi - v) / (hi - lo) * height)

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{left + width + 20}" height="{top + height + 40}" '
        'role="img" aria-label="Rating history with 95% intervals">'
    ]
    for t in range(5):
        v = lo + (hi - lo) * t / 4
        parts.append(f'<line x1="{left}" y1="{y(v):.1f}" x2="{left + width}" y2="{y(v):.1f}" stroke="#eee"/>')
        parts.append(f'<text x="{left - 6}" y="{y(v) + 4:.1f}" text-anchor="end" fill="#666">{v:.0f}</text>')
    parts.append(
        f'<text x="{left + width / 2}" y="{top + height + 32}" text-anchor="middle" fill="#666">'
        f"games (0 to {last})</text>"
    )
    for k, bot in enumerate(bots):
        colour = _COLOURS[k % len(_COLOURS)]
        seen = [p for p in points if bot in p["ratings"]]
        upper = " ".join(f"{x(p['games']):.1f},{y(p['ratings'][bot]['ci'][1]):.1f}" for p in seen)
        lower = " ".join(f"{x(p['games']):.1f},{y(p['ratings'][bot]['ci'][0]):.1f}" for p in reversed(seen))
        line = " ".join(f"{x(p['games']):.1f},{y(p['ratings'][bot]['elo']):.1f}" for p in seen)
        parts.append(f'<polygon points="{upper} {lower}" fill="{colour}" fill-opacity="0.12"/>')
        parts.append(
            f'<polyline points="{line}" fill="none" stroke="{colour}" stroke-width="2">'
            f"<title>{html.escape(bot)}</title></polyline>"
        )
    parts.append("</svg>")
    legend = " ".join(
        f'<span style="color:{_COLOURS[k % len(_COLOURS)]}">&#9632;</span>&nbsp;{html.escape(b)}'
        for k, b in enumerate(bots)
    )
    return "".join(parts) + f"<p class=meta>{legend}</p>"
