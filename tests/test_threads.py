"""core.threads: the thread count measured per context (the window's "auto")."""

from specscope.core.models.llama import Batch, Context, ContextSettings, Model
from specscope.core.measure.threads import candidates, fastest_threads


def test_candidates():
    assert candidates(1) == (1,)
    assert candidates(2) == (2, 1)
    assert candidates(8) == (8, 7, 4)


def test_fastest_threads_picks_a_candidate_and_leaves_the_context_clean(tiny_models):
    model = Model(tiny_models["target"])
    ctx = Context(model, ContextSettings(n_ctx=128, n_threads=2))
    try:
        best, medians = fastest_threads(ctx, (2, 1), budget_s=0.05)
        assert best in (2, 1)
        assert medians and set(medians) <= {1, 2} and best == min(medians, key=medians.get)
        assert all(v > 0 for v in medians.values())
        assert ctx.pos_max() == -1                      # memory cleared for the run's prefill
        with Batch(4) as batch:                         # a context that holds a run's tokens
            batch.fill([1, 2, 3], 0)
            ctx.decode(batch, "test")
        assert fastest_threads(ctx, (2, 1), budget_s=0.05)[0] in (2, 1)
        best, medians = fastest_threads(ctx, (1,))
        assert best == 1 and set(medians) == {1}
    finally:
        ctx.close()
        model.close()
