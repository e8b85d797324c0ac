"""Measured speed-up and the lossless check: a baseline and a speculative run side by side.

Measured speed-up
    Both runs use the same prompt, sampler, n_predict and engine settings. Only
    generation is timed (``Stats.t_total``: the rounds' wall time); prompt
    processing is reported separately (``prefill_s``). speed-up = speculative
    tokens/s ÷ baseline tokens/s.

Lossless check
    Speculative decoding with llama.cpp's acceptance rule emits exactly the
    target sampler's tokens (common/sampling.cpp), so the two token lists should be
    equal. They can still differ through *numerics*: a verification batch is a
    batched decode, the baseline decodes one token at a time, and the two do not
    give bit-identical logits (flash attention, an F16 KV cache, quantized
    weights; see docs/determinism.md). On a divergence the check reports the
    position, both tokens and the target's logits there, recomputed twice:

    * ``baseline`` side: the prompt and the agreed tokens decoded one token at a
      time, exactly as the baseline run decoded them;
    * ``speculative`` side: the target's verification batches of the
      speculative run replayed from its round events, which reproduces the
      batched numerics the speculative run saw.

    The verdict comes from reproducing the divergence, not from a threshold on the logits: the
    diverging position is decoded on the target twice, once as the baseline decoded it and
    once in the speculative run's own verification batch (same positions, same batch size:
    ``spec_logits_at``), and each side's row goes through the sampler chain's transforms
    (logit bias, penalties, grammar; :func:`candidates`).

    * Greedy runs: the divergence is **numerical** when the batched row picks the speculative
      token and the one-token row the baseline's: the kernels that decode a batch and a single
      token (K-quant and sgemm paths switch with the batch size, flash attention's single-token
      path) moved a near-tie, and llama.cpp's own speculative program shares that. Both rows'
      logits for both tokens are reported.
    * Sampled runs: llama.cpp's ``dist`` sampler draws one uniform number u per emitted token
      (``std::mt19937`` seeded with the sampler's seed, so the draw for generated token i is
      the i-th draw in both runs) and walks the candidates left after the chain's transforms
      until their running probability reaches u (:func:`dist_draw`). The divergence is
      **numerical** when u picks the baseline's token from the one-token row and the
      speculative run's token from the batched one (the size of the region of u where the two
      rows pick different tokens is reported).

    Anything else is a **mismatch**: the speculative run emitted a token that its own batched
    decode does not give, an engine bug; the report says so and keeps the evidence (both
    rows' best tokens and logits). See ``DETERMINISTIC_GUARANTEE`` for what the
    deterministic-numerics settings (``EngineSettings.deterministic()``: F32 KV cache, flash
    attention off) guarantee.
"""

from __future__ import annotations

import ctypes
import threading
from dataclasses import dataclass
from typing import Sequence

import llama_cpp.llama_cpp as ll
import numpy as np

from specscope.core.engine.events import RoundEvent
from specscope.core.engine.sampling import SamplerSettings, build_chain
from specscope.core.measure.stats import Stats, fold, speedup_of
from specscope.core.models.seqs import SeqBatch, keep_branch, row_logits, seq_cp, seq_keep, seq_rm

TOP_EVIDENCE = 5              # a mismatch keeps each side's best tokens and their logits
# What --deterministic (EngineSettings.deterministic(): F32 KV cache, flash attention off)
# guarantees, measured with this llama.cpp build on an x86 AVX2 CPU (docs/determinism.md: "When
# speculative output equals the baseline's"). The CLI help and the window's tooltip show it.
DETERMINISTIC_GUARANTEE = (
    "F32 KV cache and flash attention off. Measured on x86 AVX2: one-token and batched logits of "
    "Q4_0, Q4_1 and Q8_0 models are then bit-identical while the context holds at most 256 tokens "
    "(flash attention's single-token split-KV path alone moves them ~1% past 256 tokens with 2+ "
    "threads); past 256 tokens the attention's products over the cache still differ by up to ~1% "
    "(SmolLM2 Q4_1), and F32 weights by ~1e-7, F16 by ~1e-4 at any length (llama.cpp multiplies one "
    "token with vec_dot, a batch with llamafile's sgemm; K-quants switch kernels at 8 tokens). So "
    "speculative output equals the baseline's up to near-ties, other CPUs (AVX-512, AMX, ARM) may "
    "differ more, and specscope bench reproduces a divergence to say whether numerics explain it")
