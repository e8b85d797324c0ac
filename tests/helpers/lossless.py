"""The target's own output, where a speculative run's batches may round differently."""

from __future__ import annotations

from specscope.core.measure.bench.lossless import check_lossless

NEAR_TIE = 0.01     # logits: F16's batched-vs-single drift is about 1e-4 (docs/determinism.md)


def assert_targets_output(engine, run, events, base) -> None:
    """``run`` (speculative, its ``events``) emitted ``base``'s tokens (the target alone), or
    parted from them first where the target's two tokens' logits lie within NEAR_TIE of each
    other on both sides and check_lossless reproduces each side's token from its own decodes
    (verdict "numerical"): F16 weights take other kernels in a batch, and which do depends on
    the CPU (AVX2, AVX-512, AVX512-FP16), so a CPU can turn a near tie the other way. A
    divergence anywhere else, or one check_lossless does not reproduce, fails."""
    if run.tokens == base.tokens:
        return
    report = check_lossless(engine, run.prompt_tokens, base.tokens, run.tokens, events)
    d = report.divergence
    assert report.verdict == "numerical", report.describe()
    assert abs(d.token_gap) < NEAR_TIE and abs(d.spec_token_gap) < NEAR_TIE, report.describe()
