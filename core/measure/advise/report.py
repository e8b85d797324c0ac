"""The advisor's output (core/measure/advise/advisor.py): the llama.cpp command to copy, the table, the JSON
document and the self-contained Markdown (or HTML) report."""

from __future__ import annotations

import html
import os
import re
from pathlib import Path

from specscope.core.engine.draft_policy import POLICIES
from specscope.core.engine.drafters import DRAFT_MODEL
from specscope.core.engine.engine import EngineSettings, SpecSettings
from specscope.core.engine.settings import spec_from_plain
from specscope.core.errors import ConfigError
from specscope.core.measure.advise.advice import (Advice, AdviseSettings, Candidate, CategoryAdvice,
                                                  MeasuredCandidate, Pair, Prompt)
from specscope.core.measure.advise.plots import Figure, break_even_lines, figures
from specscope.core.measure.cost.break_even import SPEEDUPS, SUMMARY_ALPHAS, curves, verdict
from specscope.core.measure.command_line import command_line
from specscope.core.measure.cost.model import Calibration
from specscope.core.measure.whatif.ngram import config_label, configurations
from specscope.core.measure.bench.workloads import Workload
from specscope.core.plain import from_plain, to_plain

TOOLS = ("llama-server", "llama-speculative-simple")
FORMAT, VERSION = "specscope-advice", 3     # to_dict's document (version 1: before it said so;
                                            # 3: a spec's own parameters under "own", settings.py)
INTERVAL_NOTE = ("measured: passes over the category's prompts (each prompt's speculative run and "
                 "target-alone run back to back, in alternating order), computed as `specscope "
                 "bench` computes its speed-up with each pass a repetition (per prompt the median "
                 "seconds per token); in brackets the range a `bench` re-measurement (three "
                 "repetitions) lands in 95 % of the time, from resampling the passes (six at least)")


def llama_command(a: Advice, m: MeasuredCandidate | None, tool: str = "llama-server") -> str:
    """The command line for a recommendation (None: the target alone), spelled as the vendored
    llama.cpp spells its flags (core/measure/command_line.py)."""
    s, c = a.settings, m.candidate if m is not None else None
    draft = next(d for d in s.drafts if Path(d).name == c.draft) if c is not None and c.draft else None
    return command_line(tool, s.target, c.spec if c is not None else None, draft,
                        s.engine.target_threads, s.engine.draft_threads)


def _ending(a: Advice) -> str:
    if a.stopped:
        return f"STOPPED during {a.phase}: partial results"
    if a.out_of_time:
        return f"the budget ended the run during {a.phase or 'loading'}"
    return "every planned pass measured"


def _iv(m: MeasuredCandidate | None) -> str:
    iv = m.interval() if m else None
    return f"{iv[0]:.2f}x ({iv[1]:.2f}-{iv[2]:.2f})" if iv else "-"


def _name(m: MeasuredCandidate | None) -> str:
    return m.candidate.name if m else "-"


def category_row(cat: CategoryAdvice) -> tuple[str, ...]:
    d = cat.decision()
    rec = d.verdict if cat.needs_s is None or d.judged else f"no advice (~{cat.needs_s:.0f} s more)"
    pred = d.best.candidate.predicted if d.best else None
    return (cat.category, rec, _iv(d.best), f"{pred:.2f}x" if pred else "-",
            _name(d.runner_up), _iv(d.runner_up))


HEADER = ("category", "recommendation", "measured (95% range)", "predicted", "runner-up",
          "its measured")


def table_lines(a: Advice) -> list[str]:
    rows = [HEADER] + [category_row(c) for c in a.categories]
    widths = [max(len(r[i]) for r in rows) for i in range(len(HEADER))]
    return ["  ".join(v.ljust(w) for v, w in zip(r, widths)).rstrip() for r in rows]


def summary_lines(a: Advice) -> list[str]:
    """The table, each category's reason and command, and how the interval is computed."""
    lines = [f"target {a.settings.target.name}; drafts: "
             f"{', '.join(Path(d).name for d in a.settings.drafts) or 'none (n-gram types)'}; "
             f"{a.seconds:.0f} s; {_ending(a)}"] + ([f"budget: {a.plan}"] if a.plan else []) + [""]
    lines += table_lines(a) + [""]
    lines += [*break_even_lines(a), ""] if a.calibrations else []
    for cat in a.categories:
        d = cat.decision()
        lines += [f"{cat.category}: {d.why}", "  " + llama_command(a, d.best)]
        lines += ["  " + ceiling_line(cat, draft) for draft in cat.ceilings]
    return lines + ["", INTERVAL_NOTE]