DETERMINISTIC_HINT = ("rerun with --deterministic (F32 KV cache, flash attention off), which removes "
                      "flash attention's single-token path; batch-size-dependent matmul kernels remain "
                      "(see --help)")


# ============================================================================ results

@dataclass(frozen=True)
class RunResult:
    """What one run left behind (plain data; no llama.cpp handle)."""
    kind: str                          # "baseline" | "spec"
    tokens: tuple[int, ...]
    stats: Stats
    prefill_s: float
    finish: str
    n_full: int = 0                    # rounds that accepted their whole draft
    n_max: int = 0
    # draft-simple's decodes beyond the tokens it proposed: the row of a token stopped by
    # p_min, and drafts dropped for n_min (their rows were decoded all the same)
    extra_draft_decodes: int = 0
    empty_rounds: int = 0              # rounds that verified no draft (one target token)
    idle_drafts: int = 0               # of them, those whose model drafter decoded and proposed
                                       # nothing (p_min at its first token, n_min): a DFlash
                                       # head paid its block
    tree_nodes: int = 0                # trees: the tokens they verified (each round's batch
    tree_steps: int = 0                # less the root) and the draft's decodes that drafted them
    batch_tokens: int = 0              # the tokens its own loop's batches held (RoundEvent.shape)

    @property
    def tokens_per_s(self) -> float:
        return self.stats.tokens_per_s

    def to_dict(self) -> dict:
        return {"kind": self.kind, "n_max": self.n_max, "tokens": list(self.tokens),
                "prefill_s": self.prefill_s, "finish": self.finish, "n_full": self.n_full,
                "stats": self.stats.to_dict()}


