"""A run's chain of drafters from its SpecSettings."""

from __future__ import annotations

from specscope.core.engine.drafters import DRAFT_MODEL, Chain, Drafter
from specscope.core.engine.drafters.registry import TYPES
from specscope.core.engine.drafters.xvocab import CrossVocab


def make_drafter(type_name: str, spec, engine=None, policy=None, q=None, vocab: str = "") -> Drafter:
    """The drafter the registry names for ``type_name``; the draft model of another vocabulary
    through drafters/xvocab.py."""
    if vocab and type_name == DRAFT_MODEL:
        return CrossVocab(engine, spec, vocab, policy, q)
    return TYPES[type_name].drafter_class().create(type_name, spec, engine, policy, q, vocab)


def make_chain(spec, engine=None, policy=None, q=None, vocab: str = "") -> Chain:
    """Fresh drafters (llama.cpp makes them once per generation) for ``spec.types``;
    ``policy`` sets the draft model's length per round (core/engine/draft_policy.py; default n_max),
    ``q`` how it draws its tokens (accept_rules.DraftSampler; default its argmax), ``vocab`` how
    it drafts for a target with another vocabulary (drafters/xvocab.py; "": the same one)."""
    return Chain([make_drafter(t, spec, engine, policy, q, vocab) for t in spec.types])
