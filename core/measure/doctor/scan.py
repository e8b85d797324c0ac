"""The pair doctor over many drafts: every GGUF file in a folder (or the model library) checked
as a draft for one target (core/measure/doctor/pair.py), the fitting ones ranked."""

from __future__ import annotations

import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from specscope.core.errors import ModelFileError, SpecScopeError
from specscope.core.measure.doctor.estimate import NO_CALIBRATION, RANK_ALPHA, machine_costs
from specscope.core.measure.doctor.pair import (_SPLIT_RE, ModelSummary, PairReport, _jsonable,
                                                _Loaded, _pair)


@dataclass(frozen=True)
class ScanEntry:
    path: str
    compatible: bool
    f: float | None
    reason: str  # one line
    report: PairReport | None


@dataclass(frozen=True)
class ScanReport:
    target: ModelSummary
    folder: str
    compatible: tuple[ScanEntry, ...]  # ranked by f, cheapest first
    incompatible: tuple[ScanEntry, ...]  # with a one-line reason each
    skipped: tuple[str, ...]  # the target itself, if it lies in the folder
    elapsed_s: float
    cross: tuple[ScanEntry, ...] = ()  # refused by llama.cpp, drafted across vocabularies: ranked by f
    ranking: str = ""                  # which figure ranks the compatible drafts, and why
    calibration: tuple[str, ...] = ()  # where the calibrated figures come from (MachineCosts.lines)

    def to_dict(self) -> dict[str, Any]:
        return _jsonable(asdict(self))


def scan(target_path: str | os.PathLike, folder: str | os.PathLike) -> ScanReport:
    """Check every ``.gguf`` file in ``folder`` (not recursive) as a draft for the target.

    Compatible drafts are ranked by estimated f (cheapest first); each
    incompatible or unusable file gets a one-line reason.
    """
    folder_p = Path(folder)
    if not folder_p.exists():
        raise ModelFileError(str(folder), "no such folder")
    if not folder_p.is_dir():
        raise ModelFileError(str(folder), "this is not a folder")
    try:
        files = sorted(p for p in folder_p.iterdir() if p.suffix.lower() == ".gguf")
    except OSError as e:
        raise ModelFileError(str(folder), f"the folder cannot be read ({e.strerror or e})") from None
    return scan_files(target_path, files, str(folder))


def scan_files(target_path: str | os.PathLike, files, where: str) -> ScanReport:
    """:func:`scan` over ``files`` (``where`` names them in the report: a folder, the model
    library)."""
    t0 = time.perf_counter()
    files = [Path(p) for p in files]
    good: list[ScanEntry] = []
    cross: list[ScanEntry] = []
    bad: list[ScanEntry] = []
    skipped: list[str] = []
    here = machine_costs(target_path)
    with _Loaded(target_path, target=True) as t:
        for p in files:
            try:
                if p.samefile(target_path):
                    skipped.append(str(p))
                    continue
            except OSError:
                pass
            split = _SPLIT_RE.match(p.name)
            if split and int(split["no"]) > 1:
                skipped.append(str(p))
                continue
            try:
                with _Loaded(p) as d:
                    r = _pair(t, d, time.perf_counter(), here)
            except SpecScopeError as e:
                problem = getattr(e, "problem", str(e))
                bad.append(ScanEntry(str(p), False, None, problem, None))
                continue
            if r.compatible:
                good.append(ScanEntry(str(p), True, r.cost.f, r.verdict, r))
            elif r.cross_modes:
                cross.append(ScanEntry(str(p), False, r.cost.f, f"{r.reason}; SpecScope can still "
                                       f"draft with it: {r.cross.summary()}", r))
            else:
                bad.append(ScanEntry(str(p), False, r.cost.f, r.reason, r))
        good.sort(key=lambda e: (e.report.cost.rank_key, e.path))
        cross.sort(key=lambda e: (e.f if e.f is not None else float("inf"), e.path))
        return ScanReport(
            target=t.summary,
            folder=where,
            compatible=tuple(good),
            incompatible=tuple(bad),
            skipped=tuple(skipped),
            elapsed_s=time.perf_counter() - t0,
            cross=tuple(cross),
            ranking=(f"ranked by the calibrated estimate on this machine, best speed-up at α = "
                     f"{RANK_ALPHA} first (the textbook figure beside it)" if here else
                     f"ranked by the textbook estimate, cheapest f first; {NO_CALIBRATION}"),
            calibration=tuple(here.lines()) if here else (),
        )
