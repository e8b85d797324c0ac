"""Statistics as a pure fold over round events.

Counting follows llama.cpp's speculative-simple: ``n_drafted`` adds the length
of every draft that was verified (drafts discarded for being shorter than
n_min are not counted), ``n_accept`` adds the drafted tokens the target kept.
One deliberate difference: tokens re-verified by a replay round after a
checkpoint restore (llama.cpp's replay) are counted once, in the round that decided
them, not again as a "draft" of the replay round.

Mean accepted length is the mean number of tokens a verified draft yields,
1 + accepted (llama.cpp's ``1 + n_acc_tokens / n_call_accept``).

The counterfactual (runs at temperature, core/engine/accept_rules.py): each draft's chances that the
other acceptance rule keeps position i are multiplied along the draft, so that position k gets
the chance that the other rule keeps the first k drafted tokens, the counterpart of
``accepted_at[k] / drafted_at[k]``; ``counterfactual_acceptance`` averages it over the drafts
that reached k and carry one.

Tree headroom (:class:`TreeHeadroom`; llama.cpp PR 28110 proposes the same statistic): what
a draft tree of width w would have accepted, measured on the model drafters' own rounds (the
draft model's, draft-simple, or an EAGLE-3 head's, draft-eagle3: one draft slot, one of them a run).
``RoundEvent.draft_ranks`` holds, for each drafted position up to and with the first
rejection, the rank of the target's token among the draft's top-10 there (0 = the draft's
own choice, which is what an accepted position always has). Only those positions were drafted
from the prefix the target actually took; after the first rejection the draft went on from a
token the target did not pick, so nothing is known there. A *width-w tree* is taken to expand
the draft's top-w at every level along the target's path, to the same depth L as the draft
(it verifies more tokens per round: its cost is not counted here). Per round it accepts:

* the measured part: the accepted tokens, plus the first rejected position when the target's
  token there ranks below w (the tree held it);
* the estimated part: below that level the tree goes on for the m = L − accepted − 1 levels
  left, which were never drafted. They are taken to behave like the first m levels of a round
  of this run — which is what they are in the real run: the next round starts right after the
  target's token. ``E_w(m)``, the mean a width-w tree accepts over m levels, is the mean over
  the run's rounds (those at least m long) of what the tree accepts in their first m levels,
  recursively (a caught rejection at level r adds 1 + E_w(m − r − 1)). It keeps the run's own
  runs of good and bad stretches, unlike a per-level rate raised to a power.

``acceptance(w)`` = (accepted tokens of a width-w tree) ÷ drafted, as llama.cpp's accept%;
``floor(w)`` counts the measured part only. At w = 1 both are exactly the measured acceptance.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

import numpy as np

from specscope.core.engine.drafters import MODEL_TYPES
from specscope.core.engine.events import RoundEvent


class _DraftRates:
    """Rates derived from draft counts (n_accept, n_drafted, n_draft_rounds, accepted_at,
    drafted_at), shared by a run's Stats and each drafter's DrafterStats."""

    @property
    def acceptance_rate(self) -> float:
        return self.n_accept / self.n_drafted if self.n_drafted else 0.0

    @property
    def mean_accepted_length(self) -> float:
        return 1.0 + self.n_accept / self.n_draft_rounds if self.n_draft_rounds else 1.0

    @property
    def position_acceptance(self) -> tuple[float, ...]:
        return tuple(a / d if d else 0.0 for a, d in zip(self.accepted_at, self.drafted_at))

    def to_dict(self) -> dict:
        d = {name: getattr(self, name) for name in self.__dataclass_fields__}
        for key in ("drafted_at", "accepted_at", "accepted_hist"):
            d[key] = list(d[key])
        d.update(acceptance_rate=self.acceptance_rate,
                 mean_accepted_length=self.mean_accepted_length,
                 position_acceptance=list(self.position_acceptance))
        return d


@dataclass(frozen=True)
class DrafterStats(_DraftRates):
    """The draft counts of the rounds one drafter (a llama.cpp type) won."""
    name: str
    n_draft_rounds: int = 0
    n_drafted: int = 0
    n_accept: int = 0
    drafted_at: tuple[int, ...] = ()
    accepted_at: tuple[int, ...] = ()
    accepted_hist: tuple[int, ...] = ()


RANK_BINS = 11          # ranks 0-9 in the draft's top-10, and "not among them" (rank -1)
TREE_WIDTHS = (1, 2, 4)


def rank_bin(rank: int) -> int:
    return RANK_BINS - 1 if rank < 0 else rank


@dataclass(frozen=True)
class TreeHeadroom:
    """What a draft tree of width w would have accepted (module docs), from the model drafter's
    rounds (draft-simple or draft-eagle3): their drafted and accepted counts, the rank histogram
    of the target's tokens over the measured positions, and ``rounds``: (draft length, accepted,
    rank bin of the first rejected position — 0 when all were accepted, the last bin when no
    rank was measured —, how many rounds), sorted."""
    n_drafted: int = 0
    n_accept: int = 0
    rank_hist: tuple[int, ...] = (0,) * RANK_BINS
    rounds: tuple[tuple[int, int, int, int], ...] = ()

    def level_rate(self, w: int) -> float:
        """The share of measured positions where the target's token ranks below w."""
        total = sum(self.rank_hist)
        return sum(self.rank_hist[:w]) / total if total else 0.0

    def floor(self, w: int) -> float:
        """Acceptance of a width-w tree from the measured positions only."""
        caught = sum(n for length, acc, b, n in self.rounds if acc < length and 0 < b < w)
        return (self.n_accept + caught) / self.n_drafted if self.n_drafted else 0.0

    def continuation(self, w: int) -> list[float]:
        """E_w(m), m = 0 .. the longest draft: what a width-w tree accepts over m levels, from
        the run's rounds at least m long (module docs); the last value where none is."""
        longest = max((length for length, *_ in self.rounds), default=0)
        e = [0.0]
        for m in range(1, longest + 1):
            total = count = 0.0
            for length, acc, b, n in self.rounds:
                if length < m:
                    continue
                got = m if acc >= m else acc + (1.0 + e[m - acc - 1] if 0 < b < w else 0.0)
                total += n * got
                count += n
            e.append(total / count if count else e[-1])
        return e

    def acceptance(self, w: int) -> float:
        """Estimated acceptance of a width-w tree (measured part + estimated deeper levels)."""
        if not self.n_drafted:
            return 0.0
        e = self.continuation(w)
        accepted = float(self.n_accept)
        for length, acc, b, n in self.rounds:
            if acc < length and 0 < b < w:
                accepted += n * (1.0 + e[length - acc - 1])
        return accepted / self.n_drafted

    def to_dict(self) -> dict:
        return {"n_drafted": self.n_drafted, "n_accept": self.n_accept,
                "rank_hist": list(self.rank_hist), "rounds": [list(r) for r in self.rounds],
                "widths": {str(w): {"acceptance": self.acceptance(w), "floor": self.floor(w),
                                    "level_rate": self.level_rate(w)} for w in TREE_WIDTHS}}


