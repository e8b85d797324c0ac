"""suffix: Suffix Decoding (Oliaro et al. 2024), as Snowflake's Arctic Inference implements it
(csrc/suffix_decoding/suffix_tree.cc, arctic_inference/suffix_decoding/cache.py) and vLLM runs
it (``method="suffix"``). No llama.cpp program has it; SpecScope's flags carry vLLM's names.

Two suffix trees of token counts, each depth-limited to ``max_depth`` tokens:

* the **local tree** over this request's prompt and output, one sequence, grown token by token;
* the **global tree** over earlier responses: a corpus file's text (``--spec-suffix-corpus``),
  a conversation's earlier replies, and (as vLLM adds every running response to it) this
  request's own output.

Each node counts the occurrences of the text on its path from the root; a child's count over
its parent's is the estimated probability of that token after that text. To draft, the last
``max_depth`` tokens of the context are the pattern: for every match length from 1 up (shortest
first, stopping at the first that is not in the tree), the draft follows the most frequent
child from the matched node while the product of those ratios stays at ``min_token_prob`` or
more, for at most ``min(max_spec_tokens, floor(match_len * max_spec_factor + max_spec_offset))``
tokens. Each draft scores the sum of its tokens' probabilities (an expected accepted length);
the best score wins, a tie going to the longer match, and the local tree's best to the global's
on a tie. A text never seen drafts nothing; a repeated edit drafts the rest of it.

Tree mode (Arctic's ``use_tree_spec``: a best-first tree of up to that many nodes) is
:meth:`SuffixTree.speculate` with ``tree=True``; vLLM never turns it on, and neither does the
drafter here: the draft is one path, verified as every draftless type's (accepted where the
target samples the same token).

Differences from Arctic Inference, all of representation, not of result: the trie is not path
compressed (a chain of single children gives the same ratios as a compressed node), counts are
Python integers (ratios in single precision as there), and among siblings of equal count the
one that reached that count first is the most frequent (Arctic keeps its children sorted so).
"""

from __future__ import annotations

import heapq
from collections import deque
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from specscope.core.engine.drafters.base import Drafter, Proposal
from specscope.core.engine.flag import Flag, fmt
from specscope.core.errors import ConfigError

# a node: [count, stamp (when its count last rose), children {token: node}]
COUNT, STAMP, KIDS = 0, 1, 2


@dataclass(frozen=True)
class SuffixParams:
    """vLLM's suffix-decoding settings (``SpeculativeConfig.suffix_decoding_*``)."""
    max_depth: int = 24           # --spec-suffix-max-depth: the trees' depth (match + draft)
    max_spec_tokens: int = 24     # --spec-suffix-max-spec-tokens (vLLM's num_speculative_tokens)
    max_spec_factor: float = 1.0  # --spec-suffix-max-spec-factor: tokens per matched token
    max_spec_offset: float = 0.0  # --spec-suffix-max-spec-offset: tokens beside that
    min_token_prob: float = 0.1   # --spec-suffix-min-token-prob: stop below this estimate
    corpus: str = ""              # --spec-suffix-corpus: a text file of earlier responses

    def validate(self, type_name: str = "suffix") -> None:
        if not 1 <= self.max_depth <= 1024:
            raise ConfigError(f"{type_name} max depth must be between 1 and 1024, not {self.max_depth}")
        if not 1 <= self.max_spec_tokens <= 1024:
            raise ConfigError(f"{type_name} max spec tokens must be between 1 and 1024, "
                              f"not {self.max_spec_tokens}")
        if self.max_spec_factor < 0 or self.max_spec_offset < -1024:
            raise ConfigError(f"{type_name} max spec factor must be >= 0, not {self.max_spec_factor}")
        if not 0.0 <= self.min_token_prob <= 1.0:
            raise ConfigError(f"{type_name} min token prob must be in [0, 1], not {self.min_token_prob}")
        if self.corpus and not Path(self.corpus).is_file():
            raise ConfigError(f"{self.corpus}: --spec-suffix-corpus: no such file")

    @property
    def longest(self) -> int:
        """The longest draft: a match of one token leaves max_depth - 1 for the draft."""
        return max(1, min(self.max_spec_tokens, self.max_depth - 1))


