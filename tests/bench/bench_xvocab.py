"""Drafting across vocabularies, measured (not a test; docs/cross-vocab.md).

    python tests/bench/bench_xvocab.py [--target T.gguf] [--draft D.gguf] [--modes translate,intersect]
                                       [--prompts 5] [-n 128] [--n-max 4] [-t THREADS]

Default pair: the demo target with the foreign-vocabulary demo draft. For each mode and each of
the first --prompts prompts of resources/prompts, greedy, deterministic settings: the target
alone, then the speculative run, compared token for token by the lossless check
(core/measure/lossless.py, which names numerical near-ties). Printed per mode: the verdicts,
acceptance by draft position (target tokens), the translation's Python time per round, the
draft's cost (its llama.cpp time plus the translation) per drafted target token, and the
speed-up against the target alone (total tokens / total seconds of each side).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from specscope.core.engine.engine import Engine, EngineSettings, SpecSettings
from specscope.core.engine.sampling import SamplerSettings
from specscope.core.measure.lossless import compare
from specscope.core.measure.stats import fold
from specscope.core.models.demo import DEMO_FOREIGN_DRAFT, models_dir, prompts_dir
from specscope.core.models.vocab_map import vocab_map


def measure(engine, mode: str, prompts: list[str], n: int, n_max: int) -> list[str]:
    spec = SpecSettings(n_max=n_max, vocab=mode)
    verdicts, events, t_base, t_spec, n_base, n_spec = [], [], 0.0, 0.0, 0, 0
    for prompt in prompts:
        c = compare(engine, prompt, spec, SamplerSettings(), n_predict=n)
        verdicts.append(c.lossless.verdict)
        run = engine.speculative(prompt, spec, SamplerSettings(), n)   # its events, for the figures
        events += list(run)
        t_base += c.baseline.stats.t_total
        n_base += c.baseline.stats.n_tokens
        t_spec += c.spec.stats.t_total
        n_spec += c.spec.stats.n_tokens
    s = fold(events)
    rounds = max(1, s.n_rounds)
    drafted = max(1, s.n_drafted)
    per_pos = " ".join(f"{p:.2f}" for p in s.position_acceptance)
    speedup = (n_spec / t_spec) / (n_base / t_base) if t_spec and t_base else 0.0
    return [f"{mode or 'same vocabulary'}: lossless {', '.join(verdicts)}",
            f"  acceptance {100 * s.acceptance_rate:.1f}% ({s.n_accept}/{s.n_drafted} target tokens), "
            f"by position {per_pos}",
            f"  translation {1e6 * s.t_translate / rounds:.0f} µs per round; draft + translation "
            f"{1e6 * (s.t_draft + s.t_translate) / drafted:.0f} µs per drafted target token",
            f"  speed-up {speedup:.2f}x against the target alone ({n_base / t_base:.0f} tokens/s)"]


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
            print("\n".join(measure(e, "" if mode == "same" else mode, prompts, a.n, a.n_max)))


if __name__ == "__main__":
    main()
