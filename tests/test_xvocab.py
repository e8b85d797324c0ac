"""draft-simple across vocabularies (core/engine/drafters/xvocab.py, docs/cross-vocab.md): the demo
target with the foreign-vocabulary demo draft in both modes, and drafts that cannot be
translated (generated vocabularies), all on real llama.cpp."""

from __future__ import annotations

import numpy as np
import pytest

from helpers import ggufgen
from specscope.core.cli.main import main as cli_main
from specscope.core.engine.engine import Engine, EngineSettings, SpecSettings
from specscope.core.engine.sampling import SamplerSettings
from specscope.core.errors import ConfigError, IncompatiblePairError
from specscope.core.measure.bench.lossless import compare
from specscope.core.models.demo import DEMO_FOREIGN_DRAFT, models_dir, prompts_dir
from specscope.core.models.llama import Model
from specscope.core.models.vocab_map import vocab_map

DET = EngineSettings.deterministic()
GREEDY = SamplerSettings()
MODELS = models_dir()
TARGET, DRAFT, FOREIGN = (MODELS / n for n in ("demo-target.gguf", "demo-draft.gguf", DEMO_FOREIGN_DRAFT))
PROMPTS = [p.read_text(encoding="utf-8") for p in sorted(prompts_dir().glob("0[1-5]_*.txt"))]


@pytest.fixture(scope="module")
def foreign():
    with Engine(TARGET, FOREIGN, DET) as e:
        yield e


def events_of(engine, prompt, spec, sampler=GREEDY, n=48):
    run = engine.speculative(prompt, spec, sampler, n)
    return run, list(run)


def notes(events) -> str:
    return "\n".join(ev.draft_note for ev in events)


# ------------------------------------------------------------------ the demo pair, both modes

@pytest.mark.parametrize("mode", ["translate", "intersect"])
def test_greedy_output_equals_the_baseline_on_five_prompts(foreign, mode):
    """The acceptance criterion: 5 prompts x 128 tokens, token for token (or a near-tie the
    lossless check names)."""
    drafted = 0
    for prompt in PROMPTS:
        c = compare(foreign, prompt, SpecSettings(n_max=4, vocab=mode), GREEDY, n_predict=128)
        assert c.lossless.identical or c.lossless.verdict == "numerical", c.lossless.describe()
        drafted += c.spec.stats.n_drafted
    assert drafted > 0


def test_llama_cpps_verdict_stays_and_the_mode_is_chosen(foreign):
    refusal = foreign.vocab_refusal()
    assert isinstance(refusal, IncompatiblePairError) and "demo-draft-foreign-vocab.gguf" in str(refusal)
    with pytest.raises(IncompatiblePairError, match="vocabulary sizes differ"):
        foreign.speculative("x", SpecSettings(vocab="off"))
    assert foreign.speculative("x", SpecSettings()).vocab_mode == "translate"
    assert foreign.speculative("x", SpecSettings(accept_rule="ratio")).vocab_mode == "intersect"
    with pytest.raises(ConfigError, match="translate drafts text"):
        foreign.speculative("x", SpecSettings(vocab="translate", accept_rule="ratio"))
    with Engine(TARGET, DRAFT, DET) as same:
        assert same.vocab_refusal() is None
        assert same.speculative("x", SpecSettings()).vocab_mode == ""


def test_rounds_say_the_mode_count_target_tokens_and_time_the_translation(foreign):
    for mode in ("translate", "intersect"):
        _, events = events_of(foreign, PROMPTS[1], SpecSettings(n_max=4, vocab=mode))
        spec = [ev for ev in events if ev.drafted]
        assert spec and {ev.xvocab.mode for ev in spec} == {mode}
        assert all(t < foreign.target.n_vocab for ev in spec for t in ev.drafted)
        assert all(len(ev.drafted) <= 4 and ev.n_accepted <= len(ev.drafted) for ev in spec)
        assert all(ev.xvocab.own for ev in spec) and sum(ev.t_translate for ev in events) > 0
        if mode == "intersect":      # one for one: the draft's own tokens have the same text
            pieces = [(foreign.draft.piece(d), foreign.target.piece(t))
                      for ev in spec for d, t in zip(ev.xvocab.own, ev.drafted)]
            assert all(a == b for a, b in pieces)