@dataclass(frozen=True)
class Stats(_DraftRates):
    n_rounds: int = 0
    n_tokens: int = 0                 # tokens emitted
    n_draft_rounds: int = 0           # rounds that verified a draft
    n_drafted: int = 0
    n_accept: int = 0
    drafted_at: tuple[int, ...] = ()  # per draft position: how many drafts reached it
    accepted_at: tuple[int, ...] = () # per draft position: how many were accepted there
    accepted_hist: tuple[int, ...] = ()  # rounds that accepted 0, 1, 2, ... drafted tokens
    t_draft: float = 0.0
    t_verify: float = 0.0
    t_sync: float = 0.0
    t_overhead: float = 0.0
    t_total: float = 0.0              # generation wall time (prefill excluded)
    by_drafter: tuple[DrafterStats, ...] = ()   # per llama.cpp type, in order of first draft
    t_lookup: float = 0.0             # seconds in n-gram lookups (part of t_draft)
    synthetic: bool = False           # a round used synthetic acceptance: not valid output
    cf_rule: str = ""                 # the counterfactual's rule (RoundEvent.counterfactual_rule)
    cf_at: tuple[float, ...] = ()     # per draft position: summed chance the other rule keeps
                                      # the draft up to there
    cf_drafted_at: tuple[int, ...] = ()  # per draft position: drafts reaching it with a counterfactual
    tree: TreeHeadroom = TreeHeadroom()   # the model drafter's rounds: what a wider draft could buy
    t_translate: float = 0.0          # seconds translating between vocabularies (RoundEvent.t_translate)
    threads: tuple[tuple[int, ...], ...] = ()   # (first round, target, draft) for each stretch of
                                      # rounds that ran with the same thread counts (RoundEvent.threads)

    @property
    def threads_text(self) -> str:
        """'2+2 threads' or '2+2 threads, 1+1 from round 37' (target+draft; the target's alone
        in a baseline); '' when the events carry no counts."""
        def counts(t):
            return "+".join(str(n) for n in t[1:] if n) or "?"
        if not self.threads:
            return ""
        first, *rest = self.threads
        unit = "thread" if counts(first) == "1" else "threads"
        return ", ".join([f"{counts(first)} {unit}"] + [f"{counts(t)} from round {t[0]}" for t in rest])

    @property
    def main_threads(self) -> tuple[int, ...]:
        """The (target, draft) counts that ran the most rounds; () when unknown."""
        ends = [t[0] for t in self.threads[1:]] + [self.n_rounds]
        spans = [(end - t[0], tuple(t[1:])) for t, end in zip(self.threads, ends)]
        return max(spans)[1] if spans else ()

    @property
    def counterfactual_acceptance(self) -> tuple[float, ...]:
        """Per draft position: the expected share the other rule would have kept (module docs)."""
        return tuple(a / d if d else 0.0 for a, d in zip(self.cf_at, self.cf_drafted_at))

    @property
    def tokens_per_s(self) -> float:
        return self.n_tokens / self.t_total if self.t_total > 0 else 0.0

    @property
    def overhead_share(self) -> float:
        return self.t_overhead / self.t_total if self.t_total > 0 else 0.0

    def drafter(self, name: str) -> DrafterStats:
        """The counts of the rounds ``name`` won (zeros when it never drafted)."""
        return next((d for d in self.by_drafter if d.name == name), DrafterStats(name))

    def to_dict(self) -> dict:
        d = super().to_dict()
        d["by_drafter"] = {ds.name: ds.to_dict() for ds in self.by_drafter}
        d.update(cf_at=list(self.cf_at), cf_drafted_at=list(self.cf_drafted_at),
                 counterfactual_acceptance=list(self.counterfactual_acceptance))
        d["tree"] = self.tree.to_dict()
        d["threads"] = [list(t) for t in self.threads]
        d.update(tokens_per_s=self.tokens_per_s, overhead_share=self.overhead_share)
        return d


