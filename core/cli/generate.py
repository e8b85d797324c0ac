"""``specscope run``, ``baseline`` and ``replay``: a generation, headless, and what it prints."""

from __future__ import annotations

import json
import sys
from collections import Counter

from specscope.core.cli.args import (chat_prompt, engine_settings, note_unused_flags, output_path,
                                     read_prompt, resolve_models, sampler_settings, write_or_say)
from specscope.core.cli.spec import spec_from_args
from specscope.core.engine.engine import Engine
from specscope.core.engine.events import Prefill
from specscope.core.engine.synth import WARNING, describe
from specscope.core.errors import SpecScopeError
from specscope.core.measure.cost.calibrate import policy_calibration
from specscope.core.measure.stats import TREE_WIDTHS
from specscope.core.models.probe import guard
from specscope.core.models.tokentext import TextStream
from specscope.core.session.baseline_check import check_baseline, load_gap_limit
from specscope.core.session.session import RunRecord, RunSettings, Session


def summary_lines(stats, prefill, finish: str, speculative: bool, events=()) -> list[str]:
    lines = [f"prompt:    {len(prefill.tokens)} tokens in {prefill.seconds * 1e3:.1f} ms",
             f"generated: {stats.n_tokens} tokens in {stats.t_total:.3f} s = "
             f"{stats.tokens_per_s:.1f} tokens/s ({stats.n_rounds} rounds, stopped by {finish})"]
    if stats.threads:
        lines.append(f"threads:   {stats.threads_text}")
    if speculative:
        per_pos = "  ".join(f"{p:.2f}" for p in stats.position_acceptance) or "-"
        lines += [f"n_drafted: {stats.n_drafted}",
                  f"n_accept:  {stats.n_accept}",
                  f"accept:    {100 * stats.acceptance_rate:.1f}%",
                  f"mean accepted length: {stats.mean_accepted_length:.2f} tokens per round that "
                  f"drafted ({stats.n_draft_rounds} of {stats.n_rounds})",
                  f"acceptance by draft position: {per_pos}",
                  *counterfactual_lines(stats),
                  *tree_lines(stats.tree),
                  *drafted_tree_lines(events),
                  *drafter_lines(stats),
                  *([f"n-gram lookups: {stats.t_lookup * 1e3:.2f} ms "
                     f"({1e6 * stats.t_lookup / max(1, stats.n_rounds):.0f} µs per round)"]
                    if stats.t_lookup and any(d.name != "draft-simple" for d in stats.by_drafter)
                    else []),
                  f"time: draft {stats.t_draft:.3f} s, verify {stats.t_verify:.3f} s, "
                  f"sync {stats.t_sync:.3f} s, "
                  + (f"translate {stats.t_translate:.3f} s, " if stats.t_translate else "")
                  + f"outside llama.cpp {stats.t_overhead:.3f} s "
                  f"({100 * stats.overhead_share:.1f}%)"]
    return lines


def vocab_lines(events) -> list[str]:
    """Drafting across vocabularies (core/engine/drafters/xvocab.py): the mode, and what it cost
    per round (the translation's Python time; the draft's own decodes are in "draft")."""
    modes = Counter(e.xvocab.mode for e in events if e.xvocab)
    if not modes:
        return []
    rounds = [e for e in events if e.mode in ("spec", "plain")]
    drafted = sum(len(e.drafted) for e in events if e.xvocab)
    t = sum(e.t_translate for e in events)
    return [f"vocabulary: drafted across vocabularies with "
            + ", ".join(f"--spec-vocab {m} ({n} rounds)" for m, n in modes.items())
            + f"; translation {1e6 * t / max(1, len(rounds)):.0f} µs per round, "
            f"{1e6 * t / max(1, drafted):.0f} µs per drafted target token"]


def counterfactual_lines(stats) -> list[str]:
    """At temperature: the other acceptance rule's expected acceptance on the same drafts."""
    if not stats.cf_rule:
        return []
    per_pos = "  ".join(f"{p:.2f}" for p in stats.counterfactual_acceptance)
    what = ("speculative sampling's (--accept-rule ratio)" if stats.cf_rule == "ratio"
            else "llama.cpp's (--accept-rule match)")
    return [f"counterfactual: {what} expected acceptance by draft position on the same "
            f"drafts: {per_pos}"]