@dataclass(frozen=True)
class Divergence:
    position: int                      # index into the generated tokens (0 = first generated)
    baseline_token: int | None         # None: that run had ended
    spec_token: int | None
    baseline_text: str = ""
    spec_text: str = ""
    top1: int = -1                     # the baseline side's two best tokens there
    top2: int = -1
    top2_gap: float = float("nan")     # logit(top1) - logit(top2), baseline side
    token_gap: float = float("nan")    # logit(baseline token) - logit(spec token), baseline side
    spec_token_gap: float = float("nan")  # the same difference in the speculative side's logits
    kind: str = "mismatch"             # "numerical" | "mismatch" | "length"
    # the two rows after the sampler chain's transforms: (token, logit) of their best tokens
    baseline_top: tuple[tuple[int, float], ...] = ()   # one token at a time, as the baseline
    spec_top: tuple[tuple[int, float], ...] = ()       # in the speculative round's batch
    # sampled runs: the dist sampler's draw u for this token and what it picks on each side
    draw: float = float("nan")
    draw_baseline_pick: int = -1       # the token u picks from the single-token distribution
    draw_spec_pick: int = -1           # ... from the batched one (-1: not recomputed)
    baseline_share: tuple[float, float] | None = None   # the draws that pick the baseline token there
    spec_share: tuple[float, float] | None = None       # the draws that pick the speculative token (batched)
    disagreement: float = float("nan")  # share of all draws for which the two distributions differ

    def describe(self) -> str:
        if self.kind == "length":
            return (f"the outputs agree for {self.position} tokens, then one run ended "
                    f"(baseline {'ended' if self.baseline_token is None else repr(self.baseline_text)}, "
                    f"speculative {'ended' if self.spec_token is None else repr(self.spec_text)})")
        head = (f"diverged at generated token {self.position}: baseline {self.baseline_token} "
                f"{self.baseline_text!r}, speculative {self.spec_token} {self.spec_text!r}; ")
        if not np.isnan(self.draw):
            return head + self._describe_draw()
        if not self.spec_top:
            return head + ("the speculative run's rounds do not reach this token, so its batch "
                           "could not be decoded again — a mismatch")
        logits = (f"the two tokens' logits differ by {self.token_gap:+.4f} one token at a time (as "
                  f"the baseline decoded) and by {self.spec_token_gap:+.4f} in the speculative "
                  f"round's batch; top-2 gap {self.top2_gap:.4f}")
        if self.kind == "numerical":
            return (head + f"decoded again, the batch picks the speculative token and the single "
                    f"token the baseline's: {logits} — numerical (batched and one-token kernels "
                    f"differ, and a tree's cache keeps its cells out of position order; "
                    f"llama.cpp's own speculative programs do the same)")
        best = ", ".join(f"{t} ({x:.4f})" for t, x in self.spec_top[:3])
        return (head + f"decoded again in the speculative round's batch, the target picks "
                f"{self.spec_top[0][0]}, not the speculative token ({logits}; the batch's best: "
                f"{best}) — a mismatch: SpecScope emitted a token its target did not choose, an "
                f"engine bug")

    def _describe_draw(self) -> str:
        def share(s):
            return "none" if s is None else f"[{s[0]:.5f}, {s[1]:.5f}]"
        text = (f"the sampler's draw u = {self.draw:.5f} picks {self.draw_baseline_pick} from the "
                f"single-token distribution (baseline token's share {share(self.baseline_share)})")
        if self.draw_spec_pick >= 0:
            text += (f" and {self.draw_spec_pick} from the batched one (speculative token's share "
                     f"{share(self.spec_share)}); the two distributions pick different tokens for "
                     f"{100 * self.disagreement:.3f}% of draws")
        else:
            text += f"; the speculative token's share there is {share(self.spec_share)}"
        if self.kind == "numerical":
            return text + " — a numerical divergence: the draw fell where the two distributions disagree"
        if self.draw_baseline_pick != self.baseline_token:
            return text + (" — a real mismatch (the draw does not reproduce the baseline's own token: "
                           "a sampler state the check cannot rebuild?)")
        return text + " — a real mismatch: both distributions pick the baseline's token for this draw"

    def to_dict(self) -> dict:
        d = {k: getattr(self, k) for k in self.__dataclass_fields__}
        for k in ("top2_gap", "token_gap", "spec_token_gap", "draw", "disagreement"):
            d[k] = None if np.isnan(d[k]) else float(d[k])
        for k in ("baseline_share", "spec_share"):
            d[k] = None if d[k] is None else [float(x) for x in d[k]]
        for k in ("baseline_top", "spec_top"):
            d[k] = [[int(t), float(x)] for t, x in d[k]]
        return d


@dataclass(frozen=True)
class LosslessReport:
    identical: bool
    n_compared: int                    # tokens compared (the shorter output)
    divergence: Divergence | None = None
    deterministic: bool = False        # the engine ran with F32 KV and flash attention off

    @property
    def verdict(self) -> str:
        if self.identical:
            return "identical"
        return self.divergence.kind if self.divergence else "mismatch"

    def describe(self) -> str:
        if self.identical:
            return f"identical ({self.n_compared} tokens)"
        text = self.divergence.describe()
        if not self.deterministic:
            text += "; " + DETERMINISTIC_HINT
        return text

    def to_dict(self) -> dict:
        return {"identical": self.identical, "verdict": self.verdict, "n_compared": self.n_compared,
                "deterministic": self.deterministic,
                "divergence": self.divergence.to_dict() if self.divergence else None}


@dataclass(frozen=True)
class Comparison:
    """A baseline and a speculative run of the same prompt and settings."""
    prompt: str
    baseline: RunResult
    spec: RunResult
    lossless: LosslessReport | None = None

    @property
    def speedup(self) -> float:
        return speedup_of(self.spec.tokens_per_s, self.baseline.tokens_per_s) or 0.0


# ============================================================================ pure helpers

def first_divergence(a: Sequence[int], b: Sequence[int]) -> int | None:
    """The first index where the two token lists differ (a length difference counts), or None."""
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return i
    if len(a) != len(b):
        return min(len(a), len(b))
    return None