NAME = "suffix"
PARAMS = SuffixParams
FLAGS = (
    Flag(f"{NAME}.max_depth", ("--spec-suffix-max-depth",),
         f"{NAME}: the suffix trees' depth, the matched text and the draft together (vLLM's "
         "suffix_decoding_max_tree_depth)", 1, 1024, types=(NAME,), metavar="N", label="depth"),
    Flag(f"{NAME}.max_spec_tokens", ("--spec-suffix-max-spec-tokens",),
         f"{NAME}: the most tokens drafted (nodes, with -np > 1) per round (vLLM's "
         "num_speculative_tokens)", 1, 1024, types=(NAME,), metavar="N", label="tokens"),
    Flag(f"{NAME}.max_spec_factor", ("--spec-suffix-max-spec-factor",),
         f"{NAME}: tokens drafted per matched token: a match of k tokens drafts at most "
         "k x factor + offset (vLLM's suffix_decoding_max_spec_factor)", 0.0, 16.0,
         types=(NAME,), metavar="F", write=fmt, label="factor", step=0.25),
    Flag(f"{NAME}.max_spec_offset", ("--spec-suffix-max-spec-offset",),
         f"{NAME}: tokens drafted beside those (Arctic Inference's max_spec_offset)", -16.0, 64.0,
         types=(NAME,), metavar="K", write=fmt),
    Flag(f"{NAME}.min_token_prob", ("--spec-suffix-min-token-prob",),
         f"{NAME}: stop drafting where the trees' estimate of the continuation (its count over "
         "the matched text's, multiplied along the draft) falls below this (vLLM's "
         "suffix_decoding_min_token_prob)", 0.0, 1.0, types=(NAME,), metavar="P",
         write=fmt, label="min p"),
    Flag(f"{NAME}.corpus", ("--spec-suffix-corpus",),
         f"{NAME}: a text file of earlier replies (documents separated by blank lines) for the "
         "global suffix tree, as vLLM's cache of earlier requests", types=(NAME,),
         metavar="FILE", unset="", label="corpus"),
)


@dataclass(frozen=True)
class Draft:
    """What a tree speculates: tokens, each one's parent (-1: the context), estimated
    probabilities, their sum and the length of the context's suffix it matched."""
    tokens: tuple[int, ...] = ()
    parents: tuple[int, ...] = ()
    probs: tuple[float, ...] = ()
    score: float = 0.0
    match_len: int = 0
    count: int = 0                # how often the matched text occurred in the tree


class SuffixTree:
    """Arctic Inference's ``SuffixTree``: every suffix of its sequences, up to ``max_depth``
    tokens, as paths of counted nodes."""

    def __init__(self, max_depth: int):
        self.max_depth = max_depth
        self.root: list = [0, 0, {}]
        self.clock = 0
        self.active: dict[int, deque] = {}      # sequence -> the nodes its latest suffixes end in
        self.n_seqs = 0

    def extend(self, seq: int, tokens) -> None:
        """Append ``tokens`` to sequence ``seq``: every suffix ending there grows by each."""
        active = self.active.setdefault(seq, deque())
        root, depth = self.root, self.max_depth
        for token in tokens:
            self.clock += 1
            clock = self.clock
            active.append(root)
            root[COUNT] += 1
            if len(active) > depth:
                active.popleft()
            for i, node in enumerate(active):
                kids = node[KIDS]
                child = kids.get(token)
                if child is None:
                    child = kids[token] = [0, 0, {}]
                child[COUNT] += 1
                child[STAMP] = clock
                active[i] = child

    def add(self, tokens) -> int:
        """A new sequence of ``tokens``; its number."""
        seq = self.n_seqs
        self.n_seqs += 1
        self.extend(seq, tokens)
        return seq

    def _match(self, pattern) -> list | None:
        node = self.root
        for token in pattern:
            node = node[KIDS].get(token)
            if node is None:
                return None
        return node

    def speculate(self, context, max_spec_tokens: int, max_spec_factor: float = 1.0,
                  max_spec_offset: float = 0.0, min_token_prob: float = 0.1,
                  tree: bool = False, ends=()) -> Draft:
        """The best draft after ``context`` (its last tokens are matched; Arctic's
        ``SuffixTree::speculate``). ``ends``: where a sequence of this tree ends with the
        context, its active nodes (the context's last k tokens' node is ``ends[-k]``): no walk."""
        best = Draft()
        for match_len in range(1, len(context)):
            node = ends[-match_len] if match_len <= len(ends) else self._match(
                context[len(context) - match_len:])
            if node is None or not node[KIDS]:
                break         # nor does a longer match occur, or continue where this one does not
            n = max(0, min(max_spec_tokens, int(match_len * max_spec_factor + max_spec_offset + 1e-6)))
            if (n if tree else min(n, self.max_depth - match_len)) < best.score:
                continue      # each token adds at most 1 (a path: as deep as the tree allows)
            tokens, parents, probs = (_tree if tree else _path)(node, n, min_token_prob)
            score = sum(probs)
            if score >= best.score:
                best = Draft(tuple(tokens), tuple(parents), tuple(probs), score, match_len, node[COUNT])
        return best


