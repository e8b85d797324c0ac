"""The legend above the text: what each token colour means (the token view's kinds), with the
accepted colour of each drafter of the run."""

from __future__ import annotations

import html

from specscope.core.engine.drafters import DRAFT_MODEL

from . import palette
from .drafter_style import drafter_colors
from .token_view import ACCEPTED, COLORS, REJECTED, TARGET, UNCHECKED

LEGEND = (
    (ACCEPTED, "draft token, accepted"),
    (TARGET, "target's own token (replacement or bonus)"),
    (REJECTED, "draft token, rejected"),
    (UNCHECKED, "draft token after a rejection (never checked)"),
)
NBH = "\u2011"      # a non-breaking hyphen: "ngram-simple" stays on one line


def legend_html(drafters=(DRAFT_MODEL,)) -> str:
    """The colours' meaning; accepted draft tokens once per drafter of ``drafters``."""
    parts = []
    shown = drafters if len(drafters) > 1 or drafters[:1] != (DRAFT_MODEL,) else ()
    if shown and not palette.active().per_drafter:     # one colour: hover a token for its drafter
        fg, bg, _ = drafter_colors(shown[0])
        who = " or ".join(html.escape(d).replace("-", NBH) for d in shown)
        parts.append(f"<span style='color:{fg};background:{bg}; padding:1px 4px;'>&nbsp;abc&nbsp;"
                     f"</span>&nbsp;accepted,&nbsp;drafted&nbsp;by&nbsp;{who}")
        shown = ()
    for d in shown:
        fg, bg, _ = drafter_colors(d)
        parts.append(f"<span style='color:{fg};background:{bg}; padding:1px 4px;'>&nbsp;abc&nbsp;"
                     f"</span>&nbsp;accepted,&nbsp;drafted&nbsp;by&nbsp;{html.escape(d).replace('-', NBH)}")
    for kind, label in LEGEND:
        if kind == ACCEPTED and parts:
            continue
        fg, bg = COLORS[kind]
        style = f"color:{fg};" + (f"background:{bg};" if bg else "")
        if kind in (REJECTED, UNCHECKED):
            style += "text-decoration:line-through;"
        label = label.replace(" ", "&nbsp;")             # the legend wraps between entries only
        parts.append(f"<span style='{style} padding:1px 4px;'>&nbsp;abc&nbsp;</span>&nbsp;{label}")
    return " &nbsp;&nbsp;".join(parts)          # (a plain space: the line may break there)
