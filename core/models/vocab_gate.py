"""llama.cpp's vocabulary gate (``common_speculative_are_compatible``): can a draft draft for a target?

The four rules of ``common_speculative_are_compatible`` (common/speculative.cpp), applied to
the values llama.cpp itself reports for two loaded vocabularies (a vocab-only load is enough).
The engine runs :func:`vocab_rules` on its loaded pair and refuses a pair that fails; the pair
doctor (:mod:`specscope.core.measure.doctor.pair`) reports the same rules with the rest of its findings.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import llama_cpp.llama_cpp as ll

from specscope.core.errors import ModelFileError
from specscope.core.models.gguf_file import quote_text

# common/speculative.cpp
SPEC_VOCAB_MAX_SIZE_DIFFERENCE = 128
SPEC_VOCAB_CHECK_START_TOKEN_ID = 5

# llama.h enum llama_vocab_type
LLAMA_VOCAB_TYPE_NONE = 0
VOCAB_TYPE_NAMES = {0: "none", 1: "SPM", 2: "BPE", 3: "WPM", 4: "UGM", 5: "RWKV", 6: "PLaMo-2", 7: "TEST"}


@dataclass(frozen=True)
class Rule:
    """One of llama.cpp's vocabulary rules, applied to a target/draft pair."""

    name: str
    passed: bool
    values: dict[str, Any]
    message: str


@dataclass(frozen=True)
class VocabFacts:
    """What llama.cpp says about one vocabulary."""

    type_id: int
    type_name: str
    n_tokens: int
    bos: int
    eos: int
    add_bos: bool
    add_eos: bool


def _ll():

    return ll


def vocab_facts(vocab_ptr) -> VocabFacts:
    ll = _ll()
    t = int(ll.llama_vocab_type(vocab_ptr))
    return VocabFacts(
        type_id=t,
        type_name=VOCAB_TYPE_NAMES.get(t, f"type {t}"),
        n_tokens=int(ll.llama_vocab_n_tokens(vocab_ptr)),
        bos=int(ll.llama_vocab_bos(vocab_ptr)),
        eos=int(ll.llama_vocab_eos(vocab_ptr)),
        add_bos=bool(ll.llama_vocab_get_add_bos(vocab_ptr)),
        add_eos=bool(ll.llama_vocab_get_add_eos(vocab_ptr)),
    )


def first_text_mismatch(target_vocab_ptr, draft_vocab_ptr, n: int,
                        start: int = SPEC_VOCAB_CHECK_START_TOKEN_ID) -> tuple[int, bytes, bytes] | None:
    """The first id in [start, n) whose text (llama_vocab_get_text) differs, with both texts.

    Compares like llama.cpp's strcmp: the C strings up to their first NUL.
    """
    get_text = _ll().llama_vocab_get_text
    for i in range(start, n):
        a = get_text(target_vocab_ptr, i)
        b = get_text(draft_vocab_ptr, i)
        if a != b:
            return i, a or b"", b or b""
    return None


def _yn(flag: bool) -> str:
    return "yes" if flag else "no"


