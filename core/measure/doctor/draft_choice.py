"""What can draft for a target among the models a user has (the model library,
core/models/library.py): the pair doctor's ranking of them (``doctor.scan.scan_files``: fitting
drafts and heads by the calibrated estimate where one is cached, then drafts across
vocabularies), the target's own MTP blocks and the draftless n-gram types, each with a verdict
in one line (``specscope models --for``, the window's model library)."""

from __future__ import annotations

from pathlib import Path

from specscope.core.measure.doctor.scan import scan_files
from specscope.core.models.gguf_file import check_gguf
from specscope.core.models.library import Library
from specscope.core.models.mtp import nextn_layers

NGRAM_LINE = ("the n-gram types (--spec-type ngram-mod, ngram-simple, ngram-map-k, ngram-map-k4v, "
              "ngram-cache) need no draft: they copy from the text so far, and pay off where it "
              "repeats (code edits, a conversation's earlier turns)")


def rank_for(target: Path, lib: Library) -> dict:
    """What can draft for ``target`` among the library's models: the pair doctor's ranking
    (fitting drafts and heads, then drafts across vocabularies), the target's own MTP blocks,
    and the n-gram types, each with a one-line verdict."""
    info = check_gguf(target)            # (a bad target: ModelFileError, one line)
    others = [m.path for m in lib.models if _other(m.path, target)]
    report = scan_files(target, others, "the model library")
    names = {m.path: f"{m.name} ({m.store})" for m in lib.models}
    lines = [f"What can draft for {target.name} ({report.ranking}"
             + ("; then drafts of another vocabulary, cheapest f first" if report.cross else "") + "):"]
    rows = []
    for e in report.compatible:
        spec = e.report.spec_type
        cost = e.report.cost
        rows.append({"path": e.path, "name": names.get(e.path, e.path), "spec_type": spec,
                     "verdict": cost.figures() + (f"; {cost.warning}" if cost.warning else "")})
    for e in report.cross:
        rows.append({"path": e.path, "name": names.get(e.path, e.path), "spec_type": "draft-simple",
                     "verdict": f"another vocabulary: {e.report.cross.summary()} "
                                f"(--spec-vocab {e.report.cross.mode})"
                                + (f"; {e.report.cost.warning}" if e.report.cost.warning else "")})
    for i, r in enumerate(rows, 1):
        lines.append(f"  {i}. {r['name']}: --spec-type {r['spec_type']}; {r['verdict']}")
    mtp = nextn_layers(info)
    if mtp:
        lines.append(f"  +  its own {mtp} MTP block{'s' if mtp > 1 else ''}: --spec-type draft-mtp "
                     "(no draft model)")
    lines.append(f"  +  {NGRAM_LINE}")
    if not rows:
        lines.append("  No model found fits it as a draft.")
    if report.incompatible:
        lines.append(f"  Not usable as its draft ({len(report.incompatible)}):")
        lines += [f"    {names.get(e.path, e.path)}: {e.reason}" for e in report.incompatible]
    return {"target": str(target), "drafts": rows, "mtp_blocks": mtp, "ngram": NGRAM_LINE,
            "incompatible": [{"path": e.path, "reason": e.reason} for e in report.incompatible],
            "lines": lines}


def _other(path: str, target: Path) -> bool:
    try:
        return not Path(path).samefile(target)
    except OSError:
        return True