def _ranked(node) -> list:
    """A node's children, most frequent first (of equal counts, the first to reach it)."""
    return sorted(node[KIDS].items(), key=lambda kv: (-kv[1][COUNT], kv[1][STAMP]))


def _first(node):
    """The most frequent child (of equal counts, the first to reach it): (token, child)."""
    kids = node[KIDS]
    if len(kids) == 1:
        return next(iter(kids.items()))
    return max(kids.items(), key=lambda kv: (kv[1][COUNT], -kv[1][STAMP]))


def _path(node, n: int, min_prob: float):
    """Arctic's ``_speculate_path``: the most frequent child while the estimate holds."""
    tokens, parents, probs, prob = [], [], [], 1.0
    while len(tokens) < n and node[KIDS]:
        token, child = _first(node)
        prob *= child[COUNT] / node[COUNT]
        if prob < min_prob:
            break
        parents.append(len(tokens) - 1)
        tokens.append(token)
        probs.append(prob)
        node = child
    return tokens, parents, probs


def _tree(node, n: int, min_prob: float):
    """Arctic's ``_speculate_tree``: best first by estimated probability, up to n nodes."""
    tokens, parents, probs = [], [], []
    order = 0
    heap = [(-1.0, order, node, -1, None)]        # (-prob, tie, node to expand, parent, token)
    while len(tokens) < n and heap:
        neg, _, at, parent, token = heapq.heappop(heap)
        if token is not None:                     # emit this node's token, then expand it
            parents.append(parent)
            tokens.append(token)
            probs.append(-neg)
            order += 1
            heapq.heappush(heap, (neg, order, at, len(tokens) - 1, None))
            continue
        for t, child in _ranked(at):
            p = -neg * child[COUNT] / at[COUNT]
            if p < min_prob:
                break
            order += 1
            heapq.heappush(heap, (-p, order, child, parent, t))
    return tokens, parents, probs


_CORPORA: dict[tuple, tuple[tuple[int, ...], ...]] = {}


def corpus_tokens(path: str, model) -> tuple[tuple[int, ...], ...]:
    """A corpus file's documents (separated by blank lines) as ``model``'s tokens, read once per
    file version and vocabulary."""
    p = Path(path)
    try:
        key = (str(p.resolve()), p.stat().st_mtime_ns, getattr(model, "path", id(model)))
        if key not in _CORPORA:
            text = p.read_text(encoding="utf-8", errors="replace")
            docs = [d.strip() for d in text.replace("\r\n", "\n").split("\n\n")]
            _CORPORA[key] = tuple(tuple(model.tokenize(d, add_special=False, parse_special=False))
                                  for d in docs if d)
    except OSError as err:
        raise ConfigError(f"{path}: --spec-suffix-corpus: {err.strerror or err}") from err
    return _CORPORA[key]