class _Counts:
    """Mutable draft counts while folding (the run's and each drafter's)."""

    def __init__(self, s):
        self.n_draft_rounds, self.n_drafted, self.n_accept = s.n_draft_rounds, s.n_drafted, s.n_accept
        self.drafted_at, self.accepted_at = list(s.drafted_at), list(s.accepted_at)
        self.hist = list(s.accepted_hist)

    def add(self, ev: RoundEvent) -> None:
        self.n_draft_rounds += 1
        self.n_drafted += len(ev.drafted)
        self.n_accept += ev.n_accepted
        _add_at(self.drafted_at, len(ev.drafted))
        _add_at(self.accepted_at, ev.n_accepted)
        if len(self.hist) <= ev.n_accepted:
            self.hist.extend([0] * (ev.n_accepted + 1 - len(self.hist)))
        self.hist[ev.n_accepted] += 1

    def fields(self) -> tuple:
        self.accepted_at.extend([0] * (len(self.drafted_at) - len(self.accepted_at)))
        return (self.n_draft_rounds, self.n_drafted, self.n_accept, tuple(self.drafted_at),
                tuple(self.accepted_at), tuple(self.hist))


def _add_at(counts: list[int], n: int) -> None:
    """counts[i] += 1 for i < n, growing the list as needed."""
    if len(counts) < n:
        counts.extend([0] * (n - len(counts)))
    for i in range(n):
        counts[i] += 1


