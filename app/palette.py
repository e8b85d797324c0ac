"""The window's colours for the token classes: the standard palette (a hue per drafter, green
accepted beside red rejected: the pair one student in twelve cannot tell apart) and the
colour-blind safe one (Okabe and Ito's blue and orange, every drafter's accepted tokens one
colour), one switch away (View ▸ Colour-blind safe palette). The shapes do not rely on colour
in either: a rejected draft token is struck through, one never checked struck through and
pale, the target's own token a box of its own colour.

``python -m specscope.app.colour_check`` prints how far apart each palette's classes look with
normal vision, protanopia, deuteranopia and tritanopia (CIEDE2000; the safe palette keeps
every pair at 20 or more). The text, the legend and the step picture follow a switch at once;
the plots take it when they are next built (the next start).
"""

from __future__ import annotations

from dataclasses import dataclass

STANDARD, SAFE = "standard", "colour-blind safe"


@dataclass(frozen=True)
class Palette:
    tokens: dict[str, tuple[str, str | None]]   # kind -> (foreground, background)
    plots: dict[str, str]                        # accepted / target / rejected -> colour
    per_drafter: bool                            # accepted tokens take their drafter's colours
    names: dict[str, str]                        # the plots' colours in words (the Guide, tooltips)


PALETTES = {
    STANDARD: Palette(
        tokens={"accepted": ("#14532d", "#bbf0c6"), "target": ("#1e3a8a", "#c9dcff"),
                "rejected": ("#b42318", "#fde4e1"), "unchecked": ("#b0837d", None)},
        plots={"accepted": "#2e9d4b", "target": "#3b6fd8", "rejected": "#d64545"},
        per_drafter=True,
        names={"accepted": "green", "rejected": "red", "rejected_pale": "pale red"}),
    SAFE: Palette(
        tokens={"accepted": ("#0b3954", "#8fd0f7"), "target": ("#4a3b00", "#f7d46a"),
                "rejected": ("#c75a1e", None), "unchecked": ("#9a9a9a", None)},
        plots={"accepted": "#0072b2", "target": "#e69f00", "rejected": "#999999"},
        per_drafter=False,
        names={"accepted": "blue", "rejected": "grey", "rejected_pale": "light grey"}),
}
_active = [STANDARD]
# the token view's colours, kind -> (foreground, background): the one dict the token view, the
# legend and the step picture read (token_view.COLORS is it); use() changes it in place
TOKEN_COLORS: dict[str, tuple[str, str | None]] = {
    "prompt": ("#6b6b6b", None),
    **PALETTES[STANDARD].tokens,
    "message": ("#111827", "#eceff3"),
}


def token_classes(p: Palette) -> dict[str, str]:
    """Each token class's mark (its background, or its text colour where it has none): what
    colour_check compares."""
    return {kind: bg or fg for kind, (fg, bg) in p.tokens.items()}


def active() -> Palette:
    return PALETTES[_active[0]]


def active_name() -> str:
    return _active[0]


def use(name: str) -> None:
    """Make ``name`` the palette: the token colours change in place (TOKEN_COLORS), the plots'
    (plot_colour) when they are next built."""
    _active[0] = name if name in PALETTES else STANDARD
    TOKEN_COLORS.update(active().tokens)


def colour_word(kind: str) -> str:
    """The plots' colour of ``kind`` (accepted, rejected, rejected_pale) in words, in the
    palette in use: what the Guide and the plots' tooltips say."""
    return active().names[kind]


def plot_colour(kind: str) -> str:
    """The plots' colour of accepted, target or rejected tokens in the palette in use."""
    return active().plots[kind]


__all__ = ["Palette", "PALETTES", "STANDARD", "SAFE", "TOKEN_COLORS", "token_classes", "active",
           "active_name", "use", "plot_colour", "colour_word"]
