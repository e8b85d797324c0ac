"""SpecScope's drafters driven by an oracle target: the Python twin of
tests/reference/drafter_oracle.cpp (llama.cpp's own chain under the same loop).

With a greedy target the emitted sequence does not depend on the drafts, so a round's
accepted count is the common prefix of its draft and the continuation. ``oracle_rounds``
replays llama-speculative-simple's loop (budget, draft, accept, history) on a given prompt and
continuation and returns (accepted, drafted, draft tokens) per round, up to the round whose
budget is 0 (where SpecScope's engine stops: a deliberate difference, engine module docs).
"""

from __future__ import annotations

import numpy as np

from specscope.core.engine.drafters import Chain


def oracle_rounds(chain: Chain, prompt: list[int], cont: list[int], n_ctx: int = 4096,
                  n_predict: int = 1 << 30) -> list[tuple[int, int, tuple[int, ...]]]:
    hist = np.zeros(len(prompt) + len(cont) + 1, dtype=np.int32)
    hist[:len(prompt) - 1] = prompt[:-1]
    n_past, id_last, done, pos = len(prompt) - 1, prompt[-1], 0, 0
    chain.begin(hist[:n_past])
    rounds = []
    while pos < len(cont):
        budget = max(0, min(n_ctx - n_past - 2, n_predict - done - 1))
        if budget <= 0:      # SpecScope's run ends here (llama.cpp drafts on, unbounded)
            break
        draft = chain.draft(hist[:n_past], id_last, budget).tokens
        acc = 0
        while acc < len(draft) and pos + acc < len(cont) and draft[acc] == cont[pos + acc]:
            acc += 1
        if pos + acc >= len(cont):
            break
        chain.accept(acc)
        rounds.append((acc, len(draft), tuple(draft)))
        ids = cont[pos:pos + acc + 1]
        hist[n_past:n_past + len(ids)] = [id_last, *ids[:-1]]
        id_last = ids[-1]
        pos += len(ids)
        n_past += len(ids)
        done += len(ids)
        if done > n_predict:
            break
    return rounds
