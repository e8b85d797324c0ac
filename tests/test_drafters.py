"""The drafter chain (llama.cpp's --spec-type), and n-gram drafting in the engine on the demo
pair with real llama.cpp."""

import numpy as np
import pytest

from specscope.core.cli.main import main as cli_main
from specscope.core.models.demo import demo_pair
from specscope.core.engine.drafters import Chain, Drafter, Proposal, parse_types
from specscope.core.engine.drafters.ngram_simple import NgramSimple
from specscope.core.engine.drafters.ngram_map import NgramMapParams
from specscope.core.engine.engine import Engine, EngineSettings, SpecSettings
from specscope.core.errors import ConfigError
from specscope.core.engine.sampling import SamplerSettings
from specscope.core.measure.stats import fold

from conformance.drafter_oracle import oracle_rounds

REPEATING = ("def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n\n\n"
             "def mul(a, b):\n")
SMALL = NgramMapParams(size_n=2, size_m=6)


def test_types_are_put_in_llamacpp_priority_order():
    assert parse_types("draft-simple,ngram-cache,ngram-simple") == \
        ("ngram-simple", "ngram-cache", "draft-simple")
    assert parse_types(["ngram-mod", "ngram-mod"]) == ("ngram-mod",)
    for bad, says in (("ngram-fast", "unknown speculative type: ngram-fast"),
                      ("none", "baseline"), ("", "at least one")):
        with pytest.raises(ConfigError, match=says):
            parse_types(bad)


class Scripted(Drafter):
    """A drafter that proposes what it is told, and records what it is told back."""

    def __init__(self, name, drafts):
        self.name, self.drafts, self.told = name, list(drafts), []

    def draft(self, history, id_last, budget):
        return Proposal(self.name, tuple(self.drafts.pop(0)))

    def accept(self, n_accepted, mine):
        self.told.append((n_accepted, mine))


def test_the_first_nonempty_draft_wins_and_everyone_is_told():
    simple = Scripted("ngram-simple", [[], [7, 8, 9], [], []])
    model = Scripted("draft-simple", [[1, 2], [], [], []])
    chain = Chain([model, simple])                 # given out of order: priority decides
    assert [d.name for d in chain.drafters] == ["ngram-simple", "draft-simple"]
    history = np.zeros(4, dtype=np.int32)
    won = []
    for n_accepted, budget in ((1, 5), (2, 2), (0, 5)):
        p = chain.draft(history, 3, budget)
        won.append((p.drafter, p.tokens))
        chain.accept(n_accepted)
    # round 2: ngram-simple's 3 tokens are cut to the budget of 2 (and the model is not asked)
    assert won == [("draft-simple", (1, 2)), ("ngram-simple", (7, 8)), ("draft-simple", ())]
    assert len(model.drafts) == 2 and len(simple.drafts) == 1
    # round 3: nobody drafted, so the last winner (ngram-simple) is told 0 as its own (llama.cpp's
    # impl_last is kept across rounds)
    assert simple.told == [(1, False), (2, True), (0, True)]
    assert model.told == [(1, True), (2, False), (0, False)]


def test_ngram_simple_copies_what_followed_the_latest_earlier_match():
    # history a b c X a b c Y a b c Z a b | id_last c: the latest earlier "b c" ... is at 9
    seq = [5, 6, 7, 1, 5, 6, 7, 2, 5, 6, 7, 3, 5, 6, 9, 9, 9, 9]
    d = NgramSimple(NgramMapParams(size_n=2, size_m=3))
    d.begin(np.array(seq[:1], dtype=np.int32))
    h = np.array(seq[:13], dtype=np.int32)          # ... 3 5 | id_last 6
    p = d.draft(h, 6, 10)
    assert p.tokens == (7, 3, 5) and p.detail.key == 8 and p.detail.source == 10
    assert "position 8" in p.note
    assert NgramSimple(NgramMapParams(size_n=2, size_m=3)).draft(h[:6], 6, 10).tokens == ()