def rules_from_facts(t: VocabFacts, d: VocabFacts,
                     mismatch: tuple[int, bytes, bytes] | None) -> list[Rule]:
    """The four rules of common_speculative_are_compatible, given both sides' facts.

    Unlike llama.cpp, which stops at the first failure, every rule is evaluated,
    so a report shows all the reasons at once; the pair is compatible exactly
    when all pass, which is when llama.cpp accepts it.
    """
    rules: list[Rule] = []

    # 1. vocabulary type
    ok = t.type_id == d.type_id
    rules.append(Rule(
        name="vocabulary type",
        passed=ok,
        values={"target": t.type_name, "draft": d.type_name},
        message=(f"vocabulary types match ({t.type_name})" if ok else
                 f"vocabulary types differ (target {t.type_name}, draft {d.type_name}); "
                 "llama.cpp requires the same tokenizer kind"),
    ))

    # 2. BOS and EOS: the add flags, and the ids when the token is added
    bos_ok = t.add_bos == d.add_bos and (not t.add_bos or t.bos == d.bos)
    eos_ok = t.add_eos == d.add_eos and (not t.add_eos or t.eos == d.eos)
    problems = []
    if t.add_bos != d.add_bos:
        problems.append(f"the target {'adds' if t.add_bos else 'does not add'} BOS and the draft "
                        f"{'does' if d.add_bos else 'does not'} (BOS ids {t.bos} and {d.bos})")
    elif not bos_ok:
        problems.append(f"BOS ids differ (target {t.bos}, draft {d.bos})")
    if t.add_eos != d.add_eos:
        problems.append(f"the target {'adds' if t.add_eos else 'does not add'} EOS and the draft "
                        f"{'does' if d.add_eos else 'does not'} (EOS ids {t.eos} and {d.eos})")
    elif not eos_ok:
        problems.append(f"EOS ids differ (target {t.eos}, draft {d.eos})")
    if problems:
        msg = "; ".join(problems) + "; llama.cpp requires the same add flags and, where added, the same ids"
    else:
        msg = (f"BOS and EOS agree (add BOS {_yn(t.add_bos)}, BOS id {t.bos}"
               + ("" if t.bos == d.bos else f"/{d.bos}")
               + f"; add EOS {_yn(t.add_eos)}, EOS id {t.eos}"
               + ("" if t.eos == d.eos else f"/{d.eos}") + ")")
    rules.append(Rule(
        name="BOS/EOS",
        passed=bos_ok and eos_ok,
        values={
            "target_add_bos": t.add_bos, "draft_add_bos": d.add_bos,
            "target_bos": t.bos, "draft_bos": d.bos,
            "target_add_eos": t.add_eos, "draft_add_eos": d.add_eos,
            "target_eos": t.eos, "draft_eos": d.eos,
        },
        message=msg,
    ))

    # 3. vocabulary size
    diff = abs(t.n_tokens - d.n_tokens)
    ok = diff <= SPEC_VOCAB_MAX_SIZE_DIFFERENCE
    sizes = f"target {t.n_tokens:,}, draft {d.n_tokens:,}"
    if diff == 0:
        msg = f"vocabulary sizes are equal ({t.n_tokens:,} tokens)"
    elif ok:
        msg = (f"vocabulary sizes differ by {diff} tokens ({sizes}); "
               f"llama.cpp allows up to {SPEC_VOCAB_MAX_SIZE_DIFFERENCE}")
    else:
        msg = (f"vocabulary sizes differ by {diff:,} tokens ({sizes}); "
               f"llama.cpp allows at most {SPEC_VOCAB_MAX_SIZE_DIFFERENCE}")
    rules.append(Rule(
        name="vocabulary size",
        passed=ok,
        values={"target": t.n_tokens, "draft": d.n_tokens, "difference": diff,
                "allowed": SPEC_VOCAB_MAX_SIZE_DIFFERENCE},
        message=msg,
    ))

    # 4. token text from id 5 on
    n_common = min(t.n_tokens, d.n_tokens)
    start = SPEC_VOCAB_CHECK_START_TOKEN_ID
    if mismatch is None:
        rules.append(Rule(
            name="token text",
            passed=True,
            values={"first_different_id": None, "checked_from": start, "checked_to": n_common},
            message=(f"token texts are identical for ids {start}..{n_common - 1}"
                     if n_common > start else "no token ids to compare"),
        ))
    else:
        i, a, b = mismatch
        ta, tb = escape_token_text(a), escape_token_text(b)
        rules.append(Rule(
            name="token text",
            passed=False,
            values={"first_different_id": i, "target_text": ta, "draft_text": tb,
                    "checked_from": start, "checked_to": n_common},
            message=f"token {i} differs (target {ta}, draft {tb}); llama.cpp requires identical "
                    f"texts from id {start} on",
        ))
    return rules


NO_TOKENIZER = ("this GGUF file has no tokenizer (tokenizer.ggml.model is missing, 'none' or "
                "'no_vocab', or there are no tokenizer.ggml.tokens), so it cannot tokenize a prompt "
                "or be paired")


def require_vocabulary(model) -> None:
    """Refuse a loaded model whose vocabulary llama.cpp reports as type none: every
    token-level call into it (texts, attributes, tokenizing) ends in a GGML_ASSERT that
    aborts the process."""
    if int(_ll().llama_vocab_type(model.vocab)) == LLAMA_VOCAB_TYPE_NONE:
        raise ModelFileError(str(model.path), NO_TOKENIZER)


def vocab_rules(target_vocab_ptr, draft_vocab_ptr) -> list[Rule]:
    """Apply llama.cpp's vocabulary rules to two already-loaded ``llama_vocab`` pointers.

    Returns four :class:`Rule` objects (vocabulary type, BOS/EOS, vocabulary
    size, token text); the pair is compatible when all pass. Token texts are not
    compared when either side has no vocabulary (type none: llama.cpp asserts).
    """
    t = vocab_facts(target_vocab_ptr)
    d = vocab_facts(draft_vocab_ptr)
    mismatch = None
    if LLAMA_VOCAB_TYPE_NONE not in (t.type_id, d.type_id):
        mismatch = first_text_mismatch(target_vocab_ptr, draft_vocab_ptr, min(t.n_tokens, d.n_tokens))
    return rules_from_facts(t, d, mismatch)


def escape_token_text(raw: bytes) -> str:
    """A token's text in double quotes, with control, invisible and invalid bytes escaped."""
    return quote_text(raw, '"')
