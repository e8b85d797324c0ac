"""Conversations (core/session/conversation.py): turns that keep both caches, on real models.

SmolLM2-135M-Instruct (its own chat template) as its own draft and with the draftless
ngram-cache; the demo pair (a target without a chat template: one document). Each turn's
reply must equal the target alone on the whole conversation, prefilled from nothing, up to
numerics: where they differ the lossless check (core/measure/bench/lossless.py) decodes the position
again both ways and must find a near-tie that the batch and the single token pick apart
(SmolLM2 Q4_1 has one at the first question's 7th token on an AMD EPYC with the deterministic
settings). Turns after the first prefill only their new tokens.
"""

from __future__ import annotations

import io
import json
import threading

import numpy as np
import pytest

from specscope.core.cli.main import main
from specscope.core.engine.drafters.ngram_map import NgramMapParams
from specscope.core.engine.drafters.ngram_mod import NgramModParams
from specscope.core.engine.engine import Engine, EngineSettings, SpecSettings
from specscope.core.engine.sampling import SamplerSettings
from specscope.core.engine.events import RoundEvent
from specscope.core.errors import ContextFullError, SpecScopeError
from specscope.core.measure.bench.lossless import check_lossless
from specscope.core.models.demo import demo_pair
from specscope.core.session.conversation import Conversation
from specscope.core.session.session import RunSettings

QUESTIONS = ["Name three fruits that are red.", "Which of them is the sweetest?",
             "Name three fruits that are red."]


def settings_for(path, spec, n_predict=24, system=None, draft=None):
    return RunSettings(str(path), str(draft) if draft else None, EngineSettings(), spec,
                       SamplerSettings(), n_predict, "", True, system)


def alone(engine, prompt_tokens, n_predict):
    """The target alone on the whole conversation, from an empty cache."""
    run = engine.baseline(list(prompt_tokens), SamplerSettings(), n_predict)
    list(run)
    return run.tokens


def lossless(engine, prompt_tokens, tokens, events, n_predict, before=(), reused=0) -> str:
    """The turn against the target alone on its whole conversation: identical, or a
    divergence the lossless check finds numerical (anything else fails). ``before``: the turns
    before as (prompt tokens, reused, events): the check replays them, so the rows the turn kept
    hold the numbers it read."""
    base = alone(engine, prompt_tokens, n_predict)
    if list(tokens) == base:
        return "identical"
    report = check_lossless(engine, list(prompt_tokens), base, list(tokens), list(events),
                            before=before, reused=reused)
    assert report.verdict == "numerical", report.describe()
    return report.verdict


def check_turn(engine, turn, n_predict, conv=None) -> str:
    """``check`` on a conversation's turn: the runs since the last that prefilled from nothing
    made the rows it kept (``conv.runs``: regenerated turns too)."""
    runs = conv.runs[:conv.runs.index(turn)] if conv is not None else []
    fresh = max((i for i, t in enumerate(runs) if not t.prefill.reused), default=len(runs))
    before = [(t.prefill.tokens, t.prefill.reused, t.session.run.events) for t in runs[fresh:]]
    return lossless(engine, turn.prefill.tokens, turn.tokens, turn.session.run.events, n_predict,
                    before, turn.prefill.reused)


@pytest.fixture(scope="module")
def smol(smollm2):
    with Engine(smollm2, smollm2, EngineSettings(n_ctx=1024)) as engine:
        yield engine


@pytest.mark.parametrize("spec", [SpecSettings(n_max=3), SpecSettings(types=("ngram-cache",))],
                         ids=["draft-simple", "ngram-cache"])
def test_each_turn_equals_the_target_alone_and_prefills_only_what_is_new(smol, smollm2, spec):
    conv = Conversation(smol, settings_for(smollm2, spec, system="Answer briefly."))
    assert conv.chat
    for question in QUESTIONS:
        conv.say(question).play()
    assert [t.user for t in conv.turns] == QUESTIONS
    for i, turn in enumerate(conv.turns):       # (checked after: a check uses the engine)
        p = turn.prefill
        check_turn(smol, turn, 24, conv)
        assert turn.session.prompt_text.count("<|im_start|>user") == i + 1
        if i == 0:
            assert p.reused == 0
        else:
            # the turn before's prompt and reply are held: only the new message is decoded
            before = conv.turns[i - 1]
            assert p.reused >= len(before.prefill.tokens) + len(before.tokens) - 2
            assert p.decoded < 30 < p.reused


@pytest.mark.parametrize("spec", [
    SpecSettings(types=("ngram-simple",), own={"ngram-simple": NgramMapParams(size_n=3, size_m=16)}),
    SpecSettings(types=("ngram-mod",), own={"ngram-mod": NgramModParams(n_match=4, n_min=2, n_max=16)})],
    ids=["ngram-simple", "ngram-mod"])
