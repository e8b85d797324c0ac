"""Help ▸ Guide: what the window shows, on one page (the colours, the plots, the cost model,
step mode). Short on purpose; the tooltips say the rest."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QSize, QUrl
from PySide6.QtGui import QDesktopServices
from PySide6.QtWidgets import QDialog, QDialogButtonBox, QMessageBox, QTextBrowser, QVBoxLayout, QWidget

from .legend import legend_html
from .palette import colour_word

TITLE = "SpecScope guide"


def guide_html() -> str:
    return f"""
<h2>What you are watching</h2>
<p>Speculative decoding: each <b>round</b>, a <b>drafter</b> (a small draft model, an EAGLE-3 head
that drafts from the target's own hidden states, a DFlash head that drafts a whole block from them
in one decode, the target's own MTP blocks, or an n-gram lookup in the text so far) proposes
a few tokens; the <b>target</b> model checks them all in one batch and keeps the longest prefix it
agrees with, then adds one token of its own. The output is what the target alone would write; the
hope is fewer, cheaper target passes.</p>

<h3>The colours of the text</h3>
<p>{legend_html()}</p>
<p>Grey is the prompt. Where n-gram drafters, a head (an EAGLE-3, DFlash or DSpark head) or the
target's own MTP blocks (offered when the target carries them, with no draft model) draft, each
drafter's accepted tokens take its own colour (the legend above the text names them; in the
colour-blind safe palette all of them are the accepted tokens' one colour). The target's
own token is the replacement at the first mismatch, or the bonus token after a draft it accepted
whole. ↵ marks a line break. Hover a token for its round, draft position, draft probability and
drafter; <i>show rejected drafts</i> (Ctrl+H) hides the struck-through ones.</p>

<h3>The plots</h3>
<ul>
<li><b>Acceptance by draft position</b>: of the drafts that reached position k, the share
whose token the target kept ({colour_word("accepted")}) or not ({colour_word("rejected_pale")}); the numbers are kept / drafted. At
temperature, a dashed curve shows the other acceptance rule's expected share on the same
drafts.</li>
<li><b>Accepted per round</b>: how many rounds kept 0, 1, 2, … of their drafted
tokens ({colour_word("rejected")}: the first drafted token was rejected).</li>
<li><b>Generation speed</b>: tokens per second over the last 2 s and over the whole run.</li>
<li><b>Time per round</b>: each round's draft, translate (a draft of another vocabulary: its
text re-tokenized between the two vocabularies), verify, sync (rolling the caches back) and
Python time, stacked. The <b>Timeline</b> tab lays the same times out on one time axis.</li>
<li><b>Tree headroom</b>: where the target's token ranked among the draft model's (or a
head's, or the MTP block's) top-10, and
the acceptance a draft tree of width w would have reached.</li>
</ul>
<p>The stats bar: <i>acceptance</i> = accepted ÷ drafted tokens; <i>mean accepted length</i> =
1 + accepted tokens per verified draft (llama.cpp's measure); <i>speed-up</i> = this run's
tokens/s ÷ a <b>Baseline</b> run's (the target alone, same prompt and settings).</p>

<h3>The cost model</h3>
<p>Three speed-ups side by side, against the number of drafted tokens per round, n:</p>
<ul>
<li><b>Textbook</b> (blue): (E + 1) / (n·f + 1) with E = α + α² + … + αⁿ. α is the chance
the target keeps a drafted token given it kept the ones before (fitted to the run, higher than
the acceptance rate); f is a draft token's cost ÷ a target token's. It assumes that verifying
n + 1 tokens costs one target token. The star is its best n; the sliders ask "what if".</li>
<li><b>Calibrated</b> (green, after <i>Calibrate on this machine</i>): the same α with the
costs this CPU measured for the pair: verifying k tokens, a draft token, the sync, sampling,
Python. On a CPU a batch of k tokens usually costs more than one token, and the curve sits
below the textbook's.</li>
<li><b>Measured</b> (red diamond): the run's tokens/s ÷ the baseline's, at the run's n_max.
Press Baseline once for it.</li>
</ul>

<h3>What-if</h3>
<p>The <b>What-if</b> tab: what the run shown would have done with other settings, exact for
greedy runs (the target's output does not depend on the drafter, so the run's tokens are replayed
against each setting; no model runs). Pick n-gram types or draft-simple and move the sliders: the
blue curve is the setting, the red dashed one the run as measured, with tokens per round and, once
the pair is calibrated, the predicted speed-up. The bars place draft-simple's fixed n, the hf and
cost policies and the best p_min under the <i>hindsight ceiling</i>, every round's best draft
length chosen knowing the text.</p>

<h3>Step mode</h3>
<p><b>Step</b> (F10) runs one round and pauses; the <b>Round (step mode)</b> tab explains it.
The picture has a column per KV position from <i>n_past</i>: the batch the target decoded (the
seed token, then the draft with each token's draft probability), what the target sampled in
each slot (✓ same, ✗ replacement, bonus), and which cache rows were kept or dropped and where
the next seed goes. The words below go through it: draft, verify, result, roll back, next.
Whitespace tokens show as ␣ (space), ↵ (line break) and ⇥ (tab). Step again for the next
round; Continue (Ctrl+R) runs the rest.</p>

<h3>Watching and comparing</h3>
<p><b>Pace</b> in the toolbar slows the views down (rounds per second, or Manual: one round per
Next ▸) while the engine runs at full speed; <b>Replay</b> plays the run shown again; the
<b>Round</b> slider under the text shows the run as it was after any round. <b>Compare
(sweep)</b> (Ctrl+2) measures drafters × draft lengths × prompts against the target alone;
<b>Compare sessions</b> (Ctrl+3) puts two recorded runs side by side. The <b>Advisor</b> (Ctrl+4)
answers "what should I run here?": per kind of work, the best drafter and settings measured (or
don't speculate), the llama.cpp command to copy, and the break-even plot: below its curve a draft
beats the target alone on this machine. <b>Copy command</b> under the Drafter box copies the
llama-server command line for the run as set.</p>
"""


class GuideDialog(QDialog):
    """The guide in a window of its own (not modal: the main window stays usable)."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setWindowTitle(TITLE)
        self.browser = QTextBrowser()
        self.browser.setOpenExternalLinks(True)
        self.browser.setHtml(guide_html())
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.close)
        lay = QVBoxLayout(self)
        lay.addWidget(self.browser, 1)
        lay.addWidget(buttons)

    def sizeHint(self) -> QSize:  # noqa: N802 - Qt override
        screen = self.screen().availableGeometry()
        return QSize(min(760, screen.width() - 40), min(720, screen.height() - 80))


def show_guide(parent: QWidget) -> GuideDialog:
    """Open the guide (once: a second request raises the window already open)."""
    dialog = parent.findChild(GuideDialog)
    if dialog is None:
        dialog = GuideDialog(parent)
    dialog.show()
    dialog.raise_()
    dialog.activateWindow()
    return dialog


def show_about(parent: QWidget, log_path: Path) -> None:
    """Help ▸ About SpecScope (modeless)."""
    box = QMessageBox(parent)
    box.setWindowTitle("About SpecScope")
    box.setText("<b>SpecScope</b><br>A playground for llama.cpp's speculative decoding: a "
                "drafter (a small draft model, or an n-gram lookup in the text so far) proposes "
                "tokens, the target verifies them in one batch."
                f"<br><br>Log file: {log_path}")
    box.setModal(False)
    box.open()


def open_log_folder(log_path: Path) -> None:
    """Help ▸ Open the log folder, in the desktop's file manager."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    QDesktopServices.openUrl(QUrl.fromLocalFile(str(log_path.parent)))
