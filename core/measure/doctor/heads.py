"""The pair doctor for a head beside its target (an EAGLE-3 or DFlash head: the checks its
llama.cpp drafter makes, and what to run it with) and for a model that carries MTP blocks.
``t`` and ``d`` are the doctor's loaded target and draft (doctor/pair.py: their GGUF info,
summary, vocabulary facts and head facts)."""

from __future__ import annotations

from dataclasses import replace

from specscope.core.engine.drafters import DRAFT_MODEL
from specscope.core.engine.drafters.registry import TARGET, listing, names
from specscope.core.errors import ModelFileError, printable
from specscope.core.models.dflash import DFlashFacts
from specscope.core.models.eagle3 import HeadFacts, TargetShape, check_fit
from specscope.core.models.vocab_gate import Rule


def head_spec_type(head: HeadFacts) -> str:
    """The --spec-type that drafts with a head, as llama.cpp picks it from the file
    (common_speculative_types_from_gguf: a DFlash head with a Markov head is the Markov type)."""
    kind, markov = ("dflash", head.dspark) if isinstance(head, DFlashFacts) else ("eagle3", False)
    return names(lambda t: t.head == kind and t.markov == markov)[0]


def _block_types(markov: bool) -> str:
    return names(lambda t: t.block and t.markov == markov)[0]


def head_rules(t, d) -> list[Rule]:
    """A head beside the target: the checks its llama.cpp drafter needs (check_fit, with the
    rules of the head's kind, on the two headers: core/models/eagle3.py, dflash.py) and a target
    whose memory can drop part of a sequence (the engine refuses heads on a recurrent or hybrid
    one)."""
    head, spec = d.head, head_spec_type(d.head)
    target = replace(TargetShape.of_file(t.info), n_vocab=t.facts.n_tokens)
    values = {"target_layers": list(head.target_layers), "target_n_layer": target.n_layer,
              "target_hidden_size": head.target_hidden_size, "target_n_embd": target.n_embd,
              "n_draft_vocab": head.n_draft_vocab, "head_n_vocab": head.n_vocab,
              "target_n_vocab": target.n_vocab}
    mask = f", mask token {head.mask}" if isinstance(head, DFlashFacts) else ""
    name = f"{d.info.architecture} head"
    try:
        check_fit(target, head)
        rules = [Rule(name, True, values,
                      f"fits: target layers {list(head.target_layers)} of {target.n_layer}, hidden "
                      f"size {target.n_embd}{mask}, d2t within the {target.n_vocab:,} tokens")]
    except ModelFileError as e:
        rules = [Rule(name, False, values, e.problem)]
    mem = t.summary.memory
    rules.append(Rule("target memory", mem == "attention", {"memory": mem},
                      "an attention KV cache: the head's rounds roll it back with seq_rm"
                      if mem == "attention" else
                      f"a {mem} target: SpecScope does not run {spec} on it yet (llama.cpp "
                      "rolls it back with n_rs_seq snapshots)"))
    return rules


def head_notes(t, d) -> list[str]:
    head, spec = d.head, head_spec_type(d.head)
    base = d.info.text("general.base_model.0.name")
    made_for = f"; made for {printable(base)}" if base else ""
    block = isinstance(head, DFlashFacts)
    n_layer = max(head.target_layers, default=-1) + 1 if block else max(head.target_layers, default=0)
    run = (f"run it with --spec-type {spec} (-md HEAD); {DRAFT_MODEL} refuses a head" if not block else
           f"run it with --spec-type {spec} (-md HEAD): "
           + (f"its Markov head makes it llama.cpp's {spec} ({_block_types(False)} drafts with "
              "it too)" if head.dspark else f"it has no Markov head, so llama.cpp drafts with it "
              f"as {spec}")
           + f"; {listing(lambda t: t.uses_md and t.head != 'dflash')} refuse it")
    notes = [f"draft: {head.describe()}",
             f"it fits a target of hidden size {head.target_hidden_size} with at least "
             f"{n_layer} layers and a vocabulary of at most {head.n_vocab:,} tokens{made_for}",
             run]
    if block and head.dspark and not head.has_confidence:
        notes.append(f"it has no confidence head: {spec} drafts with it at "
                     "--spec-draft-p-min 0 only")
    return notes + [f"target ({t.summary.architecture or 'unknown architecture'}): "
                    f"{t.summary.memory} memory"]


def nextn_notes(t, d) -> list[str]:
    return [f"{side} has {m.nextn_layers} nextn (MTP) layer{'s' if m.nextn_layers > 1 else ''}: "
            f"--spec-type {listing(lambda t: t.source == TARGET)} drafts with them (on the "
            "target, no -md)"
            for side, m in (("target", t), ("draft", d)) if m.nextn_layers]
