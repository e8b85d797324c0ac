"""The cost tab's words on a measured speed-up: where it falls well below or above the textbook
model's prediction at the measured α and f, what the model leaves out (a verification batch
dearer than a token, the time outside llama.cpp, a slowed baseline)."""

from __future__ import annotations

from specscope.core.measure.cost.model import textbook_speedup

WELL_BELOW = 0.8              # measured < 80 % of predicted: say why it may be
ABOVE_MODEL = 1.25            # measured > 125 % of predicted: the baseline is suspect
VERIFY_RATIO_NOTABLE = 1.25   # a verify batch costing > 1.25 target tokens is worth naming
OVERHEAD_NOTABLE = 0.15       # more than 15 % of the time outside llama.cpp


def measured_sentence(m, n_max: int) -> str:
    """The measured speed-up (``m``: cost.model.Measured) beside the textbook model's at the
    measured α and f, and what the textbook model leaves out where they differ."""
    text = f"Measured: {m.speedup:.2f}× at n = {n_max} (this run against its baseline)"
    predicted = textbook_speedup(m.alpha, n_max, m.f)  # at the measured α and f
    if m.speedup < WELL_BELOW * predicted:
        if m.verify_ratio is not None and m.verify_ratio > VERIFY_RATIO_NOTABLE:
            text += (f" — verifying a batch of {m.mean_batch:.0f} tokens took {m.verify_ratio:.1f}× "
                     "as long as one target token on this machine; the textbook model assumes 1×.")
        elif m.overhead_share > OVERHEAD_NOTABLE:
            text += (f" — {m.overhead_share:.0%} of the time went outside llama.cpp "
                     "(overhead), which the textbook model leaves out.")
        else:
            text += (f", well below the {predicted:.2f}× predicted at the measured values: "
                     "this run paid costs the textbook model leaves out (see Time per round).")
    elif m.speedup > ABOVE_MODEL * predicted:
        text += f", well above the {predicted:.2f}× the textbook model predicts at the measured values"
        if (m.baseline_overhead_share or 0.0) > OVERHEAD_NOTABLE:
            text += (f": the target-only run spent {m.baseline_overhead_share:.0%} of its time "
                     "outside llama.cpp, once per token, where speculation pays it once per "
                     "round; the textbook model leaves that out.")
        else:
            text += (": the baseline run was probably slowed by something else (a first, "
                     "cold run or other load on the machine); run it again.")
    else:
        text += "."
    return text
