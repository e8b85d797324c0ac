"""Drafting across vocabularies, measured (not a test; docs/cross-vocab.md).

    python tests/bench/bench_xvocab.py [--target T.gguf] [--draft D.gguf] [--modes translate,intersect]
                                       [--prompts 5] [-n 128] [--n-max 4] [-t THREADS]

Default pair: the demo target with the foreign-vocabulary demo draft. For each mode and each of
the first --prompts prompts of resources/prompts, greedy, deterministic settings: the target
alone, then the speculative run, compared token for token by the lossless check
(core/measure/bench/lossless.py, which names numerical near-ties). Printed per mode: the verdicts,
acceptance by draft position (target tokens), the translation's Python time per round, the
draft's cost (its llama.cpp time plus the translation) per drafted target token, and the
speed-up against the target alone (total tokens / total seconds of each side).
"""

from __future__ import annotations

import argparse
from itertools import zip_longest
from pathlib import Path

from specscope.core.engine.engine import Engine, EngineSettings, SpecSettings
from specscope.core.engine.sampling import SamplerSettings
from specscope.core.measure.bench.lossless import compare
from specscope.core.models.demo import DEMO_FOREIGN_DRAFT, models_dir, prompts_dir
from specscope.core.models.vocab_map import vocab_map


def _add(a: list, b) -> list:
    """Per-position counts summed over runs."""
    return [x + y for x, y in zip_longest(a, b, fillvalue=0)]


def measure(engine, mode: str, prompts: list[str], n: int, n_max: int) -> list[str]:
    spec = SpecSettings(n_max=n_max, vocab="auto" if mode == "same" else mode)
    verdicts, drafted_at, accepted_at = [], [], []
    t = dict(base=0.0, spec=0.0, draft=0.0, translate=0.0, n_base=0, n_spec=0, rounds=0,
             drafted=0, accepted=0)
    for prompt in prompts:
        c = compare(engine, prompt, spec, SamplerSettings(), n_predict=n)
        verdicts.append(c.lossless.verdict)
        b, s = c.baseline.stats, c.spec.stats
        drafted_at, accepted_at = _add(drafted_at, s.drafted_at), _add(accepted_at, s.accepted_at)
        for key, value in (("base", b.t_total), ("spec", s.t_total), ("draft", s.t_draft),
                           ("translate", s.t_translate), ("n_base", b.n_tokens),
                           ("n_spec", s.n_tokens), ("rounds", s.n_rounds),
                           ("drafted", s.n_drafted), ("accepted", s.n_accept)):
            t[key] += value
    per_pos = " ".join(f"{a / d:.2f}" for a, d in zip(accepted_at, drafted_at))
    speedup = (t["n_spec"] / t["spec"]) / (t["n_base"] / t["base"])
    drafted = max(1, t["drafted"])
    return [f"{mode}: lossless {', '.join(verdicts)}",
            f"  acceptance {100 * t['accepted'] / drafted:.1f}% ({t['accepted']}/{t['drafted']} "
            f"target tokens), by position {per_pos}",
            f"  translation {1e6 * t['translate'] / max(1, t['rounds']):.0f} µs per round; draft + "
            f"translation {1e6 * (t['draft'] + t['translate']) / drafted:.0f} µs per drafted "
            "target token",
            f"  speed-up {speedup:.2f}x against the target alone "
            f"({t['n_base'] / t['base']:.0f} tokens/s)"]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--target", type=Path, default=models_dir() / "demo-target.gguf")
    p.add_argument("--draft", type=Path, default=models_dir() / DEMO_FOREIGN_DRAFT)
    p.add_argument("--modes", default="translate,intersect",
                   help="comma-separated; 'same' for the draft in the target's vocabulary")
    p.add_argument("--prompts", type=int, default=5)
    p.add_argument("-n", type=int, default=128)
    p.add_argument("--n-max", type=int, default=4)
    p.add_argument("-t", "--threads", type=int, default=0)
    a = p.parse_args()
    prompts = [f.read_text(encoding="utf-8") for f in sorted(prompts_dir().glob("*.txt"))][:a.prompts]
    settings = EngineSettings.deterministic(target_threads=a.threads, draft_threads=a.threads)
    with Engine(a.target, a.draft, settings) as e:
        m = vocab_map(e.target, e.draft)
        print(f"{a.target.name} ({e.target.n_vocab:,} tokens) <- {a.draft.name} "
              f"({e.draft.n_vocab:,} tokens): {m.n_shared:,} shared "
              f"({100 * m.target_share:.1f}% of the target's, {100 * m.draft_share:.1f}% of the "
              f"draft's); llama.cpp: {e.vocab_refusal() or 'compatible'}")
        print(f"{len(prompts)} prompts x {a.n} tokens, greedy, n_max {a.n_max}")
        for mode in a.modes.split(","):
            print("\n".join(measure(e, mode, prompts, a.n, a.n_max)))


if __name__ == "__main__":
    main()