def test_ngram_drafters_learn_a_repeated_answer_from_the_turns_before(smol, smollm2, spec):
    """The third turn asks the first turn's question again: its answer is in the history."""
    conv = Conversation(smol, settings_for(smollm2, spec, 48))
    turns = [conv.say(q).play() for q in QUESTIONS]
    first, third = (t.session.run.stats for t in (turns[0], turns[2]))
    assert third.n_accept > first.n_accept          # (here: over ten more; other CPUs' numerics
    assert third.acceptance_rate > first.acceptance_rate   # may word the answer a little apart)


def test_ngram_cache_keeps_its_context_cache_across_turns_as_llama_server_does(smol, smollm2):
    """llama.cpp keeps ngram-cache's context cache across a slot's requests and counts only
    the tokens past those it counted, each draft call's tokens as a sequence of their own: a
    round that kept no drafted token adds no n-gram, so the earlier replies are hardly counted
    and a repeated question gains less than in a run that counts the whole conversation as
    its prompt (llama-speculative-simple, or a fresh slot)."""
    spec = SpecSettings(types=("ngram-cache",))
    conv = Conversation(smol, settings_for(smollm2, spec, 48))
    drafters = []
    for q in QUESTIONS:
        conv.say(q).play()
        drafters.append(conv._held.chain.drafters[0])
    assert drafters[1] is not drafters[0] and drafters[1].context is drafters[0].context
    assert drafters[2].cache_size > len(conv.turns[1].prefill.tokens)
    third = conv.turns[2]
    fresh = list(smol.speculative(list(third.prefill.tokens), spec, SamplerSettings(), 48))
    # (here 0 against 28: the earlier replies were hardly counted; never more than a fresh count)
    assert third.session.run.stats.n_accept <= sum(e.n_accepted for e in fresh)


def test_regenerate_and_edit_cut_both_caches_back(smol, smollm2):
    conv = Conversation(smol, settings_for(smollm2, SpecSettings(n_max=3)))
    first = conv.say(QUESTIONS[0]).play()
    second = conv.say(QUESTIONS[1]).play()
    again = conv.regenerate().play()
    # greedy: the same reply; the whole prompt but its last token was held
    assert again.tokens == second.tokens and again.regenerated == 1
    assert again.prefill.reused == len(again.prefill.tokens) - 1
    assert len(conv.turns) == 2 and conv.turns[-1] is again
    edited = conv.edit("Which of them is the sourest?").play()
    assert conv.turns[0] is first and conv.turns[1] is edited
    assert edited.user == "Which of them is the sourest?"
    # held up to where the message changes ("Which of them is the s"), no further
    prompt = np.asarray(edited.prefill.tokens)
    old = np.asarray(second.prefill.tokens)
    common = int(np.flatnonzero(prompt[:len(old)] != old[:len(prompt)])[0])
    assert edited.prefill.reused == common
    check_turn(smol, edited, 24, conv)
    with pytest.raises(SpecScopeError, match="empty"):
        conv.edit("  ")
    conv.reset()
    with pytest.raises(SpecScopeError, match="nothing to regenerate"):
        conv.regenerate()


def test_another_run_in_between_means_a_fresh_prefill(smol, smollm2):
    """Something else used the engine between turns (a run, a calibration): its caches no
    longer hold the conversation, so the turn prefills everything, and stays correct."""
    conv = Conversation(smol, settings_for(smollm2, SpecSettings(n_max=3)))
    conv.say(QUESTIONS[0]).play()
    list(smol.baseline("Something else entirely.", SamplerSettings(), 4))
    turn = conv.say(QUESTIONS[1]).play()
    assert turn.prefill.reused == 0
    check_turn(smol, turn, 24, conv)


def test_a_stopped_turn_is_kept_and_the_next_one_goes_on(smol, smollm2):
    conv = Conversation(smol, settings_for(smollm2, SpecSettings(n_max=3), 64))
    stop = threading.Event()
    turn_run = conv.say(QUESTIONS[0], stop)
    for i, _ in enumerate(turn_run):
        if i == 1:
            stop.set()
    assert conv.turns[0].finish == "stopped"
    turn = conv.say(QUESTIONS[1]).play()
    assert turn.prefill.reused > 0
    check_turn(smol, turn, 64, conv)


