"""The stats bar: n_drafted, n_accept, acceptance, mean accepted length, tokens/s, speed-up."""

from __future__ import annotations

from PySide6.QtCore import QSize, Qt, Signal
from PySide6.QtGui import QColor, QFont, QFontMetrics, QPalette
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QSizePolicy, QToolButton, QWidget

from specscope.core.models.threads import cores

from .desktop import ElidedLabel, FlowLayout, SteadyLabel

FIELDS = (
    ("state", "", "what the engine is doing"),
    ("tokens", "tokens", "tokens generated (and rounds)"),
    ("n_drafted", "n_drafted", "drafted tokens the target verified"),
    ("n_accept", "n_accept", "drafted tokens the target kept"),
    ("acceptance", "acceptance", "n_accept ÷ n_drafted"),
    ("mean_len", "mean length", "mean accepted length: tokens per verified draft, 1 + accepted "
                                "(llama.cpp's measure)"),
    ("tps", "tokens/s", "generated tokens per second (prefill excluded)"),
    ("threads", "threads", "CPU threads the target and the draft decode with (target+draft); "
                           "auto follows the machine's load: fewer when other work takes a core"),
    ("speedup", "speed-up", "tokens/s of this run ÷ tokens/s of a target-only baseline run with "
                            "the same prompt and settings (press Baseline)"),
)


STATE_MAX_PX = 330        # the state text's widest (elided beyond; whole in its tooltip)
STATE_MIN_PX = 150        # ... and narrowest: below it the fields after it wrap
NO_SPEEDUP = "– (no baseline yet)"
WIDTH_SAMPLES = {"tokens": "00000 (0000 rounds)", "n_drafted": "00000", "n_accept": "00000",
                 "acceptance": "100.0 %", "mean_len": "0.00", "tps": "0000.0",
                 "speedup": "00.00×"}     # the widest each shows during a run (a wider text widens it)


def threads_sample(n_cores: int) -> str:
    """The widest thread counts this machine shows: "0+0→0+0" in its core count's digits
    (a 16-core machine's auto can move 16+16→15+15)."""
    d = "0" * len(str(max(1, n_cores)))
    return f"{d}+{d}→{d}+{d}"


class StateLabel(ElidedLabel):
    """The engine's state in the width the bar leaves it (at most STATE_MAX_PX, at least
    STATE_MIN_PX), elided to fit: it never widens the window."""
    MIN_PX = STATE_MIN_PX

    def __init__(self):
        super().__init__("–")
        self.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Preferred)

    def sizeHint(self) -> QSize:
        hint = super().sizeHint()
        width = QFontMetrics(self.font()).horizontalAdvance(self.full) + 4
        return QSize(max(STATE_MIN_PX, min(STATE_MAX_PX, width)), hint.height())

    def minimumSizeHint(self) -> QSize:
        return QSize(STATE_MIN_PX, super().minimumSizeHint().height())


