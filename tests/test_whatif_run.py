"""One run's what-ifs as the window asks for them (core/measure/whatif/run.py), on a real greedy
run of the demo pair: each setting is the core's replay, made once; what cannot be replayed is
one line saying why; draft-simple and its ceiling wait for the draft's pass and a calibration."""

from dataclasses import replace

import pytest

from specscope.core.engine.engine import Engine, EngineSettings, SpecSettings
from specscope.core.engine.sampling import SamplerSettings
from specscope.core.errors import ConfigError
from specscope.core.measure.cost.model import Calibration
from specscope.core.measure.whatif.ngram import whatif
from specscope.core.measure.whatif.draft import draft_whatif
from specscope.core.measure.whatif.run import (RunWhatIfs, engine_draft_problem, spec_problem,
                                               trace_run)
from specscope.core.models.demo import demo_pair

PROMPT = "def add(a, b):\n    return a + b\n\ndef add(a, b):\n"
N, N_CTX = 64, 512
COSTS = tuple(1 + 0.4 * i for i in range(10))
CAL = Calibration(k_max=10, n_past=64, t1=1e-3, c_raw=COSTS, c=COSTS, f=0.1, f_batch=(0.1,) * 10, b=1.0)
DRAFT = SpecSettings(types=("draft-simple",))


@pytest.fixture(scope="module")
def run():
    target, draft = demo_pair()
    with Engine(target, draft, EngineSettings.deterministic(n_ctx=N_CTX)) as engine:
        base = engine.baseline(PROMPT, SamplerSettings(), N)
        list(base)
        wi = RunWhatIfs(tuple(base.prompt_tokens), tuple(base.tokens), N_CTX, N)
        yield engine, wi


def test_a_setting_is_the_core_s_replay_made_once(run):
    _, wi = run
    spec = SpecSettings(types=("ngram-simple", "ngram-mod"))
    w = wi.evaluate(spec)
    assert w is wi.evaluate(spec)
    core = whatif(spec, wi.prompt, wi.cont, n_ctx=N_CTX, n_predict=N)
    assert w.stats.position_acceptance == core.stats.position_acceptance and w.predicted is None


def test_what_is_not_replayed_says_why(run):
    engine, wi = run
    assert spec_problem(replace(DRAFT, types=("ngram-simple", "draft-simple")), cal=True) == ""
    assert "draft-eagle3 is not replayed" in spec_problem(replace(DRAFT, types=("draft-eagle3",)), cal=True)
    assert "calibrate first" in spec_problem(replace(DRAFT, draft_policy="cost"), cal=False)
    assert engine_draft_problem(engine) == ""
    fresh = RunWhatIfs(wi.prompt, wi.cont, N_CTX, N)
    with pytest.raises(ConfigError, match="wait for the draft's pass"):
        fresh.evaluate(DRAFT)
    assert fresh.ceiling() is None


def test_draft_simple_and_its_ceiling_from_one_pass_and_a_calibration(run):
    engine, wi = run
    trace = trace_run(engine, wi.prompt, wi.cont)
    assert trace.p_floor == 0.0 and trace.depth == 7      # the whole depth: cost reads every share
    wi.use(trace=trace)
    spec = replace(DRAFT, n_max=5, p_min=0.35)
    assert wi.evaluate(spec).stats.position_acceptance == \
        draft_whatif(trace, spec, n_ctx=N_CTX, n_predict=N).stats.position_acceptance
    assert wi.ceiling() is None                       # no calibration yet
    wi.use(cal=CAL)
    ceiling = wi.ceiling()
    assert [label for label, *_ in ceiling.bars][:9] == [f"n={n}" for n in range(1, 9)] + ["hf n≤8"]
    assert all(v <= ceiling.speedup + 1e-9 for _, v, _ in ceiling.bars)
    assert wi.evaluate(spec).predicted is not None
    with pytest.raises(ConfigError, match="another continuation"):
        wi.use(trace=replace(trace, cont=trace.cont[:-1]))
    # a draft that cannot roll on after a rejected token: cost reads the shares there too
    unrolled = RunWhatIfs(wi.prompt, wi.cont, N_CTX, N)
    unrolled.use(trace=replace(trace, tails={}, depth=0), cal=CAL)
    assert "cost policy reads the draft's confidence" in unrolled.problem(replace(DRAFT, draft_policy="cost"))
    assert unrolled.problem(replace(DRAFT, draft_policy="hf")) == ""
