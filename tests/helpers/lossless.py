"""The target's own output, where a speculative run's batches may round differently."""

from __future__ import annotations

from specscope.core.measure.bench.lossless import check_lossless


def assert_targets_output(engine, run, events, base) -> None:
    """``run`` (speculative, its ``events``) emitted ``base``'s tokens (the target alone), or
    parted from them only where the target's own logits nearly tie and its batched and
    single-token decodes round apart: F16 weights take other kernels in a batch, and which do
    depends on the CPU (AVX2, AVX-512, AVX512-FP16), so a CPU can turn a near tie the other way
    (docs/determinism.md). Any other divergence fails."""
    if run.tokens == base.tokens:
        return
    report = check_lossless(engine, run.prompt_tokens, base.tokens, run.tokens, events)
    assert report.verdict == "numerical", report.describe()
