"""Step mode's words for one round: what each of its steps did, in HTML (the Round tab
beside the picture, app/round_view.py), and the token labels both read.

Tokens show the text they make, read along their row (core/models/tokentext.py): a character
split over tokens appears on each of them with its share, "中 (1/3)". An n-gram draft's words
quote the earlier n-gram it matched and where it copied from; a model's draft its tokens'
probabilities (and an EAGLE-3 head's reduced-vocabulary ids, a draft of another vocabulary its
own pieces); a type with a loop of its own has its words in app/shape_words.py.
"""

from __future__ import annotations

import html

from specscope.core.engine.drafters import DESCRIPTIONS, TYPES, spec_type
from specscope.core.engine.drafters.registry import LOOKUP, MODEL, SELF, TARGET as OWN_LAYERS
from specscope.core.models.tokentext import shares

from . import shape_words
from .drafter_style import drafter_html, drafter_who
from .token_view import translation_html, visible

def cache_owner(name: str) -> str:
    """Whose cache a model drafter's rows live in, in words ("the EAGLE-3 head's")."""
    t = spec_type(name)
    if t.source == MODEL:
        return "the draft"
    return f"the {t.who[1] if t.cache == 'head' else t.cache}'s"


def labels(tokens, vocab) -> list[str]:
    """What each token of a row shows: the text it makes read along the row (a split
    character's share included), ⟨end⟩ for an end-of-generation token."""
    texts = shares([b"" if vocab.is_eog(t) else vocab.piece(t) for t in tokens])
    return ["⟨end⟩" if vocab.is_eog(t) else x for t, x in zip(tokens, texts)]


def round_labels(ev, vocab) -> tuple[list[str], list[str]]:
    """(verification batch, emitted) labels of a round. Tokens are read along what the round
    kept (seed, replayed, emitted), so an accepted drafted token and its sample show the same;
    drafted tokens from the first rejection on are read along the draft."""
    r, a = 1 + len(ev.replayed), ev.n_accepted
    kept = labels([ev.seed, *ev.replayed, *ev.emitted], vocab)
    drafted = labels([ev.seed, *ev.replayed, *ev.drafted], vocab)
    return kept[:r + a] + drafted[r + a:], kept[r:]


def token_tooltip(token: int, vocab) -> str:
    """Hovering a token: its id and its piece as the vocabulary writes it."""
    return f"token {token} · vocabulary piece <code>{html.escape(vocab.text(token))}</code>"


def token_text(text: str) -> str:
    """A token's text as step mode writes it, in the picture and in the words alike: line
    breaks, tabs and returns as ↵ ⇥ ␍, and the spaces of a token of whitespace alone as ␣ (an
    HTML paragraph would swallow them)."""
    return visible(text.replace(" ", "␣") if text.strip() == "" else text)


def short(text: str, n: int = 10) -> str:
    text = token_text(text) or "␣"
    return text if len(text) <= n else text[: n - 1] + "…"


def chain_words(ev, types) -> str:
    """In a chain: which drafters came up empty before the winner, and which were not asked."""
    if len(types) < 2 or not ev.drafted or ev.drafter not in types:
        return ""
    i = types.index(ev.drafter)
    empty, unasked = types[:i], types[i + 1:]
    words = "The chain tries " + ", then ".join(types) + ": "
    if empty:
        words += f"{', '.join(empty)} had no draft, so {ev.drafter}'s was the first non-empty one"
    else:
        words += f"{ev.drafter} comes first and had a draft"
    if unasked:
        words += f"; {', '.join(unasked)} {'was' if len(unasked) == 1 else 'were'} not asked"
    return f"<br><span style='color:#555'>{html.escape(words, quote=False)}.</span>"


def _quote(history, lo: int, hi: int, vocab) -> str:
    """The text of positions [lo, hi) of ``history``, as code."""
    toks = list(history[max(lo, 0):hi])
    text = "".join(labels(toks, vocab)) if toks else ""
    return f"<code>{html.escape(visible(text)) or '&nbsp;'}</code>"