def is_deterministic(settings) -> bool:
    return getattr(settings, "kv_type", "") == "f32" and getattr(settings, "flash_attn", "") == "off"


def classify(baseline: DistRow, spec: DistRow, baseline_token: int, spec_token: int) -> dict:
    """Kind and figures of a greedy run's divergence (module docs), as Divergence fields: numerical
    when the batched row picks the speculative token and the one-token row the baseline's."""
    numerical = baseline.best() == baseline_token and spec.best() == spec_token
    return {"kind": "numerical" if numerical else "mismatch",
            "token_gap": baseline.logit(baseline_token) - baseline.logit(spec_token),
            "spec_token_gap": spec.logit(baseline_token) - spec.logit(spec_token),
            "baseline_top": baseline.top(), "spec_top": spec.top()}


def mt19937_words(seed: int, n: int) -> list[int]:
    """The first ``n`` outputs of C++'s ``std::mt19937(seed)`` (the dist sampler's engine)."""
    mt = [seed & 0xFFFFFFFF]
    for i in range(1, 624):
        mt.append((1812433253 * (mt[-1] ^ (mt[-1] >> 30)) + i) & 0xFFFFFFFF)
    out: list[int] = []
    while len(out) < n:
        for i in range(624):
            y = (mt[i] & 0x80000000) | (mt[(i + 1) % 624] & 0x7FFFFFFF)
            mt[i] = mt[(i + 397) % 624] ^ (y >> 1) ^ (0x9908B0DF if y & 1 else 0)
        for y in mt[:n - len(out)]:
            y ^= y >> 11
            y ^= (y << 7) & 0x9D2C5680
            y ^= (y << 15) & 0xEFC60000
            out.append(y ^ (y >> 18))
    return out


def dist_draw(seed: int, index: int) -> float:
    """The u that llama.cpp's dist sampler drew for its ``index``-th token:
    ``std::uniform_real_distribution<double>(0, 1)`` over ``std::mt19937(seed)``, which
    (libstdc++ and libc++ ``generate_canonical``) takes two 32-bit words: (w0 + w1·2³²) / 2⁶⁴."""
    w0, w1 = mt19937_words(seed, 2 * index + 2)[-2:]
    u = (float(w0) + float(w1) * 4294967296.0) / 18446744073709551616.0
    return u if u < 1.0 else float(np.nextafter(1.0, 0.0))


@dataclass(frozen=True)
class DistRow:
    """One logits row after the sampler chain's transforms, in the order llama.cpp's dist
    sampler walks it, with its running sum of exp(logit − max) (float32 terms summed in
    double, as ``llama_sampler_dist_apply`` sums them)."""
    ids: np.ndarray
    cum: np.ndarray
    logits: np.ndarray

    @classmethod
    def from_logits(cls, ids, logits, is_sorted: bool) -> "DistRow":
        logits = np.asarray(logits, dtype=np.float32)
        top = logits[0] if is_sorted else logits.max()
        p = np.exp(logits - top, dtype=np.float32)
        return cls(np.asarray(ids, dtype=np.int64), np.cumsum(p.astype(np.float64)), logits)

    def best(self) -> int:
        """The token the greedy sampler picks: the first of the highest logits."""
        return int(self.ids[int(np.argmax(self.logits))])

    def logit(self, token: int) -> float:
        where = np.flatnonzero(self.ids == token)
        return float(self.logits[where[0]]) if len(where) else float("-inf")

    def top(self, n: int = TOP_EVIDENCE) -> tuple[tuple[int, float], ...]:
        order = np.argsort(-self.logits, kind="stable")[:n]
        return tuple((int(self.ids[i]), float(self.logits[i])) for i in order)

    def index(self, u: float) -> int:
        """The candidate a draw u selects: the first whose running sum reaches u·total."""
        return min(int(np.searchsorted(self.cum, self.cum[-1] * u, side="left")), len(self.ids) - 1)

    def pick(self, u: float) -> int:
        return int(self.ids[self.index(u)])

    def share(self, token: int) -> tuple[float, float] | None:
        """The draws (an interval of u) that select ``token``, or None when it is not a candidate."""
        where = np.flatnonzero(self.ids == token)
        if not len(where):
            return None
        i = int(where[0])
        return (float(self.cum[i - 1] / self.cum[-1]) if i else 0.0, float(self.cum[i] / self.cum[-1]))