def ceiling_line(cat: CategoryAdvice, draft: str) -> str:
    """"demo-draft.gguf: hindsight ceiling 0.83x; fixed n 91%, p_min 97%, hf 90%, cost 91%"."""
    ceiling = cat.ceilings[draft]
    shares = [f"{k} {c.predicted / ceiling:.0%}" for k, c in cat.policies(draft).items() if c.predicted]
    return f"{draft}: hindsight ceiling {ceiling:.2f}x predicted; " + ", ".join(shares) + " of it"


def to_dict(a: Advice) -> dict:
    s = a.settings
    cats = []
    for c in a.categories:
        d = c.decision()
        cats.append({
            "category": c.category, "prompts": len(c.prompts), "left_out": c.left_out,
            "needs_s": c.needs_s,
            "baselines": sum(1 for p in c.prompts if p.cont),
            "speculate": d.best is not None, "judged": d.judged, "why": d.why,
            "best": d.best.to_dict() if d.best else None,
            "runner_up": d.runner_up.to_dict() if d.runner_up else None,
            "commands": {t: llama_command(a, d.best, t) for t in TOOLS},
            "measured": [m.to_dict() for m in c.measured],
            "predicted_top": [x.to_dict() for x in c.candidates[:10]],
            "ceilings": c.ceilings,
            "policies": {draft: {k: v.to_dict() for k, v in c.policies(draft).items()}
                         for draft in c.ceilings},
            "continuations": {p.workload.name: list(p.cont) for p in c.prompts}})
    return {"format": FORMAT, "version": VERSION, "target": str(s.target), "drafts": [str(d) for d in s.drafts],
            "budget_s": s.budget_s, "n_predict": s.n_predict, "top": s.top, "passes": s.passes,
            "engine": to_plain(s.engine), "seconds": a.seconds,
            "stopped": a.stopped, "out_of_time": a.out_of_time, "phase": a.phase, "cpus": os.cpu_count(),
            "plan": a.plan,
            "calibrations": {k: {"t1_ms": v.t1 * 1e3, "f": v.f, "k_max": v.k_max,
                                 "under_load": v.under_load, "figures": v.to_dict()}
                             for k, v in a.calibrations.items()},
            "interval": INTERVAL_NOTE, "break_even": _break_even(a), "categories": cats}


def from_dict(doc: dict) -> Advice:
    """The advice :func:`to_dict` wrote (also ``advise --json``'s output from before the format
    had a version), without its models: what it measured, decided and calibrated, so its table,
    commands and plots come back. An older document lacks the calibrations' figures (no
    break-even), the threads and the baselines' tokens. ConfigError names what is wrong."""
    try:
        version = doc.get("version", 1)
        if not isinstance(version, int) or version > VERSION:
            raise ConfigError(f"written by a newer SpecScope (advice version {version}; this one "
                              f"reads up to {VERSION}): update SpecScope to open it")
        cats = [_category_of(c) for c in doc["categories"]]
        for c in cats:            # the advice stopped by the user, not by its budget
            c.stopped = bool(doc["stopped"])
        engine = from_plain(EngineSettings, doc["engine"], "engine") if "engine" in doc else EngineSettings()
        settings = AdviseSettings(Path(doc["target"]), tuple(Path(d) for d in doc["drafts"]),
                                  tuple(c.category for c in cats), float(doc["budget_s"]),
                                  int(doc["n_predict"]), int(doc.get("top", AdviseSettings.top)),
                                  int(doc.get("passes", AdviseSettings.passes)), engine)
        cals = {name: Calibration.from_dict(c["figures"])
                for name, c in doc.get("calibrations", {}).items() if "figures" in c}
        return Advice(settings, cats, cals, bool(doc["stopped"]), float(doc["seconds"]),
                      str(doc["phase"]), bool(doc.get("out_of_time", False)), str(doc.get("plan", "")))
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        what = f"lacks {exc}" if isinstance(exc, KeyError) else f"{type(exc).__name__}: {exc}"
        raise ConfigError(f"not a SpecScope advice document ({what})") from None


def _category_of(d: dict) -> CategoryAdvice:
    """One category back: its candidates (the measured, the best predicted, each draft's
    policies; one object per setting, so a measured one is its policy's too) and its pairs."""
    known: dict[str, Candidate] = {}
    for x in [*d["measured"], *d.get("predicted_top", []),
              *(x for p in d.get("policies", {}).values() for x in p.values())]:
        known.setdefault(x["name"], _candidate_of(x))
    measured = []
    for m in d["measured"]:
        runs, prompts = _runs_of(m, int(d["baselines"]))
        measured.append(MeasuredCandidate(known[m["name"]], runs, int(m["identical_pairs"]), prompts,
                                 int(m.get("threads_moved_pairs", 0))))
    conts = d.get("continuations") or {f"prompt {i + 1}": [] for i in range(int(d["prompts"]))}
    prompts = [Prompt(Workload(name, d["category"], "", False, ()), "", [], list(cont))
               for name, cont in conts.items()]
    needs = d.get("needs_s")
    return CategoryAdvice(d["category"], prompts,
                          sorted(known.values(), key=lambda c: -(c.predicted or c.tokens_per_round)),
                          {k: float(v) for k, v in d["ceilings"].items()}, measured,
                          float(needs) if needs is not None else None, int(d.get("left_out", 0)))