def ngram_draft_words(ev, vocab, history, drafted: str) -> str:
    """Step 1 for an n-gram drafter: which earlier n-gram matched where, and what it copied."""
    k, name = len(ev.drafted), ev.drafter
    text = (f"<b>1. Draft:</b> <b>{html.escape(name)}</b> ({html.escape(DESCRIPTIONS.get(name, ''))}) "
            f"proposed {k} token{'s' if k != 1 else ''} without a draft model")
    m = ev.ngram
    if m and m.key >= 0 and m.key_len:
        n, lo = m.key_len, m.key
        now = ev.n_past - n + 1
        text += (f": the latest {n} token{'s' if n != 1 else ''}, "
                 f"{_quote(history, now, ev.n_past + 1, vocab)} at positions {now}–{ev.n_past} "
                 f"(ending with the seed), occurred before at positions {lo}–{lo + n - 1}")
    if m and m.source >= 0:
        src = m.source
        text += (f"; it copied the {k} token{'s' if k != 1 else ''} that followed there, "
                 f"positions {src}–{src + k - 1}: {drafted}")
    else:
        text += f": {drafted}"
    text += f". ({ev.t_lookup * 1e3:.2f} ms of lookup)"
    if ev.draft_note and not m:                     # its own words, where ours had nothing to say
        text += f"<br><span style='color:#555'>{html.escape(name)}: {html.escape(ev.draft_note)}</span>"
    return text


def model_draft_words(ev, drafted: list[str], texts=()) -> str:
    """Step 1 for the draft model, an EAGLE-3 head or the target's MTP blocks: the tokens it
    proposed (``drafted``, as HTML; ``texts``, their texts), each with its probability (and the
    head's reduced-vocabulary id), and why it stopped; a draft of another vocabulary, its own
    pieces and the target's."""
    k = len(ev.drafted)
    why = {"n_max": "it reached n_max", "p_min": "the next token fell below p_min",
           "policy": f"it reached the draft-length policy's {ev.draft_limit} for this round"
                     if k == ev.draft_limit else "the cost policy judged one more token not worth "
                     "its cost here (calibrated costs, the draft's confidence)",
           "budget": "the per-round budget (context / n_predict) was reached",
           "eog": "it drafted an end-of-text token", "none": "the draft ended"}.get(
        ev.draft_stop, ev.draft_stop or "the draft ended")
    def prob(i: int, p: float) -> str:     # a run that teaches: the draft's q beside the target's p
        return f"q {p:.2f}, the target's p {ev.target_p[i]:.2f}" if i < len(ev.target_p) else f"q {p:.2f}"
    items = [f"draft id {ev.head_ids[i]} → target id {t} {text} ({prob(i, p)})" if i < len(ev.head_ids)
             else f"{text} ({prob(i, p)})"
             for i, (t, text, p) in enumerate(zip(ev.drafted, drafted, ev.draft_probs))]
    tokens = (f"{k} token{'s' if k != 1 else ''} greedily: {('; ' if ev.head_ids else ', ').join(items)}; "
              f"it stopped because {why}.")
    note = html.escape(ev.draft_note, quote=False)
    t = spec_type(ev.drafter)
    if t.head == "eagle3":
        fed = f"; {note}" if note else ""
        return (f"<b>1. Draft:</b> {drafter_html(ev.drafter)}, one layer beside the "
                f"target that drafts from the target's own hidden states, not a model of its own{fed}. "
                f"From the seed it proposed {tokens} ({ev.t_draft * 1e3:.1f} ms)")
    if t.block:
        markov = (" Its Markov head biased each position's logits, inside that decode, by the "
                  "token drafted before it (the first by the seed)." if t.markov else "")
        return (f"<b>1. Draft:</b> {drafter_html(ev.drafter)}, one layer beside the target that "
                f"drafts from the target's own hidden states, not a model of its own"
                f"{f' ({note})' if note else ''}. It decoded the seed at position {ev.n_past} "
                f"and mask tokens after it <b>together</b>, every position's logits read at once, "
                f"where the other drafters decode once per drafted token.{markov} It proposed "
                f"{tokens} ({ev.t_draft * 1e3:.1f} ms)")
    if t.source == OWN_LAYERS:
        p = ev.n_past
        return (f"<b>1. Draft:</b> {drafter_html(ev.drafter)}, a layer the target "
                f"carries for drafting, not a draft model{f' ({note})' if note else ''}. It read the "
                f"seed at position {p} with the target's last hidden state at position {p - 1} and "
                f"predicted the token at {p + 1}; each further step read the token just drafted "
                f"with the block's own hidden state of the step before. It proposed {tokens} "
                f"({ev.t_draft * 1e3:.1f} ms)")
    if ev.xvocab:
        probs = "" if ev.draft_probs else f"{k} token{'s' if k != 1 else ''}: {', '.join(drafted)}. "
        return (f"<b>1. Draft:</b> the draft model, whose vocabulary is not the target's, read the "
                f"target's text in its own tokens and drafted in its own vocabulary "
                f"({ev.t_draft * 1e3:.1f} ms); SpecScope turned that into target tokens "
                f"({ev.xvocab.mode} mode, {ev.t_translate * 1e3:.2f} ms translating), which the "
                f"target verifies as usual. {probs if ev.xvocab.mode == 'translate' else tokens}"
                f"<br>{translation_html(ev, list(texts))}")
    return (f"<b>1. Draft:</b> the draft model decoded the seed and proposed {tokens} "
            f"({ev.t_draft * 1e3:.1f} ms)")