def test_intersect_on_a_shared_vocabulary_drafts_what_the_draft_drafts():
    """Where every token is shared the mask changes nothing: intersect's rounds are the
    same-vocabulary rounds, id for id."""
    with Engine(TARGET, DRAFT, DET) as e:
        _, native = events_of(e, PROMPTS[0], SpecSettings(n_max=4))
        _, mapped = events_of(e, PROMPTS[0], SpecSettings(n_max=4, vocab="intersect"))
    assert [ev.drafted for ev in mapped] == [ev.drafted for ev in native]
    assert [ev.n_accepted for ev in mapped] == [ev.n_accepted for ev in native]


@pytest.mark.parametrize("mode,rule", [("translate", "match"), ("intersect", "match"),
                                       ("intersect", "ratio")])
def test_temperature(foreign, mode, rule):
    """At temperature: llama.cpp's match rule emits exactly the target's own samples; the ratio
    rule (intersect: the draft's q over the shared tokens, mapped) runs through, with the other
    rule's expected acceptance on each draft."""
    hot = SamplerSettings(temperature=0.8, seed=7)
    spec = SpecSettings(n_max=3, vocab=mode, accept_rule=rule)
    if rule == "match":
        c = compare(foreign, PROMPTS[2], spec, hot, n_predict=64)
        assert c.lossless.identical or c.lossless.verdict == "numerical", c.lossless.describe()
        return
    run, events = events_of(foreign, PROMPTS[2], spec, hot, n=64)
    assert len(run.tokens) == 64 and all(0 <= t < foreign.target.n_vocab for t in run.tokens)
    cf = [p for ev in events for p in ev.counterfactual]
    assert cf and all(0.0 <= p <= 1.0 for p in cf)


def test_the_vocabulary_map_is_built_once_and_cached(tmp_path, monkeypatch):
    monkeypatch.setenv("SPECSCOPE_CACHE_DIR", str(tmp_path))
    with Model(TARGET, vocab_only=True) as t, Model(FOREIGN, vocab_only=True) as d:
        m = vocab_map(t, d)
        files = list((tmp_path / "vocab-maps").glob("*.npz"))
        assert len(files) == 1
        again = vocab_map(t, d)
        shared = np.flatnonzero(m.draft_to_target >= 0)
        assert 0 < len(shared) < d.n_vocab and 0 < m.target_share < 1
        assert all(d.piece(int(i)) == t.piece(int(m.draft_to_target[i])) for i in shared)
    assert np.array_equal(again.draft_to_target, m.draft_to_target)
    assert np.array_equal(again.target_to_draft[m.draft_to_target[shared]], shared)


def test_cli_runs_the_foreign_draft_and_says_how(capsys):
    code = cli_main(["run", "-m", str(TARGET), "-md", str(FOREIGN), "-p", PROMPTS[0], "-n", "24",
                     "--spec-vocab", "intersect", "--no-probe", "--deterministic"])
    out, err = capsys.readouterr()
    assert code == 0
    assert "cannot draft for demo-target.gguf" in err and "--spec-vocab intersect" in err
    assert "--spec-vocab intersect (" in out and "µs per drafted target token" in out
    assert "translate 0." in out                 # the phase in the time line


# ------------------------------------------------------------------ drafts it cannot translate

def ascii_vocab(drop: str = "", specials=()) -> list[str]:
    """Byte-level BPE over printable ASCII and the line break (minus ``drop``), one merge, then
    ``specials`` and <|endoftext|>: a random model over it writes valid text."""
    table = ggufgen.byte_tokens()
    chars = [table[b] for b in [*range(0x20, 0x7F), 0x0A] if chr(b) not in drop]
    return chars + ["Ġt"] + list(specials) + [ggufgen.EOT]


