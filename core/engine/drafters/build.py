"""A run's chain of drafters from its SpecSettings."""

from __future__ import annotations

from specscope.core.engine.drafters import Chain, Drafter
from specscope.core.engine.drafters.dflash import DFlash, DSpark
from specscope.core.engine.drafters.eagle3 import Eagle3
from specscope.core.engine.drafters.model import DraftModel
from specscope.core.engine.drafters.mtp import Mtp
from specscope.core.engine.drafters.ngram_cache import NgramCache
from specscope.core.engine.drafters.ngram_map import NgramMap
from specscope.core.engine.drafters.ngram_mod import NgramMod
from specscope.core.engine.drafters.ngram_simple import NgramSimple
from specscope.core.engine.drafters.xvocab import CrossVocab


def make_drafter(type_name: str, spec, engine=None, policy=None, q=None, vocab: str = "") -> Drafter:
    if type_name == "ngram-simple":
        return NgramSimple(spec.params(type_name))
    if type_name in ("ngram-map-k", "ngram-map-k4v"):
        return NgramMap(spec.params(type_name), key_only=type_name == "ngram-map-k")
    if type_name == "ngram-mod":
        return NgramMod(spec.params(type_name))
    if type_name == "ngram-cache":
        return NgramCache(spec.params(type_name))
    if type_name == "draft-simple":
        return CrossVocab(engine, spec, vocab, policy, q) if vocab else DraftModel(engine, spec, policy, q)
    if type_name == "draft-eagle3":
        return Eagle3(engine, spec)
    if type_name == "draft-mtp":
        return Mtp(engine, spec)
    if type_name == "draft-dflash":
        return DFlash(engine, spec)
    if type_name == "draft-dspark":
        return DSpark(engine, spec)
    raise ValueError(type_name)


def make_chain(spec, engine=None, policy=None, q=None, vocab: str = "") -> Chain:
    """Fresh drafters (llama.cpp makes them once per generation) for ``spec.types``;
    ``policy`` sets the draft model's length per round (core/engine/draft_policy.py; default n_max),
    ``q`` how it draws its tokens (accept_rules.DraftSampler; default its argmax), ``vocab`` how
    it drafts for a target with another vocabulary (drafters/xvocab.py; "": the same one)."""
    return Chain([make_drafter(t, spec, engine, policy, q, vocab) for t in spec.types])