def tree_lines(tree) -> list[str]:
    """Tree headroom (core/measure/stats.py): the rank histogram and the width-w acceptance."""
    if not tree.n_drafted:
        return []
    hist = " ".join(f"{r + 1}:{c}" for r, c in enumerate(tree.rank_hist[:-1]))
    widths = ", ".join(f"w={w} {100 * tree.acceptance(w):.1f}%"
                       + (f" (measured {100 * tree.floor(w):.1f}%)" if w > 1 else "")
                       for w in TREE_WIDTHS)
    return [f"target's token as the draft's k-th choice (up to the first rejection): {hist} "
            f">10:{tree.rank_hist[-1]}",
            f"a width-w draft tree would accept: {widths}"]


def drafted_tree_lines(events) -> list[str]:
    """A run that verified trees (llama-speculative's, a suffix tree's): how wide they were and which
    branch was kept."""
    trees = [e.tree for e in events if e.tree is not None]
    if not trees:
        return []
    widths = Counter(len(t.branches) for t in trees)
    split_kept = sum(t.kept > 0 for t in trees)
    return [f"draft tree: {len(trees)} trees, branches per tree "
            + " ".join(f"{w}:{c}" for w, c in sorted(widths.items()))
            + f"; {sum(t.nodes for t in trees)} tokens verified in them "
            + (f"(n_drafted counts the draft's {steps} decodes, as llama-speculative); "
               if (steps := sum(t.steps for t in trees)) else "(n_drafted counts the kept branches' tokens); ")
            + f"a split-off branch was kept in {split_kept}"]


def policy_lines(session) -> list[str]:
    """The draft lengths an adaptive draft-length policy chose (core/engine/draft_policy.py)."""
    spec = session.settings.spec
    if spec is None or spec.draft_policy == "fixed" or not spec.uses_draft_model:
        return []
    rounds = [e for e in session.run.events if e.draft_limit]
    # cost chooses while it drafts: the lengths it drafted (0: it dropped the first token)
    chosen = Counter(len(e.drafted) if spec.draft_policy == "cost" else e.draft_limit for e in rounds)
    return [f"draft policy {spec.draft_policy}: rounds per draft length "
            + " ".join(f"{n}:{c}" for n, c in sorted(chosen.items()))]


def drafter_lines(stats) -> list[str]:
    """One line per drafter that drafted (only when there were several, or an n-gram type)."""
    if not stats.by_drafter or [d.name for d in stats.by_drafter] == ["draft-simple"]:
        return []
    lines = []
    for d in stats.by_drafter:
        per_pos = " ".join(f"{p:.2f}" for p in d.position_acceptance[:12])
        more = " ..." if len(d.position_acceptance) > 12 else ""
        lines.append(f"  {d.name:<14} {d.n_draft_rounds} drafts, {d.n_accept}/{d.n_drafted} "
                     f"accepted ({100 * d.acceptance_rate:.1f}%), mean accepted length "
                     f"{d.mean_accepted_length:.2f}; by position {per_pos}{more}")
    return lines


