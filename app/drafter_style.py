"""One colour per drafter (llama.cpp's speculative types), shared by the picker's swatches,
the token view's accepted tokens and the plots' per-drafter curves.

draft-simple keeps the token view's original green, draft-eagle3 (an EAGLE-3 head) is lime,
draft-mtp (the target's own MTP blocks) teal, draft-dflash (a DFlash head) fuchsia and
draft-dspark (a DSpark head) stone; each n-gram type has its own hue, and none is the target's
blue or the rejection red.
"""

from __future__ import annotations

from specscope.core.engine.drafters import TYPES

# type -> (text colour, background in the token view, strong colour for plots and swatches)
DRAFTER_COLORS = {
    "ngram-simple": ("#713f12", "#fde68a", "#d4a106"),    # amber
    "ngram-map-k": ("#581c87", "#e9d5ff", "#8b5cf6"),     # violet
    "ngram-map-k4v": ("#164e63", "#a5f3fc", "#0891b2"),   # cyan
    "ngram-mod": ("#831843", "#fbcfe8", "#db2777"),       # pink
    "ngram-cache": ("#7c2d12", "#fed7aa", "#ea580c"),     # orange
    "draft-simple": ("#14532d", "#bbf0c6", "#2e9d4b"),    # green (the draft model)
    "draft-eagle3": ("#3f6212", "#e2f7a1", "#74a00f"),    # lime (an EAGLE-3 head)
    "draft-mtp": ("#0b3b36", "#82d3bf", "#0f9488"),       # teal (the target's own MTP blocks)
    "draft-dflash": ("#701a75", "#f0abfc", "#c026d3"),    # fuchsia (a DFlash head)
    "draft-dspark": ("#292524", "#d6cfc4", "#78716c"),    # stone (a DSpark head)
}
# who drafted, in words: (article, noun); the n-gram types are named by their type
WHO = {"draft-simple": ("the", "draft model"), "draft-eagle3": ("the", "EAGLE-3 head"),
       "draft-mtp": ("the target's", "MTP block(s)"), "draft-dflash": ("the", "DFlash head"),
       "draft-dspark": ("the", "DSpark head")}
assert set(DRAFTER_COLORS) == set(TYPES)


def drafter_colors(name: str) -> tuple[str, str, str]:
    """(text, background, strong) of a drafter; an unknown or empty name is the draft model."""
    return DRAFTER_COLORS.get(name or "draft-simple", DRAFTER_COLORS["draft-simple"])


def drafter_who(name: str) -> str:
    """Who drafted, in plain words: "the EAGLE-3 head", or an n-gram type's name."""
    the, what = WHO.get(name or "draft-simple", ("", name))
    return f"{the} {what}".strip()


def drafter_html(name: str) -> str:
    """Who drafted, in a tooltip: the type in bold; a head or the target's MTP blocks named as
    such ("the <b>EAGLE-3 head</b> (draft-eagle3)")."""
    name = name or "draft-simple"
    if name == "draft-simple" or name not in WHO:
        return f"<b>{name}</b>"
    the, what = WHO[name]
    return f"{the} <b>{what}</b> ({name})"


def swatch_html(name: str, text: str = "abc") -> str:
    fg, bg, _ = drafter_colors(name)
    return f"<span style='color:{fg}; background:{bg};'>&nbsp;{text}&nbsp;</span>"
