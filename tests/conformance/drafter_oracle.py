"""SpecScope's drafters driven by an oracle target: the Python twin of
tests/reference/drafter_oracle.cpp (llama.cpp's own chain under the same loop).

With a greedy target the emitted sequence does not depend on the drafts, so a round's
accepted count is the common prefix of its draft and the continuation. The loop is the
what-if replay's (core/measure/whatif/ngram.py ``replay``); ``oracle_rounds`` returns its
(accepted, drafted, draft tokens) per round as llama.cpp's oracle prints them: the rounds whose
own token lies inside the continuation, up to the round whose budget is 0 (where SpecScope's
engine stops: a deliberate difference, engine module docs).
"""

from __future__ import annotations

from itertools import takewhile

from specscope.core.engine.drafters import Chain
from specscope.core.measure.whatif.ngram import replay


def oracle_rounds(chain: Chain, prompt: list[int], cont: list[int], n_ctx: int = 4096,
                  n_predict: int = 1 << 30) -> list[tuple[int, int, tuple[int, ...]]]:
    rounds = replay(chain, prompt, cont, n_ctx=n_ctx, n_predict=n_predict)
    return [(r.accepted, len(r.draft), r.draft)
            for r in takewhile(lambda r: r.budget > 0, rounds) if r.complete]