def cmd_generate(args) -> int:
    speculative = args.command == "run"
    spec = spec_from_args(args) if speculative else None
    if spec is not None and spec.synthetic:
        print(synth_banner(spec), file=sys.stderr)
    target, draft = resolve_models(args, draft=bool(spec and spec.needs_draft),
                                   head=bool(spec and spec.head_kind == "eagle3"))
    prompt = read_prompt(args)
    output_path(args.record, "the session")
    if args.system is not None and not args.chat:
        raise SpecScopeError("--system needs --chat (it is a message in the chat template)")
    settings = engine_settings(args, spec)
    note_unused_flags(args, spec)
    if not args.no_probe:            # the crash probe (core/models/probe.py), before this process loads
        guard(settings, target, draft)
    with Engine(target, draft, settings) as engine:
        chat = chat_prompt(args, engine.target, prompt)
        model_prompt = prompt if chat is None else chat     # what the target is given
        sampler = sampler_settings(args, engine)
        if speculative:
            calibration = None
            if spec.draft_policy == "cost" and spec.uses_draft_model:   # what the policy predicts with
                print("calibrating the pair for the cost draft policy (cached per pair and "
                      "settings)…", file=sys.stderr)
                calibration = policy_calibration(engine, spec, sampler)
            run = engine.speculative(model_prompt, spec, sampler, args.n_predict,
                                     calibration=calibration)
            if run.vocab_mode:        # llama.cpp's verdict stands; SpecScope drafts all the same
                print(f"specscope: {engine.vocab_refusal() or 'the same vocabulary'}; drafting "
                      f"with --spec-vocab {run.vocab_mode} (docs/cross-vocab.md)", file=sys.stderr)
        else:
            run = engine.baseline(model_prompt, sampler, args.n_predict)
        session = Session.start(
            RunSettings(str(target), str(draft) if draft else None, settings, spec, sampler,
                        args.n_predict, prompt, args.chat, args.system),
            "spec" if speculative else "baseline", model_prompt, run.prompt_tokens, engine.target)
        stream = TextStream(engine.target)
        if args.stream:
            sys.stdout.write(model_prompt)
        for event in run:
            session.run.append([event])
            if args.stream:
                sys.stdout.write(stream.feed(event.emitted))
                sys.stdout.flush()
        session.run.prefill_s = run.prefill.seconds
        session.run.end(run.finish)
        if args.stream:
            sys.stdout.write(stream.flush())
        if getattr(args, "with_baseline", False):     # the target alone, same key: the speed-up
            base = engine.baseline(model_prompt, sampler, args.n_predict)
            session.baseline = RunRecord("baseline")
            session.baseline.begin()
            session.baseline.append(base)
            session.baseline.prefill_s = base.prefill.seconds
            session.baseline.end(base.finish)
        print_session(session, args)
        if args.record is not None:          # after the results are shown: a failure loses nothing
            write_or_say(args.record, "the session", session.save)
    return 0


def print_session(session, args) -> None:
    """What ``run``/``baseline`` print at the end, live or replayed: the JSON document, or
    the text and the summary."""
    if getattr(args, "json", False):
        json.dump(session.document(), sys.stdout, indent=1)
        sys.stdout.write("\n")
        return
    spec = session.settings.spec if session.kind == "spec" else None
    if getattr(args, "stream", False):
        sys.stdout.write("\n\n")
    else:
        if spec is not None and spec.synthetic:
            print(synth_banner(spec))
        sys.stdout.write(session.prompt_text + session.text() + "\n\n")
    if spec is not None and spec.synthetic:
        print(synth_banner(spec))
    run = session.run
    prefill = Prefill(session.prompt_tokens, run.prefill_s)
    print("\n".join(summary_lines(run.stats, prefill, run.finish, session.kind == "spec", run.events)
                    + (policy_lines(session) + vocab_lines(run.events)
                       if session.kind == "spec" else [])))
    if session.speedup is not None:
        base = session.baseline.stats
        print(f"speed-up:  {session.speedup:.2f}x against the baseline "
              f"({base.tokens_per_s:.1f} tokens/s"
              + (f", {base.threads_text}" if base.threads else "") + ")")
        for line in baseline_doubts(session):
            print(f"           {line}")


def baseline_doubts(session) -> list[str]:
    """Why the speed-up printed may be off: the baseline is stale beside the run (the window's
    rule, core/session/baseline_check.py), or other processes took a core's worth of CPU or more
    during either run (read over however short a run: a warning, not a verdict)."""
    check = check_baseline(session.run, session.baseline)
    out = [check.describe()] if check is not None and check.stale else []
    busy = [f"{r.others_cores:.2f} of {r.cores} cores during {name} ({r.seconds:.1f} s)"
            for name, rec in (("the run", session.run), ("the baseline", session.baseline))
            if (r := rec.load) is not None and r.others_cores is not None
            and r.others_cores >= load_gap_limit(r.cores)]
    if busy:
        out.append("other processes used " + " and ".join(busy) + ": the speed-up may be off "
                   "(specscope bench repeats the runs and says how far they agree)")
    return out


def synth_banner(spec) -> str:
    """The loud lines of a synthetic-acceptance run (core/engine/synth.py)."""
    return f"!!! {WARNING} !!!\n!!! {describe(spec.synth_rates_resolved())} !!!"


def cmd_replay(args) -> int:
    """Print a recorded session as the live run printed it; no model is loaded."""
    session = Session.load(args.session)
    print_session(session, args)
    return 0