def favouring(tokens: list[str], favourite: str, seed: int) -> dict:
    """Random weights under which ``favourite`` often has the largest logit."""
    w = ggufgen.llama_weights(len(tokens), n_layer=1, seed=seed)
    top = int(np.argmax(w["output.weight"] @ w["token_embd.weight"].mean(0)))
    w["output.weight"][tokens.index(favourite)] = 3.0 * w["output.weight"][top]
    return w


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """Generated pairs whose tokenizers disagree in the ways the modes must survive."""
    d = tmp_path_factory.mktemp("xvocab")

    def write(name, tokens, weights=None, **kw):
        return ggufgen.write_llama(d / f"{name}.gguf", weights, tokens=tokens,
                                   merges=ggufgen.MERGES[:1], **kw)
    control = ascii_vocab(specials=["<|im_start|>"])
    merged = ascii_vocab()[:-1] + [m.replace(" ", "") for m in ggufgen.MERGES[1:]] + [ggufgen.EOT]
    return {
        "target": write("target", ascii_vocab(), n_layer=2, seed=1),
        # a draft that writes a control token whenever its favourite ordinary token leads
        "control": write("control", control, favouring(control, "<|im_start|>", 11), n_layer=1),
        # a draft that writes many line breaks, and a target that has no token for one
        "lines": write("lines", ascii_vocab(), favouring(ascii_vocab(), "Ċ", 12), n_layer=1),
        "no_lines": write("no-lines", ascii_vocab(drop="\n"), n_layer=2, seed=13),
        # SentencePiece without byte fallback: llama.cpp cannot spell what its pieces miss
        "spm": ggufgen.write_llama(d / "spm.gguf", n_layer=1, seed=14, model="llama", bos=1, eos=2,
                                   tokens=[t for t in ggufgen.spm_vocab() if not t.startswith("<0x")]),
        # all of ggufgen's merges ("ĊĠĠĠĠ": a line break and four spaces, one token), favoured
        "merges": ggufgen.write_llama(d / "merges.gguf", favouring(merged, "ĊĠĠĠĠ", 15), n_layer=1,
                                      tokens=merged, merges=ggufgen.MERGES),
    }


PROMPT = "def hello(world):\n    return world.the_end(42)\n"


def lossless_events(target, draft, spec, settings=DET, n=48):
    """The speculative run's events, checked against the baseline token for token."""
    with Engine(target, draft, settings) as e:
        base = e.baseline(PROMPT, GREEDY, n)
        list(base)
        run, events = events_of(e, PROMPT, spec, n=n)
        assert run.tokens == base.tokens
        return events


def test_a_drafted_control_token_ends_the_drafted_text(made):
    events = lossless_events(made["target"], made["control"], SpecSettings(n_max=4, vocab="translate"))
    assert "cut before a control token ('<|im_start|>')" in notes(events)
    assert any(ev.drafted for ev in events if "cut before" in ev.draft_note)   # the text before it


def test_text_a_tokenizer_cannot_give_back_drafts_nothing(made):
    # the draft writes line breaks, which the target cannot: no draft in those rounds
    events = lossless_events(made["no_lines"], made["lines"], SpecSettings(n_max=3, vocab="translate"))
    assert "the target's tokenizer does not give the drafted text back: no draft" in notes(events)
    assert any(ev.drafted for ev in events)
    # the draft cannot write the target's line breaks: it reads the text as best it can
    for mode in ("translate", "intersect"):
        events = lossless_events(made["lines"], made["no_lines"], SpecSettings(n_max=3, vocab=mode))
        assert any(ev.drafted for ev in events)


@pytest.mark.parametrize("mode", ["translate", "intersect"])
def test_a_vocabulary_llama_cpp_cannot_tokenize_with_is_refused(made, mode):
    """A SentencePiece vocabulary without byte tokens: llama.cpp's tokenizer aborts the process
    on a character it cannot spell, so the mode is refused before the run, in one line."""
    with Engine(made["target"], made["spm"], DET) as e, pytest.raises(ConfigError) as err:
        e.speculative(PROMPT, SpecSettings(vocab=mode))
    message = str(err.value)
    assert "spm.gguf" in message and "no byte token for" in message and "\n" not in message


def test_a_translation_longer_than_the_draft_length_is_cut(made):
    # the draft's merged tokens are several tokens each on a target with one merge
    events = lossless_events(made["target"], made["merges"], SpecSettings(n_max=2, vocab="translate"))
    assert all(len(ev.drafted) <= 2 for ev in events)
    assert "translation cut to the round's budget of 2" in notes(events)


def test_a_reading_that_outgrows_the_drafts_context_ends_drafting(made):
    # single characters take more positions than the target's merged tokens: the reading fills first
    settings = EngineSettings.deterministic(n_ctx=256)
    with Engine(made["merges"], made["target"], settings) as e:
        prompt = e.target.tokenize(PROMPT * 6)[:150]
        base = e.baseline(prompt, GREEDY, 100)
        list(base)
        run, events = events_of(e, prompt, SpecSettings(n_max=3, vocab="translate"), n=100)
    assert run.tokens == base.tokens and run.finish == "n_predict"
    assert "no longer fits its context of 256: drafting ended" in notes(events)
