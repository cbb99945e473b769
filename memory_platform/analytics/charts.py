"""The weekly report's charts, rendered offline to PNG with matplotlib's Agg backend.

matplotlib was chosen over Altair + vl-convert because its wheel carries its own font
(DejaVu Sans) and rasteriser: the same data gives the same bytes on any machine, with no
browser, JavaScript engine or system font involved, and nothing fetched. PNG metadata
(the `Software` tag with matplotlib's version) is left out so the bytes depend on the data.
"""

import io
from collections.abc import Mapping, Sequence
from datetime import date, timedelta

import matplotlib

matplotlib.use("Agg")  # no display, no GUI toolkit: render to memory

import matplotlib.pyplot as plt  # noqa: E402  (the backend must be chosen first)

WIDTH, HEIGHT, DPI = 8.0, 3.2, 100
# One fixed palette (matplotlib's default cycle), so colours do not depend on rcParams.
COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
           "#7f7f7f", "#bcbd22", "#17becf")
_STYLE = {"font.family": "DejaVu Sans", "font.size": 9, "axes.spines.top": False,
          "axes.spines.right": False, "svg.hashsalt": "memory-platform"}


def _png(fig) -> bytes:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=DPI, metadata={"Software": None})
    plt.close(fig)
    return buffer.getvalue()


def _figure(title: str):
    fig, ax = plt.subplots(figsize=(WIDTH, HEIGHT), layout="constrained")
    ax.set_title(title, loc="left", fontsize=10)
    return fig, ax


def _empty(ax, message: str) -> None:
    ax.text(0.5, 0.5, message, ha="center", va="center", transform=ax.transAxes,
            color="#7f7f7f")
    ax.set_xticks([])
    ax.set_yticks([])


def stacked_bars(title: str, days: Sequence[date], series: Mapping[str, Sequence[float]],
                 ylabel: str, empty: str = "no activity this week") -> bytes:
    """One bar per day, stacked by series (e.g. turns by source)."""
    with plt.rc_context(_STYLE):
        fig, ax = _figure(title)
        labels = [d.strftime("%a %d") for d in days]
        if not any(any(v) for v in series.values()):
            _empty(ax, empty)
            return _png(fig)
        bottom = [0.0] * len(days)
        for i, (name, values) in enumerate(sorted(series.items())):
            ax.bar(labels, values, bottom=bottom, label=name, color=COLOURS[i % len(COLOURS)])
            bottom = [b + v for b, v in zip(bottom, values, strict=True)]
        ax.set_ylabel(ylabel)
        ax.legend(frameon=False, fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
        return _png(fig)


def funnel(title: str, stages: Sequence[tuple[str, int]]) -> bytes:
    """Horizontal bars, first stage on top (the dream funnel)."""
    with plt.rc_context(_STYLE):
        fig, ax = _figure(title)
        if not any(n for _, n in stages):
            _empty(ax, "no dream this week")
            return _png(fig)
        names = [name for name, _ in stages][::-1]
        values = [n for _, n in stages][::-1]
        bars = ax.barh(names, values, color=COLOURS[0])
        ax.bar_label(bars, padding=3, fontsize=8)
        ax.set_xlabel("entries")
        return _png(fig)


def lines(title: str, days: Sequence[date], series: Mapping[str, Sequence[float]],
          ylabel: str, empty: str) -> bytes:
    """One line per series over days (vault size per namespace)."""
    with plt.rc_context(_STYLE):
        return _png(lines_figure(title, days, series, ylabel, empty))


def lines_figure(title: str, days: Sequence[date], series: Mapping[str, Sequence[float]],
                 ylabel: str, empty: str):
    """The figure of `lines`. One day of history is a point on an axis of a few days (a
    line of one point draws nothing, on an axis matplotlib stretches over years)."""
    fig, ax = _figure(title)
    if not days or not series:
        _empty(ax, empty)
        return fig
    marker = "o" if len(days) == 1 else None
    for i, (name, values) in enumerate(sorted(series.items())):
        ax.plot(days, values, label=name, color=COLOURS[i % len(COLOURS)], linewidth=1.5,
                marker=marker)
    if len(days) == 1:
        ax.set_xlim(days[0] - timedelta(days=3), days[0] + timedelta(days=3))
    ax.set_ylabel(ylabel)
    ax.tick_params(axis="x", labelrotation=30, labelsize=8)
    ax.legend(frameon=False, fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return fig