class StatsBar(QFrame):
    remeasure_requested = Signal()      # the speed-up's baseline is stale: measure it again

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setObjectName("statsbar")
        # a plain palette background (not a style sheet) keeps repaints inside the bar
        self.setAutoFillBackground(True)
        pal = self.palette()
        pal.setColor(QPalette.ColorRole.Window, QColor("#f4f5f7"))
        self.setPalette(pal)
        self.setFrameShape(QFrame.Shape.NoFrame)
        bold = QFont(self.font())
        bold.setWeight(QFont.Weight.DemiBold)
        grey = QPalette(pal)
        grey.setColor(QPalette.ColorRole.WindowText, QColor("#666666"))
        # each field a name and its value, in a row that wraps onto a second line on a narrow
        # screen (1024 pixels); the state takes what its line leaves, elided
        lay = FlowLayout(self, spacing=10)
        lay.setContentsMargins(10, 4, 10, 4)
        self.values: dict[str, QLabel] = {}
        groups: dict[str, QHBoxLayout] = {}
        for key, name, tip in FIELDS:
            field = QWidget()
            row = groups[key] = QHBoxLayout(field)
            row.setContentsMargins(0, 0, 0, 0)
            row.setSpacing(4)
            if name:
                n = QLabel(name)
                n.setPalette(grey)
                n.setToolTip(tip)
                row.addWidget(n)
            # fixed sizes: a changing number must not re-lay out (and repaint) the window
            sample = threads_sample(cores()) if key == "threads" else WIDTH_SAMPLES.get(key)
            v = StateLabel() if key == "state" else SteadyLabel("–", sample)
            v.setFont(bold)
            v.setToolTip(tip)
            v.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
            row.addWidget(v)
            self.values[key] = v
            lay.addWidget(v if key == "state" else field)
        lay.filler = self.values["state"]
        # a stale baseline (core/session/baseline_check.py): one click measures it again (one
        # glyph, beside the speed-up)
        self.remeasure_button = QToolButton()
        self.remeasure_button.setText("↻")
        self.remeasure_button.setAccessibleName("Re-measure the baseline")
        self.remeasure_button.setToolTip("Re-measure the stale baseline: run the target alone again "
                                         "with the settings of the run shown (the views keep the run)")
        self.remeasure_button.setAutoRaise(True)
        self.remeasure_button.setVisible(False)
        self.remeasure_button.clicked.connect(self.remeasure_requested)
        groups["speedup"].addWidget(self.remeasure_button)
        self.synthetic = QLabel("⚠ SYNTHETIC: not valid output")
        self.synthetic.setToolTip("This run used synthetic acceptance (benchmark only): draft tokens "
                                  "were kept at random, so its text is not the target's output; "
                                  "its timings and speed-up are real")
        self.synthetic.setStyleSheet("color:#ffffff; background:#b42318; font-weight:bold; padding:1px 4px")
        self.synthetic.setVisible(False)
        lay.addWidget(self.synthetic)
        self.set_state("Idle")

    def set_state(self, text: str, tip: str = "") -> None:
        """What the engine is doing; ``tip``: what the user can do now (the tooltip). A long
        text is elided (in full in the tooltip): the bar never widens the window."""
        label = self.values["state"]
        label.set_full(text)
        tip = tip or FIELDS[0][2]
        label.setToolTip(f"{text}\n{tip}")

    def clear(self) -> None:
        for key, v in self.values.items():
            if key != "state":
                v.setText("–")
        self.synthetic.setVisible(False)
        self._show_baseline(None)

    def _show_baseline(self, check) -> None:
        """The speed-up's tooltip says when its baseline was measured and under what load; a
        stale one is marked, with the button that measures it again."""
        self.values["speedup"].setToolTip(FIELDS[-1][2] + (f"\n{check.describe()}" if check else ""))
        self.remeasure_button.setVisible(bool(check and check.stale))

    def update_stats(self, stats, speedup: float | None, baseline: bool = False,
                     no_speedup: str = NO_SPEEDUP, check=None) -> None:
        """``check``: how the speed-up's baseline stands to the run (a BaselineCheck, or None)."""
        v = self.values
        self.synthetic.setVisible(bool(getattr(stats, "synthetic", False)))
        v["tokens"].setText(f"{stats.n_tokens} ({stats.n_rounds} rounds)")
        if baseline:
            for key in ("n_drafted", "n_accept", "acceptance", "mean_len", "speedup"):
                v[key].setText("–")
        else:
            v["n_drafted"].setText(str(stats.n_drafted))
            v["n_accept"].setText(str(stats.n_accept))
            v["acceptance"].setText(f"{100 * stats.acceptance_rate:.1f} %" if stats.n_drafted else "–")
            v["mean_len"].setText(f"{stats.mean_accepted_length:.2f}" if stats.n_draft_rounds else "–")
            stale = " ⚠ stale" if speedup and check and check.stale else ""
            v["speedup"].setText(f"{speedup:.2f}×{stale}" if speedup else no_speedup)
        self._show_baseline(check if speedup and not baseline else None)
        v["tps"].setText(f"{stats.tokens_per_s:.1f}" if stats.t_total > 0 else "–")
        self._show_threads(getattr(stats, "threads", ()))

    def _show_threads(self, spans) -> None:
        """'2+2', or '2+2→1+1' once auto moved (first and latest counts); every change in the
        tooltip with the round it came at."""
        label = self.values["threads"]
        counts = ["+".join(str(n) for n in t[1:] if n) for t in spans]
        label.setText("–" if not counts else counts[0] if len(counts) == 1
                      else f"{counts[0]}→{counts[-1]}")
        tip = dict((k, t) for k, _, t in FIELDS)["threads"]
        if len(counts) > 1:
            tip += "\nThis run: " + ", ".join(
                [f"{counts[0]} from the start"] + [f"{c} from round {t[0] + 1}" for c, t in
                                                   zip(counts[1:], spans[1:])])
        label.setToolTip(tip)

    def text(self, key: str) -> str:
        """A field's text as set (the state's whole, however it is elided on screen)."""
        v = self.values[key]
        return v.full if isinstance(v, StateLabel) else v.text()