class _Tree:
    """Mutable tree-headroom counts while folding."""

    def __init__(self, t: TreeHeadroom):
        self.n_drafted, self.n_accept = t.n_drafted, t.n_accept
        self.hist = list(t.rank_hist)
        self.rounds = {tuple(r[:3]): r[3] for r in t.rounds}

    def add(self, ev: RoundEvent) -> None:
        self.n_drafted += len(ev.drafted)
        self.n_accept += ev.n_accepted
        for rank in ev.draft_ranks:
            self.hist[rank_bin(rank)] += 1
        if ev.n_accepted == len(ev.drafted):
            b = 0
        elif len(ev.draft_ranks) > ev.n_accepted:        # a measured rejection
            b = rank_bin(ev.draft_ranks[ev.n_accepted])
        else:                                            # rejected, no rank: caught by no tree
            b = RANK_BINS - 1
        key = (len(ev.drafted), ev.n_accepted, b)
        self.rounds[key] = self.rounds.get(key, 0) + 1

    def done(self) -> TreeHeadroom:
        return TreeHeadroom(self.n_drafted, self.n_accept, tuple(self.hist),
                            tuple((*k, n) for k, n in sorted(self.rounds.items())))


def speedup_of(spec_tokens_per_s: float, baseline_tokens_per_s: float) -> float | None:
    """A measured speed-up: the speculative run's generation speed over the target alone's
    (None where either generated nothing). The lossless check, the cost tab and a session's
    speed-up all take it from here."""
    if spec_tokens_per_s <= 0 or baseline_tokens_per_s <= 0:
        return None
    return spec_tokens_per_s / baseline_tokens_per_s


def fold(events: Iterable[RoundEvent], start: Stats = Stats()) -> Stats:
    """The statistics of ``events``; with ``start``, of the events that made ``start`` and then
    these (``fold(b, fold(a)) == fold(a + b)``), so a live view folds only what is new."""
    n_rounds, n_tokens = start.n_rounds, start.n_tokens
    total = _Counts(start)
    drafters = {d.name: _Counts(d) for d in start.by_drafter}
    tree = _Tree(start.tree)
    t_draft, t_verify, t_sync = start.t_draft, start.t_verify, start.t_sync
    t_overhead, t_total, t_lookup = start.t_overhead, start.t_total, start.t_lookup
    t_translate = start.t_translate
    synthetic = start.synthetic
    cf_rule, cf_at, cf_drafted_at = start.cf_rule, list(start.cf_at), list(start.cf_drafted_at)
    threads = list(start.threads)
    for ev in events:
        if ev.threads and (not threads or threads[-1][1:] != ev.threads):
            threads.append((n_rounds, *ev.threads))
        n_rounds += 1
        n_tokens += len(ev.emitted)
        if ev.drafted:
            total.add(ev)
            name = ev.drafter or "draft-simple"
            if name not in drafters:
                drafters[name] = _Counts(DrafterStats(name))
            drafters[name].add(ev)
            # ranks: a draft model's top-10 (translate has none; a tree's or window's rounds their own)
            if name in MODEL_TYPES and not (ev.xvocab and ev.xvocab.mode == "translate") and ev.shape is None:
                tree.add(ev)
        if ev.drafted and ev.counterfactual:
            cf_rule = ev.counterfactual_rule
            _add_at(cf_drafted_at, len(ev.counterfactual))
            cf_at.extend([0.0] * (len(cf_drafted_at) - len(cf_at)))
            for i, chance in enumerate(np.cumprod(ev.counterfactual)):
                cf_at[i] += float(chance)
        t_draft += ev.t_draft
        t_verify += ev.t_verify
        t_sync += ev.t_sync
        t_overhead += ev.t_overhead
        t_total += ev.t_round
        t_lookup += ev.t_lookup
        t_translate += ev.t_translate
        synthetic = synthetic or ev.synthetic
    by_drafter = tuple(DrafterStats(name, *c.fields()) for name, c in drafters.items())
    return Stats(n_rounds, n_tokens, *total.fields(), t_draft, t_verify, t_sync, t_overhead,
                 t_total, by_drafter, t_lookup, synthetic, cf_rule, tuple(cf_at),
                 tuple(cf_drafted_at), tree.done(), t_translate, tuple(threads))