def test_a_conversation_that_overflows_the_context_says_so_and_keeps_every_turn(smollm2):
    with Engine(smollm2, smollm2, EngineSettings(n_ctx=128)) as engine:
        conv = Conversation(engine, settings_for(smollm2, SpecSettings(n_max=3), 40))
        conv.say("Name three fruits that are red.").play()
        conv.say("And three that are yellow?").play()
        with pytest.raises(ContextFullError, match=r"no longer fits the context: it is \d+ tokens and the context holds 256.*every turn is kept"):
            for _ in range(8):     # (llama.cpp makes the context 256 tokens at least)
                kept = list(conv.turns)
                conv.say("Tell me about each of them in detail.").play()
        assert conv.turns == kept and len(kept) >= 3


def test_a_target_without_a_chat_template_continues_one_document():
    target, draft = demo_pair()
    with Engine(target, draft, EngineSettings.deterministic()) as engine:
        conv = Conversation(engine, settings_for(target, SpecSettings(n_max=3), 16, draft=draft))
        assert conv.document
        first = conv.say("def parse_args(argv):").play()
        second = conv.say("def main():").play()
        assert second.session.prompt_text == "def parse_args(argv):" + first.reply + "\ndef main():" \
            or second.session.prompt_text == "def parse_args(argv):" + first.reply + "def main():"
        assert second.prefill.reused > 0
        check_turn(engine, second, 16, conv)


@pytest.mark.parametrize("drafting", [["-md", "<smollm2>"], ["--spec-type", "ngram-mod",
                                                             "--spec-ngram-mod-n-match", "4",
                                                             "--spec-ngram-mod-n-min", "2"]],
                         ids=["own-draft", "ngram-mod-no-draft"])
def test_chat_json_from_stdin_matches_the_baseline_turn_by_turn(smollm2, monkeypatch, capsys, drafting):
    lines = "\n".join(QUESTIONS) + "\n"
    drafting = [str(smollm2) if a == "<smollm2>" else a for a in drafting]

    def chat(*extra):
        monkeypatch.setattr("sys.stdin", io.StringIO(lines))
        assert main(["chat", "-m", str(smollm2), "-n", "16", "--json",
                     "--no-probe", "-c", "1024", *extra]) == 0
        return [json.loads(line) for line in capsys.readouterr().out.splitlines()]

    spec, base = chat(*drafting), chat("--baseline")
    assert [t["turn"] for t in spec] == [1, 2, 3]
    for s, b in zip(spec, base):
        assert {"text", "tokens", "finish", "prefill_tokens", "reused_tokens", "stats"} <= set(s)
        assert s["prefill_tokens"] + s["reused_tokens"] == len(s["prompt_tokens"])
    assert spec[0]["reused_tokens"] == 0 and base[0]["reused_tokens"] == 0
    for t in spec[1:] + base[1:]:
        assert t["reused_tokens"] > 0 and t["prefill_tokens"] < len(t["prompt_tokens"])
    assert sum(t["stats"]["n_drafted"] for t in spec) > 0
    # turn by turn against the baseline conversation, while the two conversations agree
    def replayed(t):
        return t["prompt_tokens"], t["reused_tokens"], [RoundEvent.from_dict(r) for r in t["rounds"]]

    with Engine(smollm2, None, EngineSettings(n_ctx=1024)) as engine:
        for i, (s, b) in enumerate(zip(spec, base)):
            if s["prompt_tokens"] != b["prompt_tokens"]:
                break           # an earlier reply differed (numerically): not the same turn
            if s["tokens"] != b["tokens"]:
                report = check_lossless(engine, s["prompt_tokens"], b["tokens"], s["tokens"],
                                        replayed(s)[2], before=[replayed(t) for t in spec[:i]],
                                        reused=s["reused_tokens"])
                assert report.verdict == "numerical", report.describe()
        else:
            assert spec[-1]["text"] == base[-1]["text"]


def test_a_turn_after_a_baseline_turn_does_not_trust_the_draft_cache(smol, smollm2):
    """The target alone left the target's cache holding the conversation, not the draft's: a
    draft-simple turn after it prefills both again; an n-gram turn keeps the target's rows."""
    base = Conversation(smol, settings_for(smollm2, None))
    base.say(QUESTIONS[0]).play()
    spec_settings = settings_for(smollm2, SpecSettings(n_max=3))
    base.settings = spec_settings
    turn = base.say(QUESTIONS[1]).play()
    assert turn.prefill.reused == 0
    ngram = Conversation(smol, settings_for(smollm2, None))
    ngram.say(QUESTIONS[0]).play()
    ngram.settings = settings_for(smollm2, SpecSettings(types=("ngram-simple",)))
    turn = ngram.say(QUESTIONS[1]).play()
    assert turn.prefill.reused > 0
    check_turn(smol, turn, 24, ngram)