def _runs_of(m: dict, prompts: int) -> tuple[list[Pair], int]:
    """A measured candidate's pairs and how many prompts make a pass. A document from before the
    pairs were saved has their ratios only, and judged them one by one: each becomes a pass of
    its own (tokens over time giving that ratio), so its interval is what was written then."""
    if "runs" in m:
        return [Pair(**r) for r in m["runs"]], prompts
    return [Pair(i, 1, 1.0 / r, 1, 1.0) for i, r in enumerate(float(x) for x in m["ratios"])], 1


def _candidate_of(d: dict) -> Candidate:
    return Candidate(d["draft"], _spec_of(d), d["name"], d["predicted_speedup"], float(d["acceptance"]),
                     float(d["tokens_per_round"]), tuple(d.get("drafted_at", ())),
                     tuple(d.get("accepted_at", ())))


def _spec_of(d: dict) -> SpecSettings:
    """A candidate's SpecSettings: saved whole since the format's version 2; before, found again
    from its name (the what-ifs' n-gram configurations) or its n_max, p_min and policy."""
    if "spec" in d:
        return spec_from_plain(d["spec"], f"{d['name']}: spec")
    types = tuple(d["types"])
    if DRAFT_MODEL not in types:
        return next((c for c in configurations() if config_label(c) == d["name"]),
                    SpecSettings(types=types))
    policy = next((p for p in POLICIES if f" {p} n≤" in d["name"]), "fixed")
    return SpecSettings(types=types, n_max=int(d["n_max"]), p_min=float(d["p_min"] or 0.0),
                        draft_policy=policy)


def _break_even(a: Advice) -> dict | None:
    """The break-even curves at SUMMARY_ALPHAS and each draft's place (break_even_lines)."""
    pair = a.pair_calibration()
    if pair is None:
        return None
    name, cal = pair
    return {"calibration": name,
            "curves": {f"{s:.1f}": {f"{b.alpha:g}": b.f for b in line}
                       for s, line in curves(cal, SPEEDUPS, SUMMARY_ALPHAS).items()},
            "drafts": [{"category": cat, "draft": draft, "setting": p.name, "alpha": p.alpha, "f": p.f,
                        "speedup": p.speedup, "measured": p.measured, "verdict": verdict(cal, p)}
                       for cat, draft, p in a.draft_points()]}


Block = tuple     # ("h1" | "h2" | "p", text), ("table", rows), ("pre", lines), ("figure", Figure)


def blocks(a: Advice) -> list[Block]:
    """The report's content, for :func:`markdown` and :func:`html_report` alike."""
    s, figs = a.settings, {f.name: f for f in figures(a)}
    out: list[Block] = [
        ("h1", "SpecScope advice"),
        ("p", f"Target `{s.target.name}`, drafts: "
              f"{', '.join(f'`{Path(d).name}`' for d in s.drafts) or 'none (n-gram types only)'}; "
              f"{s.n_predict} tokens per run, budget {s.budget_s:.0f} s, took {a.seconds:.0f} s on "
              f"{os.cpu_count()} CPUs; {_ending(a)}."),
        ("table", [HEADER] + [category_row(c) for c in a.categories]), ("p", INTERVAL_NOTE + ".")]
    out += [("figure", figs[name]) for name in ("speedups", "break-even") if name in figs]
    if "break-even" not in figs:
        out += [("p", line) for line in break_even_lines(a)]
    for cat in a.categories:
        out += _category_blocks(a, cat, figs.get(f"acceptance-{cat.category}"))
    return out


def _category_blocks(a: Advice, cat: CategoryAdvice, acceptance) -> list[Block]:
    d = cat.decision()
    verdict = "Speculate" if d.best else "Do not speculate" if d.judged else "No advice"
    out: list[Block] = [("h2", cat.category), ("p", f"{verdict}: {d.why}."),
                        ("pre", [llama_command(a, d.best, t) for t in TOOLS])]
    out.append(("figure", acceptance) if acceptance is not None else
               ("p", "No candidate shown here drafted a token on these prompts: no acceptance to plot."))
    if cat.measured:
        out += [("p", "Measured:"), ("table", [("configuration", "predicted", "measured (95% range)",
                                                 "passes", "same tokens")] + [
            (m.candidate.name, f"{m.candidate.predicted:.2f}x" if m.candidate.predicted else "-",
             _iv(m), str(len(m.pass_speedups())), f"{m.identical}/{m.pairs}") for m in cat.measured])]
        moved = sum(m.threads_moved for m in cat.measured)
        if moved:
            out.append(("p", f"Threads auto moved during {moved} of "
                             f"{sum(m.pairs for m in cat.measured)} measured pairs: the machine's "
                             "load changed while measuring, and those speed-ups compare a machine "
                             "in two states (pin -t/-td, or measure again on a steadier machine)."))
    for draft, ceiling in cat.ceilings.items():
        rows = [("draft length policy", "predicted", "share of the ceiling")]
        rows += [(c.name, f"{c.predicted:.2f}x", f"{c.predicted / ceiling:.0%}")
                 for c in cat.policies(draft).values() if c.predicted]
        out += [("p", f"Draft length with `{draft}`: the hindsight ceiling (the best length of every "
                      f"round, chosen knowing the text) predicts {ceiling:.2f}x."), ("table", rows)]
    return out


