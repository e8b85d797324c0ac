"""Two sessions side by side: two pairs, or two settings on one pair.

``compare_sessions(a, b)`` reads two sessions (core/session/session.py; live or loaded from files) and
returns what the window's comparison view and ``specscope replay A --compare B`` show:
what differs in their settings, each one's acceptance by draft position, its accepted-length
histogram (shares of its verified drafts), measured speed-up, tokens/s and mean accepted
length, and where their outputs first diverge (the token index, the text they share up to
there and what each emits next). Qt-free.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

from specscope.core.engine.drafters.registry import TYPES
from specscope.core.engine.spec_flags import flag
from specscope.core.models.tokentext import text_of

SHOWN_CONTEXT_CHARS = 40      # shared text quoted before a divergence


@dataclass(frozen=True)
class Side:
    label: str
    position_acceptance: tuple[float, ...]
    drafted_at: tuple[int, ...]
    accepted_share: tuple[float, ...]     # verified drafts that accepted 0, 1, 2 … tokens
    acceptance_rate: float
    mean_accepted_length: float
    tokens_per_s: float
    speedup: float | None
    n_rounds: int
    n_tokens: int


@dataclass(frozen=True)
class SessionComparison:
    a: Side
    b: Side
    differences: tuple[str, ...]          # "n_max 3 vs 8", "draft a.gguf vs b.gguf" …
    same_prompt: bool
    diverge_at: int | None                # first generated token index that differs (None: none)
    shared_text: str                      # the generated text both share up to there (its tail)
    next_a: str                           # what each emits at the divergence ("" past its end)
    next_b: str

    def divergence_sentence(self) -> str:
        if not self.same_prompt:
            return "The prompts differ, so the outputs are not compared token by token."
        if self.diverge_at is None:
            n = min(self.a.n_tokens, self.b.n_tokens)
            longer = ("" if self.a.n_tokens == self.b.n_tokens else
                      f"; one run goes on for {abs(self.a.n_tokens - self.b.n_tokens)} more")
            return f"The outputs agree on all {n} tokens both generated{longer}."
        if self.diverge_at == 0:
            return (f"The outputs differ from the first generated token: A emits "
                    f"“{self.next_a}” and B “{self.next_b}”.")
        return (f"The outputs first differ at generated token {self.diverge_at + 1}: after "
                f"“…{self.shared_text}”, A emits “{self.next_a}” and B “{self.next_b}”.")


def session_label(session) -> str:
    """Target, drafter chain and its main setting, for legends and table rows."""
    s = session.settings
    target = Path(str(s.target)).name
    if s.spec is None:
        return f"{target} alone"
    types = getattr(s.spec, "types", ("draft-simple",))
    parts = []
    for t in types:
        if t == "draft-simple":
            parts.append(f"{Path(str(s.draft)).name if s.draft else 'draft'} n_max {s.spec.n_max}")
        else:
            parts.append(t)
    return f"{target} · {' > '.join(parts)}"


def _differences(a, b) -> tuple[str, ...]:
    sa, sb = a.settings, b.settings
    out = []

    def differ(name, va, vb, show=str):
        if va != vb:
            out.append(f"{name} {show(va)} vs {show(vb)}")
    name = lambda p: Path(str(p)).name if p else "none"           # noqa: E731
    differ("target", sa.target, sb.target, name)
    differ("draft", sa.draft if sa.spec else None, sb.draft if sb.spec else None, name)
    spa, spb = sa.spec, sb.spec
    differ("drafters", ",".join(spa.types) if spa else "none", ",".join(spb.types) if spb else "none")
    if spa is not None and spb is not None:
        types = set(spa.types) | set(spb.types)
        for field in ("n_max", "n_min", "p_min", "sync", "draft_policy"):   # where either reads it
            if flag(field).applies(spa) or flag(field).applies(spb):
                differ(field, getattr(spa, field), getattr(spb, field))
        for t in sorted(t for t in types if TYPES[t].params_class is not None):
            differ(t, _params(t, spa.params(t)), _params(t, spb.params(t)))
    differ("sampler", sa.sampler.describe() if hasattr(sa.sampler, "describe") else sa.sampler,
           sb.sampler.describe() if hasattr(sb.sampler, "describe") else sb.sampler)
    differ("n_predict", sa.n_predict, sb.n_predict)
    # no system message is written '' by the window and None by the CLI: the same prompt
    if (sa.prompt, sa.chat, sa.system or "") != (sb.prompt, sb.chat, sb.system or ""):
        out.append("the prompts differ")
    ea, eb = sa.engine, sb.engine
    for field in ("n_ctx", "flash_attn", "kv_type", "target_threads", "draft_threads", "repack"):
        differ(field, getattr(ea, field, None), getattr(eb, field, None))
    return tuple(out)


def _params(t: str, p) -> str:
    """A type's own parameters in a few words (each by its label in the window)."""
    return " ".join(f"{flag(f'{t}.{k}').label or k} {Path(v).name if isinstance(v, str) else v}"
                    for k, v in asdict(p).items() if v != "")


def _side(session) -> Side:
    st = session.run.stats
    hist = st.accepted_hist
    total = sum(hist)
    return Side(label=session_label(session), position_acceptance=st.position_acceptance,
                drafted_at=st.drafted_at,
                accepted_share=tuple(h / total for h in hist) if total else (),
                acceptance_rate=st.acceptance_rate, mean_accepted_length=st.mean_accepted_length,
                tokens_per_s=st.tokens_per_s, speedup=session.speedup, n_rounds=st.n_rounds,
                n_tokens=st.n_tokens)


def compare_sessions(a, b) -> SessionComparison:
    ta, tb = a.run.tokens, b.run.tokens
    same_prompt = tuple(a.prompt_tokens) == tuple(b.prompt_tokens)
    at = None
    if same_prompt:
        at = next((i for i, (x, y) in enumerate(zip(ta, tb)) if x != y), None)
    shared = next_a = next_b = ""
    if at is not None:
        shared = text_of(a.vocab, ta[:at])[-SHOWN_CONTEXT_CHARS:]
        next_a = text_of(a.vocab, ta[at:at + 1])
        next_b = text_of(b.vocab, tb[at:at + 1])
    return SessionComparison(_side(a), _side(b), _differences(a, b), same_prompt, at,
                             shared, next_a, next_b)