def disagreement(a: DistRow, b: DistRow) -> float:
    """The share of all draws u in [0, 1) for which the two rows pick different tokens."""
    edges = np.unique(np.concatenate([[0.0, 1.0], a.cum / a.cum[-1], b.cum / b.cum[-1]]))
    edges = edges[(edges >= 0.0) & (edges <= 1.0)]
    mids = (edges[:-1] + edges[1:]) / 2
    picks_a = a.ids[np.minimum(np.searchsorted(a.cum / a.cum[-1], mids, side="left"), len(a.ids) - 1)]
    picks_b = b.ids[np.minimum(np.searchsorted(b.cum / b.cum[-1], mids, side="left"), len(b.ids) - 1)]
    return float(np.diff(edges)[picks_a != picks_b].sum())


def classify_sampled(baseline: DistRow, spec: DistRow, u: float, baseline_token: int,
                     spec_token: int) -> dict:
    """Kind and figures of a sampled run's divergence (see the module docs), as Divergence fields."""
    b_pick, s_pick = baseline.pick(u), spec.pick(u)
    numerical = b_pick == baseline_token and s_pick == spec_token
    return {"draw": u, "draw_baseline_pick": b_pick, "baseline_share": baseline.share(baseline_token),
            "draw_spec_pick": s_pick, "spec_share": spec.share(spec_token),
            "disagreement": disagreement(baseline, spec), "kind": "numerical" if numerical else "mismatch",
            "baseline_top": baseline.top(), "spec_top": spec.top()}


def run_result(kind: str, run, events: list[RoundEvent], n_max: int = 0) -> RunResult:
    n_full = sum(1 for ev in events if ev.drafted and ev.n_accepted == len(ev.drafted))
    extra = sum((ev.draft_stop == "p_min") + ev.dropped_draft for ev in events)
    empty = sum(1 for ev in events if not ev.drafted and ev.mode in ("spec", "plain"))
    idle = sum(1 for ev in events if not ev.drafted and ev.draft_stop in ("p_min", "n_min"))
    trees = [ev.tree for ev in events if ev.tree is not None]
    return RunResult(kind, tuple(run.tokens), fold(events), run.prefill.seconds if run.prefill else 0.0,
                     run.finish, n_full, n_max, extra, empty, idle,
                     sum(t.nodes for t in trees), sum(t.steps for t in trees),
                     sum(ev.batch_size for ev in events if ev.shape is not None))


# ============================================================================ with an engine

def execute(run) -> list[RoundEvent]:
    return list(run)


def dist_row(engine, sampler, row: np.ndarray, history: Sequence[int]) -> DistRow:
    """``row`` after the target's sampler chain without its final dist sampler, applied by
    llama.cpp itself (logit bias, penalties and grammar having accepted ``history``)."""
    with build_chain(engine.target, sampler) as chain:
        last = ll.llama_sampler_chain_n(chain.ptr) - 1
        ll.llama_sampler_free(ll.llama_sampler_chain_remove(chain.ptr, last))   # the dist sampler
        for token in history:
            chain.accept(token)
        n = len(row)
        data = (ll.llama_token_data * n)()
        view = np.ctypeslib.as_array(ctypes.cast(data, ctypes.POINTER(ctypes.c_int32)), shape=(3 * n,))
        view[0::3] = np.arange(n, dtype=np.int32)
        view.view(np.float32)[1::3] = np.asarray(row, dtype=np.float32)
        arr = ll.llama_token_data_array(data, n, -1, False)
        ll.llama_sampler_apply(chain.ptr, ctypes.byref(arr))
        size = int(arr.size)
        ids = view[0:3 * size:3].copy()
        logits = view.view(np.float32)[1:3 * size:3].copy()
        return DistRow.from_logits(ids, logits, bool(arr.sorted))