def _md_table(rows: list[tuple[str, ...]]) -> list[str]:
    out = ["| " + " | ".join(rows[0]) + " |", "|" + "---|" * len(rows[0])]
    return out + ["| " + " | ".join(v.replace("|", "\\|") for v in r) + " |" for r in rows[1:]]


def figure_file(stem: str, fig: Figure) -> str:
    """The SVG file a Markdown report links a figure to (beside the report)."""
    return f"{stem}-{fig.name}.svg"


def markdown(a: Advice, figure_stem: str | None = None) -> str:
    """The report in Markdown; with ``figure_stem`` its figures are linked as SVG files
    (:func:`figure_file`, written beside it by :func:`write_report`), else left out (their
    notes kept)."""
    lines: list[str] = []
    for kind, *body in blocks(a):
        if kind in ("h1", "h2"):
            lines += ["#" * int(kind[1]) + " " + body[0], ""]
        elif kind == "p":
            lines += [body[0], ""]
        elif kind == "table":
            lines += [*_md_table(body[0]), ""]
        elif kind == "pre":
            lines += ["```", *body[0], "```", ""]
        else:
            fig = body[0]
            if figure_stem is not None:
                lines += [f"![{fig.title}]({figure_file(figure_stem, fig)})", ""]
            lines += [*(f"- {n}" for n in fig.notes), ""] if fig.notes else []
    return "\n".join(lines).rstrip("\n") + "\n"


def _inline(text: str) -> str:
    return re.sub(r"`([^`]*)`", r"<code>\1</code>", html.escape(text))


def html_report(a: Advice) -> str:
    """The report as one self-contained HTML page (well-formed XML: the plots are inline SVG)."""
    body = []
    for kind, *rest in blocks(a):
        if kind in ("h1", "h2", "p"):
            body.append(f"<{kind}>{_inline(rest[0])}</{kind}>")
        elif kind == "table":
            head, *rows = rest[0]
            body.append("<table><tr>" + "".join(f"<th>{html.escape(h)}</th>" for h in head) + "</tr>"
                        + "".join("<tr>" + "".join(f"<td>{html.escape(v)}</td>" for v in r) + "</tr>"
                                  for r in rows) + "</table>")
        elif kind == "pre":
            body.append(f"<pre>{html.escape(chr(10).join(rest[0]))}</pre>")
        else:
            fig = rest[0]
            notes = "".join(f"<li>{html.escape(n)}</li>" for n in fig.notes)
            body.append(f"<figure>{fig.svg}<figcaption>{html.escape(fig.title)}"
                        + (f"<ul>{notes}</ul>" if notes else "") + "</figcaption></figure>")
    return ("<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'/><title>SpecScope advice</title>"
            f"<style>{CSS}</style></head><body>\n" + "\n".join(body) + "\n</body></html>\n")


CSS = ("body{font:14px/1.45 Helvetica,Arial,sans-serif;max-width:1100px;margin:2em auto;color:#222}"
       "table{border-collapse:collapse;margin:.6em 0}td,th{border:1px solid #ccc;padding:3px 8px;"
       "text-align:left}th{background:#f2f2f2}pre{background:#f6f6f6;padding:8px;overflow-x:auto}"
       "figure{margin:1em 0}figcaption{color:#555}svg{max-width:100%;height:auto}")


def write_report(a: Advice, path: Path) -> list[Path]:
    """Write the report (HTML for .html/.htm, else Markdown with its figures as SVG files beside
    it); returns the files written."""
    if path.suffix.lower() in (".html", ".htm"):
        path.write_text(html_report(a), encoding="utf-8")
        return [path]
    written = []
    for fig in figures(a):
        svg = path.with_name(figure_file(path.stem, fig))
        svg.write_text(fig.svg + "\n", encoding="utf-8")
        written.append(svg)
    path.write_text(markdown(a, path.stem), encoding="utf-8")
    return [path, *written]