def test_oracle_rounds_with_ngram_simple_match_llamacpp():
    # expected rounds confirmed against llama.cpp's own chain (tests/reference/drafter_oracle.cpp):
    #   echo "1 2 3 4 5 6 7 8 1 2 3 4 5 6 7 8 1 2 3 4" ; echo "5 6 7 8 1 2 3 4 5 6 7 8 9 9 1 2 3 4 5 6 7 8"
    #   drafter_oracle 256 30 -m none --spec-type ngram-simple --spec-ngram-simple-size-n 2 \
    #       --spec-ngram-simple-size-m 4
    prompt = [1, 2, 3, 4, 5, 6, 7, 8] * 2 + [1, 2, 3, 4]
    cont = [5, 6, 7, 8, 1, 2, 3, 4, 5, 6, 7, 8, 9, 9, 1, 2, 3, 4, 5, 6, 7, 8]
    chain = Chain([NgramSimple(NgramMapParams(size_n=2, size_m=4))])
    rounds = [(a, n) for a, n, _ in oracle_rounds(chain, prompt, cont, 256, 30)]
    assert rounds == [(4, 4), (4, 4), (2, 4), (0, 0), (0, 0), (0, 0), (4, 4)]


@pytest.fixture(scope="module")
def demo():
    target, draft = demo_pair()
    with Engine(target, draft, EngineSettings.deterministic(n_ctx=1024)) as engine:
        yield engine


def test_an_ngram_run_is_lossless_and_says_who_drafted_and_from_where(demo):
    spec = SpecSettings(types=("ngram-simple",), own={"ngram-simple": SMALL})
    base = demo.baseline(REPEATING, SamplerSettings(), 96)
    list(base)
    run = demo.speculative(REPEATING, spec, SamplerSettings(), 96)
    events = list(run)
    assert run.tokens == base.tokens
    drafted = [e for e in events if e.drafted]
    assert len(drafted) >= 10
    context = list(run.prompt_tokens) + run.tokens
    for e in drafted:
        assert e.drafter == "ngram-simple" and e.draft_stop in ("lookup", "budget")
        # the n-gram it matched is the one ending with the seed, and the draft was copied from
        # right after that earlier occurrence
        assert context[e.ngram.key:e.ngram.key + 2] == context[e.n_past - 1:e.n_past + 1]
        assert tuple(context[e.ngram.source:e.ngram.source + len(e.drafted)]) == e.drafted
        assert f"position {e.ngram.key}" in e.draft_note
    stats = fold(events)
    assert [d.name for d in stats.by_drafter] == ["ngram-simple"]
    assert stats.drafter("ngram-simple").n_drafted == stats.n_drafted > 0
    assert stats.t_lookup > 0


def test_a_chain_splits_its_rounds_and_counts_between_its_drafters(demo):
    spec = SpecSettings(types=("ngram-simple", "draft-simple"), own={"ngram-simple": SMALL}, n_max=4)
    base = demo.baseline(REPEATING, SamplerSettings(), 96)
    list(base)
    run = demo.speculative(REPEATING, spec, SamplerSettings(), 96)
    events = list(run)
    assert run.tokens == base.tokens
    stats = fold(events)
    names = {d.name for d in stats.by_drafter}
    assert names == {"ngram-simple", "draft-simple"}
    for field in ("n_draft_rounds", "n_drafted", "n_accept"):
        assert sum(getattr(d, field) for d in stats.by_drafter) == getattr(stats, field)
    # draft-simple drafts only when ngram-simple had nothing (the n-gram types come first)
    assert all(len(e.drafted) <= 4 for e in events if e.drafter == "draft-simple")
    assert any(len(e.drafted) > 4 for e in events if e.drafter == "ngram-simple")


def test_every_drafter_sees_each_verification_batch_right_after_the_target(demo, monkeypatch):
    """llama.cpp's ``process`` hook: after the target decodes a round's batch [id_last, *draft]
    at n_past, before sampling, every drafter of the chain is handed that batch (drafters that
    read the target's own state, EAGLE-3 and MTP, need it there); and the prompt before, as
    speculative-simple hands it after its prompt decode."""
    from specscope.core.engine import engine as engine_module
    seen = []

    class Watcher(Drafter):
        name = "ngram-cache"          # any n-gram slot: it never drafts

        def draft(self, history, id_last, budget):
            return Proposal(self.name)

        def process(self, tokens, pos0):
            seen.append((tuple(tokens), pos0, demo.tgt.pos_max()))

    make_chain = engine_module.make_chain
    monkeypatch.setattr(engine_module, "make_chain",
                        lambda *a, **kw: Chain([Watcher(), *make_chain(*a, **kw).drafters]))
    run = demo.speculative(REPEATING, SpecSettings(n_max=3), SamplerSettings(), 40)
    events = list(run)
    assert seen[0] == (tuple(run.prompt_tokens[:-1]), 0, len(run.prompt_tokens) - 2)
    seen = seen[1:]
    assert [(ev.seed, *ev.drafted) for ev in events] == [t for t, _, _ in seen]
    assert [ev.n_past for ev in events] == [p for _, p, _ in seen]
    # the target's cache held the whole batch when the drafters saw it (nothing dropped yet)
    assert all(pos_max == pos0 + len(t) - 1 for t, pos0, pos_max in seen)
    assert any(ev.n_accepted < len(ev.drafted) for ev in events)