def baseline_logits_at(engine, prompt_tokens: Sequence[int], generated: Sequence[int]) -> np.ndarray:
    """The target's logits for generated token ``len(generated)``, computed the baseline's way:
    the prompt but its last token as a batch, then one token at a time."""
    tgt, batch = engine.tgt, engine.batch
    with engine.exclusive("a lossless check"):
        body = list(prompt_tokens[:-1])
        tgt.prefill(body, batch, "the prompt (lossless check)")
        pos = len(body)
        for token in [prompt_tokens[-1], *generated]:
            batch.fill((token,), pos, logits="all")
            tgt.decode(batch, "a token (lossless check)")
            pos += 1
        row = np.array(tgt.logits(1)[0], dtype=np.float64)
        tgt.clear()
    return row


def spec_logits_at(engine, prompt_tokens: Sequence[int], events: Sequence[RoundEvent],
                   index: int, before: Sequence[tuple] = (), reused: int = 0) -> np.ndarray | None:
    """The target's logits for generated token ``index`` as the speculative run computed them:
    its verification batches decoded again from the round events, the same tokens at the same
    positions in batches of the same size. A checkpoint round's batch was undone by its restore
    and its tokens verified again by the replay round after it, so it is decoded only when it
    decided the token (the run's last round); a replay round decides only the tokens after the
    replayed ones. None when the events do not reach that token.

    A conversation's later turn kept ``reused`` rows of the cache its turns ``before`` left
    ((prompt_tokens, reused, events) each, core/session/conversation.py): they are replayed
    first, each cut back and prefilled as it was, so the rows it kept hold the same numbers."""
    tgt, batch = engine.tgt, engine.batch
    with engine.exclusive("a lossless check"):
        for prompt_b, reused_b, events_b in before:
            _replay(tgt, batch, prompt_b, reused_b, events_b)
        row = _replay(tgt, batch, prompt_tokens, reused, events,
                      len(prompt_tokens) - 1 + index)    # the row whose logits give token index
        tgt.clear()
    return row


def _replay(tgt, batch, prompt_tokens, reused: int, events, target_pos: int = -1):
    """A run's decodes again on the target (spec_logits_at): its prompt (the first ``reused``
    rows kept), then its rounds; the logits row at ``target_pos`` when a round decides it."""
    tgt.prefill(list(prompt_tokens[:-1]), batch, "the prompt (lossless check)", keep=reused)
    for ev in events:
        if ev.shape is not None and ev.shape.rows:
            row = _replay_wide(tgt, ev, target_pos)
            if row is not None:
                return row
            continue
        tokens = [ev.seed, *ev.replayed, *ev.drafted]
        first = len(ev.replayed)                     # the batch rows this round decided
        decided = ev.n_past + first <= target_pos < ev.n_past + first + len(ev.emitted)
        if ev.mode == "checkpoint" and not decided:
            continue
        batch.fill(tokens, ev.n_past, logits="all")
        tgt.decode(batch, "a verification batch (lossless check)")
        if decided:
            return np.array(tgt.logits(len(tokens))[target_pos - ev.n_past], dtype=np.float64)
        kept = ev.n_past + first + len(ev.emitted)
        if kept < ev.n_past + len(tokens):
            tgt.seq_rm(kept, -1)
    return None


def _replay_wide(tgt, ev, target_pos: int):
    """A round of several sequences again (its ``shape``: the rows its own loop decoded), in the
    same order, each row in the same sequences with the same logits flag, so the cache's cells
    fall where they fell, then what the round kept; the logits row at ``target_pos`` when the
    round decides it, else None."""
    shape, n_past = ev.shape, ev.n_past
    seqs = sorted({s for r in shape.rows for s in r[3:]})
    seq_keep(tgt, 0)
    for s in seqs[1:]:
        seq_cp(tgt, 0, s)
    tb = SeqBatch(len(shape.rows), max(seqs) + 1)
    try:
        for token, depth, logits, *in_seqs in shape.rows:
            tb.add(token, n_past + depth, in_seqs, bool(logits))
        tgt.decode(tb, "a wide verification batch (lossless check)")
        depth = target_pos - n_past
        if 0 <= depth < len(ev.emitted):
            return np.array(row_logits(tgt, shape.deciding_row(ev.emitted, depth)), dtype=np.float64)
    finally:
        tb.close()
    after = n_past + len(ev.emitted)
    if shape.trims:                         # rows past the round's in every sequence
        seq_rm(tgt, -1, after, -1)
    keep_branch(tgt, shape.kept_seq(), after)   # the kept branch (or n-gram) becomes sequence 0
    return None