def _caches(ev, types) -> str:
    """The target's cache alone where nothing drafts with a model (a baseline, lookups, a window)."""
    alone = ev.mode == "baseline" or bool(types) and all(spec_type(t).source in (LOOKUP, SELF) for t in types)
    return "The target's cache" if alone else "Both caches"


def _result_words(ev, vocab, tok, batch_text, own: str) -> str:
    """Step 3: how much of the draft the target kept, and what it emitted (``tok``: a token as
    HTML; ``own``: the target's own token, so written)."""
    k, a, r = len(ev.drafted), ev.n_accepted, 1 + len(ev.replayed)
    if k and a == k and ev.discarded:
        return (f"<b>3. Result:</b> all {k} drafted tokens matched, the last of them {own}, "
                f"the end of generation: the bonus token the target sampled after it, "
                f"{tok(ev.discarded[0], vocab.piece(ev.discarded[0]).decode('utf-8', 'replace'))}, is not output "
                f"(llama.cpp stops at the first end-of-generation token). Emitted "
                f"{len(ev.emitted)} tokens.")
    if k and a == k:
        return (f"<b>3. Result:</b> all {k} drafted tokens matched; the target added the bonus "
                f"token {own}. Emitted {len(ev.emitted)} tokens.")
    if ev.eog_ends_draft:
        return (f"<b>3. Result:</b> the target agreed with the first {a + 1} of the {k} "
                f"drafted tokens, the last of them {own}, the end of generation. llama.cpp "
                f"keeps no drafted token after an end of generation (it would stay in the "
                f"context), so it counts {a} as accepted and {own} as the target's own "
                f"token, and the run ends. Emitted {len(ev.emitted)} "
                f"token{'s' if len(ev.emitted) != 1 else ''}.")
    if k:
        who = html.escape(drafter_who(ev.drafter))
        return (f"<b>3. Result:</b> the target agreed with {a} of the {k} drafted "
                f"token{'s' if k != 1 else ''}; "
                f"the first mismatch was at position {ev.n_past + r + a} "
                f"(draft position {a + 1}): {who} proposed "
                f"{tok(ev.drafted[a], batch_text[r + a])}, the "
                f"target sampled {own}, which replaces it. Emitted {len(ev.emitted)} "
                f"token{'s' if len(ev.emitted) != 1 else ''}.")
    return f"<b>3. Result:</b> the target emitted {own}."