def test_ngram_types_need_no_draft_model_but_draft_simple_does():
    target, _ = demo_pair()
    with Engine(target, None, EngineSettings(n_ctx=256)) as engine:
        run = engine.speculative(REPEATING, SpecSettings(types=("ngram-simple",), own={"ngram-simple": SMALL}),
                                 SamplerSettings(), 24)
        assert len(list(run)) >= 1 and len(run.tokens) == 24
        with pytest.raises(ConfigError, match="draft-simple needs a draft model"):
            engine.speculative(REPEATING, SpecSettings(), SamplerSettings(), 8)


@pytest.mark.parametrize("spec, says", [
    (SpecSettings(types=("draft-simple", "ngram-simple")), "priority order"),
    (SpecSettings(types=("ngram-simple",), own={"ngram-simple": NgramMapParams(size_n=0)}),
     "ngram-simple size N must be between 1 and 1024"),
    (SpecSettings(types=("ngram-map-k4v",), own={"ngram-map-k4v": NgramMapParams(min_hits=0)}),
     "min hits must be at least 1"),
])
def test_bad_spec_settings_say_what_is_wrong(spec, says):
    with pytest.raises(ConfigError, match=says):
        spec.validate()


@pytest.mark.parametrize("args, says", [
    (["--spec-type", "ngram-fast"], "unknown speculative type: ngram-fast"),
    (["--spec-type", "ngram-mod", "--spec-ngram-mod-n-max", "2000"], "n-max must be between 0 and 1024"),
    (["--spec-type", "ngram-simple", "--spec-ngram-simple-size-m", "0"], "size M must be between 1"),
    (["--spec-type", "ngram-cache", "-lcs", "/nonexistent/static.bin"], "/nonexistent/static.bin"),
    (["-m", "TARGET", "--spec-type", "draft-simple"], "needs a draft model"),
])
def test_the_cli_says_one_line_and_exits_2(capsys, args, says):
    args = [demo_pair()[0].as_posix() if a == "TARGET" else a for a in args]
    code = cli_main(["run", "-n", "4", *args])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and says in err, err


def test_the_cli_runs_an_ngram_type_and_reports_it(capsys):
    code = cli_main(["run", "-n", "48", "-p", REPEATING, "--spec-type", "ngram-simple",
                     "--spec-ngram-simple-size-n", "2", "--spec-ngram-simple-size-m", "6"])
    out = capsys.readouterr().out
    assert code == 0
    line = next(l for l in out.splitlines() if l.strip().startswith("ngram-simple"))
    assert "drafts" in line and "accepted" in line
    assert "n-gram lookups:" in out


def test_ngram_simple_never_matches_at_position_0_and_needs_a_copy_of_n_tokens():
    # llama.cpp's backward search stops before position 0, and drops copies shorter than n
    p = NgramMapParams(size_n=2, size_m=2)
    h = np.array([4, 5, 1, 2, 3, 8, 4], dtype=np.int32)      # "4 5" occurs only at 0
    assert NgramSimple(p).draft(h, 5, 9).tokens == ()
    h = np.array([7, 4, 5, 1, 2, 3, 8, 4], dtype=np.int32)   # ... at 1: copies "1 2"
    assert NgramSimple(p).draft(h, 5, 9).tokens == (1, 2)
    h = np.array([7, 1, 2, 3, 9, 4, 4, 1], dtype=np.int32)   # "1 2" at 1: "3 9" follows
    assert NgramSimple(p).draft(h, 2, 9).tokens == (3, 9)
    h = np.array([7, 8, 9, 0, 1, 2, 1], dtype=np.int32)      # "1 2" at 4: only 1 token follows
    assert NgramSimple(p).draft(h, 2, 9).tokens == ()