def check_lossless(engine, prompt_tokens: Sequence[int], baseline_tokens: Sequence[int],
                   spec_tokens: Sequence[int], spec_events: Sequence[RoundEvent], *,
                   sampler=None, before: Sequence[tuple] = (), reused: int = 0) -> LosslessReport:
    """Compare the two runs' tokens through the end of generation; on a divergence, decode the
    position again both ways and let the target decide (module docs). ``before``, ``reused``: a
    conversation's turn, replayed on the rows it kept (``spec_logits_at``)."""
    sampler = sampler or SamplerSettings()
    deterministic = is_deterministic(engine.settings)
    pos = first_divergence(baseline_tokens, spec_tokens)
    n = min(len(baseline_tokens), len(spec_tokens))
    if pos is None:
        return LosslessReport(True, n, None, deterministic)
    b_tok = baseline_tokens[pos] if pos < len(baseline_tokens) else None
    s_tok = spec_tokens[pos] if pos < len(spec_tokens) else None
    text = engine.target.detokenize
    common = list(baseline_tokens[:pos])
    base = dist_row(engine, sampler, baseline_logits_at(engine, prompt_tokens, common), common)
    (top1, l1), (top2, l2) = base.top(2)
    if b_tok is None or s_tok is None:
        div = Divergence(pos, b_tok, s_tok, text([b_tok]) if b_tok is not None else "",
                         text([s_tok]) if s_tok is not None else "", top1, top2, l1 - l2,
                         kind="length")
        return LosslessReport(False, n, div, deterministic)
    spec_raw = spec_logits_at(engine, prompt_tokens, spec_events, pos, before, reused)
    fields: dict = {"kind": "mismatch", "baseline_top": base.top()}
    if spec_raw is not None:
        spec = dist_row(engine, sampler, spec_raw, common)
        fields = classify(base, spec, b_tok, s_tok)
        if not sampler.greedy and sampler.seed & 0xFFFFFFFF != 0xFFFFFFFF:   # (that seed: a random one)
            fields.update(classify_sampled(base, spec, dist_draw(sampler.seed, pos), b_tok, s_tok))
    div = Divergence(pos, b_tok, s_tok, text([b_tok]), text([s_tok]), top1, top2, l1 - l2, **fields)
    return LosslessReport(False, n, div, deterministic)


def compare(engine, prompt: str | list[int], spec, sampler=None, n_predict: int = 64, *,
            spec_sampler=None, lossless: bool = True, stop: threading.Event | None = None) -> Comparison:
    """Run the baseline, then the speculative run, and compare them.

    ``spec_sampler`` (default: ``sampler``) lets a test force a divergence, e.g. with a
    logit bias on the speculative side only."""
    sampler = sampler or SamplerSettings()
    spec_sampler = spec_sampler or sampler
    base_run = engine.baseline(prompt, sampler, n_predict, stop)
    base_events = execute(base_run)
    spec_run = engine.speculative(prompt, spec, spec_sampler, n_predict, stop)
    spec_events = execute(spec_run)
    baseline = run_result("baseline", base_run, base_events)
    speculative = run_result("spec", spec_run, spec_events, spec.n_max)
    report = None
    if lossless and not (stop is not None and stop.is_set()):
        report = check_lossless(engine, base_run.prompt_tokens, baseline.tokens, speculative.tokens,
                                spec_events, sampler=sampler)
    return Comparison(prompt if isinstance(prompt, str) else "", baseline, speculative, report)