def explain(ev, vocab, history=(), types=()) -> str:
    """The round in words (HTML). Tokens are read along the verification batch and along
    what was emitted, so a character split over tokens shows as its shares. ``history``
    (token per position) lets an n-gram draft quote the n-gram it matched."""
    batch_text, emitted_text = round_labels(ev, vocab)
    r = 1 + len(ev.replayed)                      # the drafted tokens' offset in the batch

    def tok(t, text):
        if vocab.is_eog(t):
            return "<code>⟨end of text⟩</code>"
        return f"<code>{html.escape(token_text(text) or ' ')}</code>"

    seed = tok(ev.seed, batch_text[0])
    own = tok(ev.emitted[-1], emitted_text[-1])   # the target's own token (or an accepted ⟨end⟩)
    n_past, k = ev.n_past, len(ev.drafted)
    origin = ("the prompt's last token, left out of the prefill" if ev.index == 0
              else "sampled last round")
    lines = [f"<b>Round {ev.index + 1}</b> ({ev.mode}). {_caches(ev, types)} held positions 0–{n_past - 1}; "
             f"the seed <i>id_last</i> = {seed} (id {ev.seed}) sits at "
             f"<i>n_past</i> = {n_past}: "
             f"{origin}, not yet evaluated."]
    if ev.mode == "baseline":
        lines.append(f"<b>Target only:</b> the target decoded the seed and sampled {own}.")
    elif ev.replayed:
        replayed = " ".join(tok(t, x) for t, x in zip(ev.replayed, batch_text[1:r]))
        lines.append(f"<b>Replay:</b> a checkpoint restore last round left {len(ev.replayed)} decided "
                     f"tokens ({replayed}); the target re-verifies them in this batch instead of a "
                     "draft.")
    elif ev.shape is not None:                             # its own loop's words (shape_words)
        emitted = lambda t, i: tok(t, emitted_text[i])         # noqa: E731
        lines += shape_words.round_words(ev, emitted,
                                         lambda t: tok(t, vocab.piece(t).decode("utf-8", "replace")))
        lines.append(f"<b>Next:</b> id_last = {own} at n_past = {ev.n_past_after}." if not ev.finish
                     else f"<b>The run ended</b> ({ev.finish}).")
        return "".join(f"<p style='margin:2px 0 6px 0'>{ln}</p>" for ln in lines)
    elif k and ev.drafter and spec_type(ev.drafter).ngram:
        drafted = " ".join(tok(t, x) for t, x in zip(ev.drafted, batch_text[r:]))
        lines.append(ngram_draft_words(ev, vocab, history, drafted) + chain_words(ev, types))
    elif k:
        lines.append(model_draft_words(ev, [tok(t, x) for t, x in zip(ev.drafted, batch_text[r:])],
                                       batch_text[r:]) + chain_words(ev, types))
    else:
        why = {"n_min": f"the draft had {ev.dropped_draft} tokens, fewer than n_min, and was dropped",
               "budget": "there was no room left to draft",
               "p_min": "the first token's probability fell below p_min",
               "policy": "the cost policy dropped the draft's first token: by this machine's "
                         "calibrated costs it was not worth drafting (a calibration taken under "
                         "load can say so of every token: recalibrate)",
               "no match": "no n-gram drafter found the latest tokens earlier in the text"
               }.get(ev.draft_stop, "nothing was drafted")
        lines.append(f"<b>1. Draft:</b> none — {why}; this round is plain decoding.")
    if ev.mode != "baseline":
        batch = [ev.seed, *ev.replayed, *ev.drafted]
        shown = " ".join(tok(t, x) for t, x in zip(batch, batch_text))
        lines.append(f"<b>2. Verify:</b> the target decoded the batch [{shown}] "
                     f"at positions {n_past}–{n_past + len(batch) - 1} in one pass, with logits on every "
                     f"row, and sampled each row. ({ev.t_verify * 1e3:.1f} ms)")
        lines.append(_result_words(ev, vocab, tok, batch_text, own))
        owner = next((cache_owner(t) for t in types if not TYPES[t].ngram),
                     cache_owner("") if not types else None)
        draft_cache = f", {owner} cache {ev.kv_dropped_draft}" if owner else " (no draft model runs)"
        lines.append(f"<b>4. Roll back:</b> the target cache dropped {ev.kv_dropped_target} KV row"
                     f"{'s' if ev.kv_dropped_target != 1 else ''}{draft_cache}. "
                     f"({ev.t_sync * 1e3:.1f} ms sync)")
        if ev.mode == "checkpoint":
            lines.append("The target's memory cannot drop part of a sequence, so both caches were "
                         "restored to the checkpoint taken before verifying; the decided tokens are "
                         "replayed next round.")
    if ev.finish:
        lines.append(f"<b>The run ended</b> ({ev.finish}).")
    else:
        nxt = seed if ev.mode == "checkpoint" else own      # the next round's seed
        lines.append(f"<b>Next:</b> id_last = {nxt} at n_past = {ev.n_past_after}.")
    return "".join(f"<p style='margin:2px 0 6px 0'>{ln}</p>" for ln in lines)
