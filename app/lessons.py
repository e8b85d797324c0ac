"""Help ▸ Lessons: nine short lessons on live data from the demo pair (and its EAGLE-3 head).

Each lesson sets the window up (models, drafter, sampler, prompt, the tab to look at), says in
a few sentences what to look at, points at it, and ends with an exercise that ``check`` reads
from the window: the round shown, the session shown (its baseline, its statistics), the cost
panel's sliders and calibration, and the runs made since the lesson opened (``RunNote``). A
check returns (solved, a sentence): why it is right, or what is still missing. The panel that
shows them and keeps the progress is app/lesson_panel.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

CODE_PROMPT = 'def fibonacci(n):\n    """Return the n-th Fibonacci number."""\n'
BREAK_EVEN_F = 0.50            # lesson 4: the draft's cost asked for, and how close the slider must be
F_TOLERANCE = 0.02
BREAK_EVEN_BAND = (1.0, 1.05)  # and the textbook best speed-up asked for
LOW_ACCEPTANCE = 0.30          # lesson 3
MIN_DRAFTED = 20               # a rate read from fewer drafted tokens says little
DRAFTLESS_ACCEPTED = 20        # lesson 5
HOT = 0.5                      # lesson 8: the least temperature at which the two rules differ much


@dataclass(frozen=True)
class RunNote:
    """A run made while a lesson was open: what it ran with and what it measured."""
    kind: str                  # "spec" | "baseline"
    types: tuple[str, ...]
    draft: str                 # the draft slot's file name ("" none)
    n_max: int
    temperature: float
    rule: str                  # the acceptance rule: match | ratio
    tokens_per_s: float
    n_drafted: int
    n_accept: int
    key: int = 0               # id() of its session (is the run shown one of the lesson's?)
    step: bool = False         # a step-mode run: its tokens/s are no speed sample

    @property
    def rate(self) -> float:
        return self.n_accept / self.n_drafted if self.n_drafted else 0.0

    @classmethod
    def of(cls, session, step: bool = False) -> "RunNote":
        s, st = session.settings, session.run.stats
        spec = s.spec
        return cls(session.kind, tuple(spec.types) if spec else (), Path(s.draft).name if s.draft else "",
                   spec.n_max if spec else 0, float(s.sampler.temperature),
                   getattr(spec, "accept_rule", "match") if spec else "", float(st.tokens_per_s),
                   st.n_drafted, st.n_accept, id(session), step)


@dataclass(frozen=True)
class Lesson:
    title: str
    body: str                  # HTML: the idea, and what to look at
    exercise: str              # HTML
    hint: str
    answer: str
    setup: Callable            # (window) -> None: models, settings, the tab
    check: Callable            # (window, [RunNote]) -> (solved, sentence)
    point: Callable            # (window) -> the widget to point at (None: nothing)
    actions: tuple[tuple[str, Callable], ...] = ()   # extra buttons: (label, (window) -> None)


# ------------------------------------------------------------------ setting the window up
def demo_files() -> dict[str, object]:
    from specscope.core.models.demo import demo_eagle3_head, demo_pair
    target, draft = demo_pair()
    return {"target": target, "draft": draft, "head": demo_eagle3_head()}


def use_models(w, draft: str = "draft") -> None:
    """The demo target with ``draft`` ("draft": the demo draft model, "head": its EAGLE-3 head)
    in the draft slot; nothing happens when they are there already (no reload)."""
    files = demo_files()
    want = (files["target"], files[draft])
    if tuple(w.pair_panel.pair()) != want:
        w.pair_panel.set_pair(*want)


def set_sampler(w, temperature: float = 0.0, rule: str = "match") -> None:
    p = w.params
    p.sampler.setCurrentIndex(p.sampler.findData("temperature" if temperature > 0 else "greedy"))
    if temperature > 0:
        p.temperature.setValue(temperature)
    p.accept_rule.setCurrentIndex(p.accept_rule.findData(rule))


def base_setup(w, *, types=("draft-simple",), n_max: int = 4, temperature: float = 0.0,
               n_predict: int = 96, prompt: str = CODE_PROMPT, draft: str = "draft", tab=None) -> None:
    """The common part of a lesson's setup: the demo models, one drafter, greedy or a
    temperature, a short generation after a code prompt, and the tab to look at."""
    use_models(w, draft)
    w.show_workspace("run")
    w.set_left_panel_shown(True)
    w.prompt.chat.setChecked(False)
    w.prompt.set_text(prompt)
    w.params.n_predict.setValue(n_predict)
    w.params.drafter.set_types(list(types))
    w.params.n_max.setValue(n_max)
    set_sampler(w, temperature)
    if tab is not None:
        w.set_tabs_expanded(False)
        w.tabs.setCurrentWidget(tab(w))


def shown(w, notes=None):
    """The session shown, when it is a speculative run (and, given the lesson's ``notes``, one
    made since the lesson opened); else None."""
    s = w.controller.session
    if s is None or s.kind != "spec":
        return None
    return s if notes is None or any(n.key == id(s) for n in notes) else None


# ------------------------------------------------------------------ 1. one batch
def _check_rejection(w, _notes):
    ev = w.round_view.shown_event
    if ev is None:
        return False, "No round is shown yet: press Step (F10) to run one."
    if not ev.drafted:
        return False, (f"Round {ev.index + 1} had no draft (the target decoded one token alone). Press "
                       "Step again.")
    n, k = len(ev.drafted), ev.n_accepted
    if k < n and ev.eog_ends_draft:
        return False, (f"Round {ev.index + 1} ended at an end-of-text token the target took too: nothing "
                       "was rejected. Step on (or press Run again).")
    if k == n:
        return False, (f"In round {ev.index + 1} the target kept all {n} drafted tokens (and added a bonus "
                       "token of its own). Step on until it rejects one.")
    return True, (f"Round {ev.index + 1}: one target decode checked {n} drafted tokens; it kept {k}, and "
                  f"at position {k + 1} its own token replaced the draft's. {k + 1} tokens for one "
                  "pass of the target.")


ONE_BATCH = Lesson(
    "A draft, checked in one batch",
    "<p>A small <b>draft model</b> guesses the next few tokens, one cheap decode each. The "
    "<b>target</b> then decodes the last token and all the guesses in <b>one batch</b>: one pass "
    "over its weights scores every position. Where reading the weights is the cost (a GPU, a "
    "large model) a batch of five costs little more than one token; on a small CPU it can cost "
    "two or three (the Cost model tab's calibration measures it here).</p>"
    "<p>At each position the target picks its own token. The guesses are kept while they equal "
    "it; at the first mismatch the target's token replaces the guess and the round ends. When all "
    "are kept, the last position gives a <b>bonus</b> token.</p>"
    "<p><b>Look at</b> the Round tab. <i>n_past</i> is how many positions both caches hold; the "
    "<i>seed</i> (<i>id_last</i>) is the last token, sampled but not yet decoded, so it goes first "
    "into the batch; ✓ marks a guess the target agreed with, ✗ its own token where it did not; "
    "the last row shows the <i>KV rows</i> each cache keeps or drops (a rejected guess's row is "
    "dropped). Hover any word for its meaning.</p>",
    "Press <b>Step</b> until the round shown has a rejected drafted token (✗, struck through in "
    "the text), leave it on screen and press Check.",
    "The draft agrees with the target on predictable code; it misses where the code could go two "
    "ways. Each Step runs one round.",
    "With the prompt set up here a rejection comes within the first few rounds: keep pressing "
    "Step (F10) until the picture shows ✗ under a position.",
    lambda w: base_setup(w, tab=lambda w: w.round_view),
    _check_rejection,
    lambda w: w.run_toolbar.widgetForAction(w.act_step))


# ------------------------------------------------------------------ 2. the target's own output
def _check_same_text(w, notes):
    s = shown(w, notes)
    if s is None:
        return False, "Press Run first (in this lesson): the pair's run must be the one shown."
    if s.run.stats.n_drafted == 0:
        return False, "The run shown drafted nothing: run it with a drafter that drafts."
    if s.baseline is None:
        return False, "Now press Baseline: the target alone, with the same prompt and settings."
    a, b = s.spec.tokens, s.baseline.tokens
    if a == b:
        speed = s.speedup
        at = f" ({speed:.2f}× the target alone here)" if speed else ""
        return True, (f"The same {len(a)} tokens, with and without the draft: the draft changed how "
                      f"many tokens came out of each target pass{at}, never which.")
    at = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
    if at == min(len(a), len(b)):
        return False, (f"The two texts agree as far as both go, but one run stopped early ({len(a)} "
                       f"tokens against {len(b)}): run both to the end.")
    if s.settings.sampler.temperature > 0:
        return False, (f"The two texts part at token {at}: at temperature each run draws its own "
                       "sample. Set the sampler to greedy and run both again.")
    return False, (f"The two texts part at token {at}. With greedy sampling that is a numerical "
                   "near-tie between two tokens (a batch sums in another order); run both again.")


TARGETS_OWN = Lesson(
    "The output is the target's own",
    "<p>Every token written is one the target chose: a kept guess equals the target's own pick "
    "at that position, and a rejected one is replaced by it. With greedy sampling the text is "
    "therefore exactly what the target alone would write; the draft only decides how many tokens "
    "one pass of the target yields. (At temperature the same holds for the distribution of the "
    "text: lesson 8.)</p>"
    "<p><b>Look at</b> the colours of the text (the legend above it names them): drafted tokens "
    "the target kept, and the target's own tokens (a replacement or the bonus). The stats bar "
    "gives the speed-up once the target alone has run.</p>",
    "Press <b>Run</b>, then <b>Baseline</b> (the target alone, the same prompt and settings), and "
    "press Check: it compares the two texts token by token.",
    "Baseline runs the target without a draft and keeps the result beside the run shown.",
    "Run (Ctrl+R), wait for the end, Baseline (Ctrl+B): the texts are equal and the stats bar "
    "shows the speed-up.",
    lambda w: base_setup(w, tab=lambda w: w.plots),
    _check_same_text,
    lambda w: w.run_toolbar.widgetForAction(w.act_baseline))


# ------------------------------------------------------------------ 3. acceptance by position
def _check_low_acceptance(w, notes):
    s = shown(w, notes)
    if s is None:
        return False, "Run the pair (in this lesson) first: the check reads the run shown."
    st = s.run.stats
    if st.n_drafted < MIN_DRAFTED:
        return False, (f"The run shown drafted {st.n_drafted} tokens: a rate needs at least "
                       f"{MIN_DRAFTED} (generate more tokens).")
    rate = st.n_accept / st.n_drafted
    if rate >= LOW_ACCEPTANCE:
        return False, (f"The target kept {rate:.0%} of the {st.n_drafted} drafted tokens: find "
                       f"settings where it keeps less than {LOW_ACCEPTANCE:.0%}.")
    return True, (f"The target kept {rate:.0%} of {st.n_drafted} drafted tokens. The plot shows "
                  "where they were lost: few drafts even reach the later positions, since one "
                  "rejection ends the round.")


BY_POSITION = Lesson(
    "Acceptance by position",
    "<p>Position 1 of a draft is checked in every round; position 2 only when position 1 was "
    "kept, and so on: one rejection ends the round. If the target keeps each guess with the same "
    "chance α, a draft of n tokens keeps on average α + α² + … + αⁿ of them: the <b>geometric "
    "model</b> of the Cost model tab.</p>"
    "<p><b>Look at</b> the Plots tab's <i>acceptance by draft position</i>: of the drafts that "
    "reached position k, the share the target kept (the numbers are kept / drafted). The "
    "acceptance rate (kept ÷ drafted) in the stats bar is lower than α, because the tokens after a "
    "rejection count as drafted and lost.</p>",
    f"Find settings (a prompt, the sampler, n_max) where the acceptance rate falls below "
    f"{LOW_ACCEPTANCE:.0%} on a run that drafted at least {MIN_DRAFTED} tokens, and Check.",
    "The draft guesses the target's most likely token. What makes the target pick something "
    "else?",
    "Set the sampler to temperature 1.0 and Run: with llama.cpp's match rule the target keeps "
    "about one guess in ten, since its own sample often differs from the draft's best guess.",
    lambda w: base_setup(w, n_max=3, tab=lambda w: w.plots),
    _check_low_acceptance,
    lambda w: w.plots.acceptance.widget)


# ------------------------------------------------------------------ 4. the cost of a draft
def _check_break_even(w, _notes):
    c = w.cost_panel
    if abs(c.f - BREAK_EVEN_F) > F_TOLERANCE:
        return False, f"Set f to {BREAK_EVEN_F:.2f} first (it is {c.f:.2f})."
    n, best = c.best_point()
    best = round(best, 2)                # as it is shown: 1.0501 reads 1.05, inside the band
    lo, hi = BREAK_EVEN_BAND
    if best > hi:
        return False, (f"At α = {c.alpha:.2f} the best draft (n = {n}) still gives {best:.2f}×: move "
                       "α lower.")
    if best < lo:
        return False, (f"At α = {c.alpha:.2f} no draft length pays ({best:.2f}× at best): move α "
                       "higher, to where it just pays.")
    return True, (f"At f = {c.f:.2f} the draft must be kept about half the time (α = {c.alpha:.2f}) "
                  f"just to break even, and then only one token is worth drafting (n = {n}, "
                  f"{best:.2f}×). A 0.5B draft for a 1.5B target on a small CPU sits near here.")


DRAFT_COST = Lesson(
    "What a draft costs",
    "<p>Drafting is not free. If a drafted token costs <b>f</b> of a target token, a round of n "
    "guesses costs 1 + n·f target passes and yields 1 + α + … + αⁿ tokens on average; the "
    "speed-up is their ratio. On a GPU a small draft costs a few percent of the target "
    "(f ≈ 0.05). On a CPU both models wait on the same memory, so a draft costs about its share "
    "of the target's weights: a 0.5B draft for a 1.5B target has f ≈ 0.3–0.5.</p>"
    "<p><b>Look at</b> the Cost model tab: the textbook curve for the α and f on the sliders, its "
    "best n (the star), and the sentence under it.</p>",
    f"Set f to {BREAK_EVEN_F:.2f}, then move α until the best speed-up is only just worth it: "
    f"between {BREAK_EVEN_BAND[0]:.2f}× and {BREAK_EVEN_BAND[1]:.2f}×. Check.",
    "With one drafted token a round costs 1 + f and yields 1 + α tokens: when is (1 + α) / (1 + f) "
    "above 1?",
    "f = 0.50 and α between 0.50 and 0.57: only n = 1 pays, by at most 5 %.",
    lambda w: (base_setup(w, tab=lambda w: w.cost_tab), w.cost_tab.cost_panel.use_measured()),
    _check_break_even,
    lambda w: w.cost_panel.f_slider)


# ------------------------------------------------------------------ 5. no draft model
def _check_draftless(w, notes):
    from specscope.core.engine.drafters.registry import spec_type
    s = shown(w, notes)
    if s is None:
        return False, "Run first (in this lesson): the check reads the run shown."
    types = tuple(s.settings.spec.types)
    with_model = [t for t in types if spec_type(t).uses_md or spec_type(t).reads_target]
    if with_model:
        return False, (f"The run shown drafted with {', '.join(with_model)}, which needs a model: "
                       "choose only drafters that need none.")
    st = s.run.stats
    if st.n_accept < DRAFTLESS_ACCEPTED:
        return False, (f"{', '.join(types)} had {st.n_accept} drafted tokens kept: find a prompt where "
                       f"it gets at least {DRAFTLESS_ACCEPTED}.")
    return True, (f"{', '.join(types)} had {st.n_accept} of {st.n_drafted} drafted tokens kept with no "
                  "draft model at all: its drafts cost a lookup, not a decode.")


DRAFTLESS = Lesson(
    "Drafters without a draft model",
    "<p>An <b>n-gram drafter</b> needs no second model: it looks up the last few tokens in the "
    "text so far (the prompt and the reply) and proposes what followed them there before. A "
    "lookup costs microseconds, so f is almost 0 and a wrong guess costs only a wider target "
    "batch. It wins where text repeats: code that reuses its names, an edit of a quoted document, "
    "a list. <b>suffix</b> (vLLM) keeps a suffix tree of the text; <b>lookahead</b> lets the "
    "target guess its own n-grams.</p>"
    "<p><b>Look at</b> the drafter box: ngram-simple is checked and no draft model is needed; "
    "hover a token in the text to see where its guess was copied from.</p>",
    f"With only drafters that need no model, make a run in which the target keeps at least "
    f"{DRAFTLESS_ACCEPTED} drafted tokens, and Check.",
    "A lookup can only propose what the text already holds: the prompt has to repeat itself, or "
    "ask for something that does.",
    "Write a prompt that repeats a few lines (the same two functions three times) and choose "
    "suffix, which counts every continuation it has seen: about 50 of its guesses are kept.",
    lambda w: base_setup(w, types=("ngram-simple",), tab=lambda w: w.plots),
    _check_draftless,
    lambda w: w.params.drafter.checks["ngram-simple"])


# ------------------------------------------------------------------ 6. a tree
def _check_tree(w, _notes):
    ev = w.round_view.shown_event
    if ev is None or ev.tree is None:
        return False, "No tree round is shown: press Step (F10) with draft-tree set up."
    tree = ev.tree
    if len(tree.branches) < 2:
        return False, (f"Round {ev.index + 1}'s tree did not split (one branch): the draft was sure of "
                       "every token. Step on.")
    from .tree_view import mismatch
    if mismatch(ev) >= 0:
        return False, (f"Round {ev.index + 1} shows llama-speculative's slip (the words under the "
                       "picture explain it): its kept branch is not the path the text took. "
                       "Step on to a round whose kept branch is the path taken.")
    a = ev.n_accepted
    first = tree.branches[0]
    if a == 0 or list(ev.emitted[:a]) == list(first[:a]):
        return False, (f"In round {ev.index + 1} the tokens the target kept ({a}) are the draft's first "
                       f"choices (branch 0's), so a chain would have done as well. Step on.")
    return True, (f"Round {ev.index + 1}: {len(tree.branches)} branches, {tree.nodes} drafted tokens in one "
                  f"verification batch; the target kept {a} token{'s' if a != 1 else ''} along branch "
                  f"{tree.kept}, off the draft's first choices: a single chain of them would have "
                  "lost at the split.")


TREE = Lesson(
    "A tree of drafts",
    "<p>Where the draft is unsure between two tokens, one chain of guesses bets on one of them. "
    "llama.cpp's <b>llama-speculative</b> (SpecScope's <b>draft-tree</b>) drafts a <b>tree</b> "
    "instead: where a runner-up token holds more than p_split of the draft's probability, a new "
    "branch starts with it. The target verifies every branch in one batch (each branch is a "
    "sequence of its cache, sharing the rows before its split) and keeps the branch it agrees with "
    "longest. More rows in the batch cost more, so a tree pays where the draft is often torn "
    "between two tokens: at temperature, on varied text.</p>"
    "<p><b>Look at</b> the Round tab: each branch on its own row, where it split off, the kept "
    "branch marked, and the words below.</p>",
    "Press <b>Step</b> until the target keeps tokens off branch 0 (the draft's first choices), "
    "and Check.",
    "Branches appear where the draft hesitates; at temperature the target's own sample picks "
    "among them. Each Step runs one round.",
    "With the setup here (temperature 0.8, up to 4 branches) a round that keeps branch 1 or later "
    "comes within the first ten or so rounds. A round whose words say \"llama-speculative's "
    "slip\" does not count: there llama.cpp kept a branch that is not the path the text took "
    "(a flaw of llama-speculative that SpecScope mirrors and shows).",
    lambda w: (base_setup(w, types=("draft-tree",), temperature=0.8, tab=lambda w: w.round_view),
               w.params.drafter.np["draft-tree"].setValue(4)),
    _check_tree,
    lambda w: w.params.drafter.np["draft-tree"])


# ------------------------------------------------------------------ 7. heads
def _faster(notes, a, b, key, same):
    """The latest runs of types ``a`` and ``b`` whose ``same`` fields agree, and the one higher by ``key``."""
    runs = {}
    for n in notes:
        if n.kind == "spec" and not n.step and n.types in (a, b):
            runs[n.types] = n
    if len(runs) < 2 or any(getattr(runs[a], f) != getattr(runs[b], f) for f in same):
        return None
    return runs[a], runs[b], (a if key(runs[a]) >= key(runs[b]) else b)


def _check_heads(w, notes):
    head, model = ("draft-eagle3",), ("draft-simple",)
    got = _faster(notes, head, model, lambda n: n.tokens_per_s, ("n_max",))
    if got is None:
        return False, ("Run the EAGLE-3 head and the draft model once each, at the same n_max (the "
                       "buttons put each in the draft slot).")
    h, m, best = got
    chosen = tuple(w.params.drafter.types())
    words = {head: "the EAGLE-3 head", model: "the draft model"}
    said = (f"The head ran at {h.tokens_per_s:,.0f} tokens/s and kept {h.rate:.0%} of its guesses; "
            f"the draft model {m.tokens_per_s:,.0f} tokens/s, {m.rate:.0%}.")
    if chosen != best:
        return False, f"{said} Select the faster one in the drafter box."
    return True, (f"{said} {words[best][0].upper() + words[best][1:]} is faster here. A head guesses "
                  "from what the target computed, so it is kept more often; whether that pays "
                  "depends on what its decode costs beside the target's.")


HEADS = Lesson(
    "Heads that read the target's hidden states",
    "<p>An <b>EAGLE-3 head</b> is one small layer trained to read three of the target's own "
    "hidden states at the last position and guess the next tokens from them. It sees what the "
    "target computed, so its guesses are kept more often than a separate small model's; it is one "
    "layer, not a whole model, but each of its guesses is still a decode. SpecScope ships one for the demo "
    "target; DFlash heads draft a whole block in one decode, and some targets carry MTP blocks "
    "that do the same job.</p>"
    "<p><b>Look at</b> the acceptance plot and the speed in the stats bar, for each.</p>",
    "Run the EAGLE-3 head, then the draft model, at the same n_max (the buttons put each in the "
    "draft slot). Select the one that ran faster (tokens/s) in the drafter box, and Check.",
    "The stats bar shows tokens/s after each run; the acceptance rate beside it. A run just "
    "after a model loaded can lose time in its first round: when the two are close, run each "
    "again (the check reads the latest run of each).",
    "On this machine's CPU the demo target is so small that the head's decode costs nearly as much "
    "as the target's: the draft model is usually faster although the head is kept more often. "
    "Select draft-simple (or whichever ran faster here).",
    lambda w: base_setup(w, types=("draft-eagle3",), draft="head", tab=lambda w: w.plots),
    _check_heads,
    lambda w: w.params.drafter.checks["draft-eagle3"],
    actions=(("Put the EAGLE-3 head in the draft slot",
              lambda w: (use_models(w, "head"), w.params.drafter.set_types(["draft-eagle3"]))),
             ("Put the draft model in the draft slot",
              lambda w: (use_models(w, "draft"), w.params.drafter.set_types(["draft-simple"])))))


# ------------------------------------------------------------------ 8. sampling
def _check_rules(w, notes):
    hot = [n for n in notes if n.kind == "spec" and n.temperature >= HOT and n.n_drafted >= MIN_DRAFTED]
    by_rule = {n.rule: n for n in hot}
    if len(by_rule) < 2 or any(getattr(by_rule["match"], f) != getattr(by_rule["ratio"], f)
                               for f in ("temperature", "types", "n_max")):
        return False, (f"Run at a temperature of {HOT} or more once with each acceptance rule (match, "
                       f"then ratio), with the same temperature, drafter and n_max, each drafting at "
                       f"least {MIN_DRAFTED} tokens.")
    m, r = by_rule["match"], by_rule["ratio"]
    best = "match" if m.rate > r.rate else "ratio"
    said = (f"At temperature {m.temperature:.2f} match kept {m.rate:.0%} of its guesses, ratio "
            f"{r.rate:.0%}.")
    if w.params.accept_rule.currentData() != best:
        return False, f"{said} Select the rule that kept more."
    return True, (f"{said} Both give text drawn from the target's own distribution; ratio keeps a "
                  "guess with probability min(1, p/q) instead of waiting for the target's sample to "
                  "land on the draft's best guess.")


SAMPLING = Lesson(
    "Sampling, and the two acceptance rules",
    "<p>At temperature the target samples, and a guess cannot simply be compared with its "
    "argmax. llama.cpp's rule (<b>match</b>) draws the target's token and keeps the guess when it "
    "is the same token: the draft's best guess is kept with the target's probability p of it. "
    "<b>Speculative sampling</b> (<b>ratio</b>, Leviathan et al. 2023) lets the draft sample "
    "from its own distribution q, keeps a guess with probability min(1, p/q) and otherwise "
    "draws from what p has left over. Both rules give text with exactly the target's "
    "distribution; they differ in how many guesses survive.</p>"
    "<p><b>Look at</b> the acceptance plot: at temperature a dashed curve shows the other rule's "
    "expected acceptance on the same drafts.</p>",
    "At temperature 1.0 (set up), Run once with accept: match and once with accept: ratio. Select "
    "the rule that kept more of its guesses, and Check.",
    "The rule is the 'accept' box under the sampler; the acceptance rate is in the stats bar.",
    "On the demo pair ratio keeps roughly 30 % against match's 10 %: select ratio (or whichever "
    "kept more in your runs).",
    lambda w: (base_setup(w, temperature=1.0, tab=lambda w: w.plots), set_sampler(w, 1.0, "match")),
    _check_rules,
    lambda w: w.params.accept_rule)


# ------------------------------------------------------------------ 9. this machine
def _check_calibrated_n(w, _notes):
    c = w.cost_panel
    if c.measured is None:
        return False, "Run the pair first: the calibrated curve needs the run's α."
    values = c.calibrated_values()
    if not values:
        return False, "Press 'Calibrate on this machine' in the Cost model tab, and wait for it."
    best = max(values, key=values.get)
    n = w.params.n_max.value()
    if n not in values:
        return False, f"The calibration covers n = 1 to {max(values)}: set n_max within it."
    if values[n] < values[best] - 0.005:
        return False, (f"At n_max = {n} the calibrated curve predicts {values[n]:.2f}×; somewhere "
                       "else it is higher.")
    pays = "drafting pays" if values[n] >= 1.0 else "even the best length loses to the target alone"
    return True, (f"n_max = {n}: {values[n]:.2f}× predicted from this machine's own costs at α = "
                  f"{c.alpha:.2f}, and {pays} here. The textbook curve would have said n = "
                  f"{c.best_point()[0]}.")


THIS_MACHINE = Lesson(
    "Choosing for your machine",
    "<p>The textbook curve uses one number, f, for a draft's cost. A real machine is not that "
    "simple: a batch of k tokens costs more than one token and less than k, each decode has a "
    "fixed cost, and the draft and target compete for the same cores. <b>Calibrate</b> times "
    "this machine's own decodes (single and batched) and draws the curve they predict at the "
    "run's α. That curve, not the textbook's, says which n_max to use here, and whether drafting "
    "pays at all. The Advisor workspace (Ctrl+4) does the same for every drafter on your prompts."
    "</p><p><b>Look at</b> the Cost model tab: the calibrated curve beside the textbook one, and "
    "the sentence under them.</p>",
    "Run the pair (for α), press <b>Calibrate on this machine</b>, then set n_max to where the "
    "calibrated curve is highest, and Check.",
    "The sentence under the plot names the calibrated best n after 'Calibrated on this machine'.",
    "After calibrating, the sentence under the plot goes on 'Calibrated on this machine … at n = N "
    "(best)': set n_max to that N (the textbook's best comes earlier in the sentence).",
    lambda w: (base_setup(w, tab=lambda w: w.cost_tab), w.cost_tab.cost_panel.use_measured()),
    _check_calibrated_n,
    lambda w: w.cost_panel.calibrate_button)


LESSONS: tuple[Lesson, ...] = (ONE_BATCH, TARGETS_OWN, BY_POSITION, DRAFT_COST, DRAFTLESS, TREE,
                               HEADS, SAMPLING, THIS_MACHINE)
