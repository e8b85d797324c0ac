"""One colour per drafter (llama.cpp's speculative types, core's registry: SpecType.colors),
shared by the picker's swatches, the token view's accepted tokens and the plots' per-drafter
curves; none is the target's blue or the rejection red.
"""

from __future__ import annotations

from specscope.core.engine.drafters import TYPES, spec_type
from specscope.core.engine.drafters.registry import MODEL

from . import palette

# type -> (text colour, background in the token view, strong colour for plots and swatches)
DRAFTER_COLORS = {name: t.colors for name, t in TYPES.items()}


def drafter_colors(name: str) -> tuple[str, str, str]:
    """(text, background, strong) of a drafter; an unknown or empty name is the draft model. In
    the colour-blind safe palette (app/palette.py) every drafter's are the accepted class's."""
    p = palette.active()
    if not p.per_drafter:
        fg, bg = p.tokens["accepted"]
        return fg, bg, p.plots["accepted"]
    return spec_type(name).colors


def drafter_who(name: str) -> str:
    """Who drafted, in plain words: "the EAGLE-3 head", or an n-gram type's name."""
    return spec_type(name).who_words() if name in TYPES or not name else name


def drafter_html(name: str) -> str:
    """Who drafted, in a tooltip: the type in bold; a head or the target's MTP blocks named as
    such ("the <b>EAGLE-3 head</b> (draft-eagle3)")."""
    t = spec_type(name)
    if name not in TYPES or not t.who[1] or t.source == MODEL:
        return f"<b>{name or t.name}</b>"
    return f"{t.who[0]} <b>{t.who[1]}</b> ({name})"


def swatch_html(name: str, text: str = "abc") -> str:
    fg, bg, _ = drafter_colors(name)
    return f"<span style='color:{fg}; background:{bg};'>&nbsp;{text}&nbsp;</span>"