class Suffix(Drafter):
    name = "suffix"

    @classmethod
    def create(cls, name, spec, engine=None, policy=None, q=None, vocab=""):
        params = spec.params(name)
        docs = corpus_tokens(params.corpus, engine.target) if params.corpus and engine else ()
        return cls(params, docs)

    def __init__(self, params: SuffixParams = SuffixParams(), corpus=()):
        params.validate(self.name)
        self.p = params
        self.local = SuffixTree(params.max_depth)
        self.corpus = SuffixTree(params.max_depth)     # the global tree
        for doc in corpus:
            self.corpus.add(doc)
        self.reply = self.corpus.add(())               # this request's output, as it grows
        self.n_seen = 0                                # the tokens in the local tree
        self.n_prompt = 0                              # where the output starts
        self.note = ""                                 # where the last draft came from, in words

    def begin(self, prompt: np.ndarray) -> None:
        self.n_seen = len(prompt)
        self.n_prompt = len(prompt) + 1                 # the prompt's last token comes as id_last
        self.local.extend(0, prompt.tolist())

    def resume(self, prompt: np.ndarray, keep: int, before) -> None:
        """A conversation's next turn: the earlier replies stay in the global tree (and the
        prompt, which holds them, is the local tree's again)."""
        if before is not None:
            self.corpus = before.corpus
            self.reply = self.corpus.add(())
        self.begin(prompt)

    def _grow(self, history: np.ndarray, id_last: int) -> None:
        """The local tree (and the reply in the global one) up to ``history`` and ``id_last``;
        the history only grows within a run (a shorter one, a regenerated reply: anew)."""
        n = self.n_seen
        if n > len(history) + 1:
            self.local = SuffixTree(self.p.max_depth)
            self.reply = self.corpus.add(())
            self.begin(history)
            n = self.n_seen
        if n > len(history):
            return
        new = [*history[n:].tolist(), int(id_last)]
        self.local.extend(0, new)
        out = new[max(0, self.n_prompt - n):]              # the prompt's tokens are no reply
        self.n_seen += len(new)
        if out:
            self.corpus.extend(self.reply, out)

    def best(self, history: np.ndarray, id_last: int, budget: int, tree: bool = False) -> Draft:
        """The better of the local and the global tree's drafts after ``history`` and
        ``id_last`` (a tie goes to the local tree), at most ``budget`` tokens (nodes of a tree);
        ``note`` says where it came from."""
        self._grow(history, id_last)
        p = self.p
        context = [*history[max(0, len(history) - p.max_depth + 1):].tolist(), int(id_last)]
        args = (min(p.max_spec_tokens, max(1, budget)), p.max_spec_factor, p.max_spec_offset,
                p.min_token_prob, tree)
        local = self.local.speculate(context, *args, ends=self.local.active.get(0, ()))
        other = self.corpus.speculate(context, *args)
        best, where = (local, "this prompt and reply") if local.score >= other.score else (
            other, "the corpus and earlier replies")
        self.note = "" if not best.tokens else (
            f"the last {best.match_len} token{'s' if best.match_len > 1 else ''} occurred "
            f"{best.count} times in {where}: drafting {'a tree of ' if tree else ''}their most "
            f"frequent continuation{'s' if tree else ''} (estimated p {best.probs[0]:.2f} … "
            f"{best.probs[-1]:.2f}, score {best.score:.2f})")
        return best

    def draft(self, history: np.ndarray, id_last: int, budget: int) -> Proposal:
        n = min(self.p.max_spec_tokens, max(1, budget))
        best = self.best(history, id_last, budget)
        if not best.tokens:
            return Proposal(self.name, stop="no match")
        return Proposal(self.name, best.tokens, note=self.note, probs=best.probs,
                        stop="n_max" if len(best.tokens) == n else "")


__all__ = ["Suffix", "SuffixParams", "SuffixTree", "Draft", "corpus_tokens"]
