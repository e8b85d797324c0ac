"""The main window as it was left, in its QSettings: the controls (the pair, the parameters, the
prompt, the recent pairs) and the layout (geometry, splitters, tabs and workspace, the two
toggles, the Compare and Advisor forms). The window hands in the parts (``RunControls``,
``Layout``); nothing here reaches through the window."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from .controls import DEFAULT_PROMPT
from .desktop import place_window

SETTINGS_VERSION = 1
MAX_RECENT_PAIRS = 8


def demo_pair_or_none():
    """The demo pair's (target, draft), or None where it is not installed."""
    try:
        from specscope.core.models.demo import demo_pair
        return demo_pair()
    except Exception:  # noqa: BLE001 - no demo pair: the user picks one
        return None


def recent_pairs(settings) -> list[tuple[str, str]]:
    raw = settings.value("pair/recent") or "[]"
    try:
        pairs = [tuple(p) for p in json.loads(raw) if len(p) == 2]
    except (ValueError, TypeError):
        pairs = []
    return pairs


def remember_pair(settings, target: Path, draft: Path) -> list[tuple[str, str]]:
    """``target`` and ``draft`` first among the recent pairs; the recent pairs."""
    pair = (str(target), str(draft))
    pairs = [p for p in recent_pairs(settings) if p != pair]
    pairs.insert(0, pair)
    settings.setValue("pair/recent", json.dumps(pairs[:MAX_RECENT_PAIRS]))
    return pairs[:MAX_RECENT_PAIRS]


def apply_json(settings, key: str, apply) -> None:
    """``apply`` the JSON saved under ``key``; a malformed value is left alone."""
    try:
        apply(json.loads(settings.value(key) or "{}"))
    except (ValueError, TypeError, AttributeError):
        pass


@dataclass
class Layout:
    """The parts of the window whose arrangement is kept: the window itself (its geometry and
    its docks' state), the splitters by key, the tab stacks, the two toggles and the workspaces
    whose forms are kept (by key; None until built)."""
    window: object                                  # the QMainWindow
    splits: dict                                    # settings key -> QSplitter
    tabs: object                                    # the run's tabs (plots, cost model, ...)
    workspace: object                               # Run / Compare / sessions / Advisor
    tabs_expanded: tuple[Callable[[], bool], Callable[[bool], None]]   # (get, set)
    left_panel: tuple[Callable[[], bool], Callable[[bool], None]]
    views: Callable[[], dict] = dict                # key -> a view with to_dict (Compare, Advisor)


def restore_layout(settings, layout: Layout) -> tuple[int | None, int | None, bool]:
    """The window arranged as it was left. Returns what waits until the plots are built: the
    tab and the workspace to show, and whether the splitters had saved sizes."""
    place_window(layout.window, settings.value("window/geometry"))   # inside the screen it opens on
    state = settings.value("window/state")
    if state is not None:
        layout.window.restoreState(state)
    splits_restored = False
    for key, split in layout.splits.items():
        v = settings.value(key)
        if v is not None:
            split.restoreState(v)
            splits_restored = True
    tab = settings.value("window/tab")
    if tab is not None:
        layout.tabs.setCurrentIndex(int(tab))
    workspace = settings.value("window/workspace")
    layout.tabs_expanded[1](str(settings.value("window/tabs_expanded", "false")).lower() == "true")
    layout.left_panel[1](str(settings.value("window/left_panel", "true")).lower() == "true")
    return (int(tab) if tab is not None else None,
            int(workspace) if workspace is not None else None, splits_restored)


def restore_controls(settings, controls, model: Path | None, draft: Path | None) -> bool:
    """The controls (``controls.RunControls``: the pair, the parameters, the prompt) as their
    settings left them, with ``model`` and ``draft`` (the command line's) before the saved
    pair; False when there is no pair at all (no demo pair installed and none saved)."""
    if settings.value("params/json"):
        apply_json(settings, "params/json", controls.params.from_dict)
    if settings.value("params/engine_json"):
        apply_json(settings, "params/engine_json", controls.pair_panel.set_engine_kwargs)
    controls.prompt.set_text(settings.value("params/prompt", DEFAULT_PROMPT) or DEFAULT_PROMPT)
    apply_json(settings, "params/prompt_json", controls.prompt.from_dict)
    controls.pair_panel.set_recent(recent_pairs(settings))
    if model is not None or draft is not None:
        t, d = model, draft
        demo = demo_pair_or_none()
        if t is None and demo:                 # a draft alone: for the demo target
            t = demo[0]
        if d is None and demo and Path(t) == demo[0]:
            d = demo[1]                        # another target alone stays alone: the demo draft
                                               # would not fit it (n-gram types and MTP need none)
    else:
        t, d = settings.value("pair/target"), settings.value("pair/draft")
        # a target alone is a pair too (the n-gram drafters need no draft model)
        if not (t and Path(t).is_file() and (not d or Path(d).is_file())):
            demo = demo_pair_or_none()
            t, d = demo if demo else (t, d)
    controls.pair_panel.set_pair(t, d)
    return bool(t)


def save_settings(settings, controls, layout: Layout) -> None:
    """The controls and the layout, as restore_controls and restore_layout read them."""
    s = settings
    s.setValue("version", SETTINGS_VERSION)
    t, d = controls.pair()
    s.setValue("pair/target", str(t) if t else "")
    s.setValue("pair/draft", str(d) if d else "")
    s.setValue("params/json", json.dumps(controls.params.to_dict()))
    s.setValue("params/engine_json", json.dumps(controls.pair_panel.engine_kwargs()))
    s.setValue("params/prompt", controls.prompt.text())
    s.setValue("params/prompt_json", json.dumps(controls.prompt.to_dict()))
    s.setValue("window/geometry", layout.window.saveGeometry())
    s.setValue("window/state", layout.window.saveState())
    for key, split in layout.splits.items():
        s.setValue(key, split.saveState())
    s.setValue("window/tab", layout.tabs.currentIndex())
    s.setValue("window/workspace", layout.workspace.currentIndex())
    s.setValue("window/tabs_expanded", layout.tabs_expanded[0]())
    s.setValue("window/left_panel", layout.left_panel[0]())
    for key, view in layout.views().items():
        if view is not None:
            s.setValue(f"{key}/json", json.dumps(view.to_dict()))
    s.sync()
