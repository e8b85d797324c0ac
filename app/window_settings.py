"""The main window as it was left: its geometry, splitters, tabs and workspace, the pair, the
parameters and the prompt, and the recent pairs, in the window's QSettings."""

from __future__ import annotations

import json
from pathlib import Path

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


def restore_settings(w, model: Path | None, draft: Path | None) -> tuple[int | None, int | None, bool]:
    """Set the window ``w`` as its settings left it, with ``model`` and ``draft`` (the command
    line's) before the saved pair. Returns what waits until the plots are built: the tab and the
    workspace to show, and whether the splitters had saved sizes."""
    s = w.settings
    place_window(w, s.value("window/geometry"))     # inside the screen it opens on
    state = s.value("window/state")
    if state is not None:
        w.restoreState(state)
    splits_restored = False
    for key, split in (("window/main_split", w.main_split), ("window/right_split", w.right_split)):
        v = s.value(key)
        if v is not None:
            split.restoreState(v)
            splits_restored = True
    tab = s.value("window/tab")
    if tab is not None:
        w.tabs.setCurrentIndex(int(tab))
    workspace = s.value("window/workspace")
    w.set_tabs_expanded(str(s.value("window/tabs_expanded", "false")).lower() == "true")
    w.set_left_panel_shown(str(s.value("window/left_panel", "true")).lower() == "true")
    if s.value("params/json"):
        apply_json(s, "params/json", w.params.from_dict)
    if s.value("params/engine_json"):
        apply_json(s, "params/engine_json", w.pair_panel.set_engine_kwargs)
    w.prompt.set_text(s.value("params/prompt", DEFAULT_PROMPT) or DEFAULT_PROMPT)
    apply_json(s, "params/prompt_json", w.prompt.from_dict)
    w.pair_panel.set_recent(recent_pairs(s))
    if model is not None or draft is not None:
        t, d = model, draft
        demo = demo_pair_or_none()
        if t is None and demo:                 # a draft alone: for the demo target
            t = demo[0]
        if d is None and demo and Path(t) == demo[0]:
            d = demo[1]                        # another target alone stays alone: the demo draft
                                               # would not fit it (n-gram types and MTP need none)
    else:
        t, d = s.value("pair/target"), s.value("pair/draft")
        # a target alone is a pair too (the n-gram drafters need no draft model)
        if not (t and Path(t).is_file() and (not d or Path(d).is_file())):
            demo = demo_pair_or_none()
            t, d = demo if demo else (t, d)
    w.pair_panel.set_pair(t, d)
    if not t:
        w.banner.show_message("info", "No demo model pair is installed. Choose a target and a "
                                      "draft model (File ▸ Open, or drop .gguf files on the window).")
    return (int(tab) if tab is not None else None,
            int(workspace) if workspace is not None else None, splits_restored)


def save_settings(w) -> None:
    s = w.settings
    s.setValue("version", SETTINGS_VERSION)
    t, d = w.pair_panel.pair()
    s.setValue("pair/target", str(t) if t else "")
    s.setValue("pair/draft", str(d) if d else "")
    s.setValue("params/json", json.dumps(w.params.to_dict()))
    s.setValue("params/engine_json", json.dumps(w.pair_panel.engine_kwargs()))
    s.setValue("params/prompt", w.prompt.text())
    s.setValue("params/prompt_json", json.dumps(w.prompt.to_dict()))
    s.setValue("window/geometry", w.saveGeometry())
    s.setValue("window/state", w.saveState())
    s.setValue("window/main_split", w.main_split.saveState())
    s.setValue("window/right_split", w.right_split.saveState())
    s.setValue("window/tab", w.tabs.currentIndex())
    s.setValue("window/workspace", w.workspace.currentIndex())
    s.setValue("window/tabs_expanded", w.tabs_expanded())
    s.setValue("window/left_panel", w.left_panel_shown())
    for key, view in (("compare", w.compare), ("advisor", w.advisor)):
        if view is not None:
            s.setValue(f"{key}/json", json.dumps(view.to_dict()))
    s.sync()
