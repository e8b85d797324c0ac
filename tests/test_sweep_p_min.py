"""A sweep over draft-simple's p_min (llama.cpp's --draft-p-min): each value is a configuration
of its own, and the calibrated model charges the draft decodes that proposed no token."""

from pathlib import Path

import pytest

from specscope.core.measure.cost.model import Calibration, model_speedup, round_cost
from specscope.core.models.demo import demo_pair
from specscope.core.engine.engine import EngineSettings
from specscope.core.errors import ConfigError
from specscope.core.measure.bench.sweep import run_sweep
from specscope.core.measure.bench.report import format_table
from specscope.core.measure.bench.settings import SweepSettings, parse_p_values


def test_p_values_parse_like_the_draft_lengths():
    assert parse_p_values("0.75, 0,0.5,0.5") == (0.0, 0.5, 0.75)
    for bad in ("", "x", "1.5", "-0.1"):
        with pytest.raises(ConfigError, match="p_min values"):
            parse_p_values(bad)


def test_the_model_charges_decodes_that_proposed_nothing():
    c = (1.0, 1.6, 2.0, 2.3)
    cal = Calibration(k_max=4, n_past=64, t1=1e-3, c_raw=c, c=c, f=0.2, f_batch=(0.25,) * 4,
                      s=0.01, o_base=0.02, o0=0.1, o1=0.05, r=0.01, b=0.8, k_draft=4)
    a = (0.7, 0.5, 0.3)
    rc = round_cost(cal, 3, a, "reuse", n_draft=3.0, p_full=0.3)
    plain = model_speedup(cal, 3, a, "reuse", 3.0, 0.3, draft_rounds=10, empty_rounds=0, extra_decodes=0)
    assert plain == pytest.approx(rc.speedup)
    # 4 rounds whose first draft token fell below p_min: one draft decode, one target token
    # each; 6 more rows p_min stopped at in the drafted rounds
    both = model_speedup(cal, 3, a, "reuse", 3.0, 0.3, draft_rounds=10, empty_rounds=4, extra_decodes=10)
    cost = 10 * rc.total + 4 * (1.0 + 0.01 + 0.01 + 0.1) + 10 * 0.2
    assert both == pytest.approx((10 * rc.tokens + 4) * rc.baseline / cost)


def test_a_p_min_sweep_runs_each_value_as_a_configuration(quiet_machine):
    t, d = demo_pair()
    s = SweepSettings(target=Path(t), drafts=(Path(d),), n_values=(3,), p_min_values=(0.0, 0.9),
                      prompts=(("p", "The quick brown fox"),), n_predict=24, ignore_eos=True,
                      engine=EngineSettings(target_threads=1, draft_threads=1), calibration_s=0.3)
    result = run_sweep(s)
    rows = {r.p_min: r for r in result.pooled()}
    assert set(rows) == {0.0, 0.9}
    assert rows[0.0].config == "draft-simple (demo-draft.gguf)"
    assert rows[0.9].config == "draft-simple (demo-draft.gguf) · p_min 0.9"
    runs = {c.p_min: c.spec for c in result.cells}
    assert sum(r.extra_draft_decodes for r in runs[0.0]) == 0
    assert sum(r.extra_draft_decodes for r in runs[0.9]) > 0      # p_min stopped some drafts
    assert rows[0.9].mean_accepted_length > 1.0 or rows[0.9].draft_rounds == 0
    assert "draft-simple (demo-draft.gguf) · p_min 0.9" in format_table(result)
    assert set(result.best_n()) == {"draft-simple (demo-draft.gguf)", "draft-simple (demo-draft.gguf) · p_min 0.9"}


def test_bench_takes_a_list_of_p_min(capsys):
    from specscope.core.cli.main import main
    assert main(["bench", "-n", "8", "--spec-draft-n-max", "2", "--spec-draft-p-min", "0,2",
                 "-p", "def f(x):"]) == 2
    assert "p_min values must lie in [0, 1]" in capsys.readouterr().err
