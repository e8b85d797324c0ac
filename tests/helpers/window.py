"""The main window in tests: opening it on a real pair (the demo pair when it is installed, else
the tiny generated pair of conftest.py), running it to the end, and the fixtures ``pair``,
``settings`` and ``window`` (conftest.py registers them for every test file)."""

from __future__ import annotations

from pathlib import Path

import pytest

from specscope.core.errors import ConfigError

RUN_TIMEOUT_MS = 120_000


@pytest.fixture(scope="module")
def pair(request):
    """(target, draft, incompatible draft)."""
    from specscope.core.models.demo import DEMO_FOREIGN_DRAFT, demo_pair, models_dir
    try:
        target, draft = demo_pair()
        foreign = models_dir() / DEMO_FOREIGN_DRAFT
        if foreign.is_file():
            return target, draft, foreign
        return target, draft, request.getfixturevalue("tiny_models")["foreign"]
    except ConfigError:
        m = request.getfixturevalue("tiny_models")
        return m["target"], m["draft"], m["foreign"]


@pytest.fixture
def settings(tmp_path, monkeypatch):
    """The window's settings in a file of the test's own (and its log in the test's folder)."""
    from PySide6.QtCore import QSettings
    monkeypatch.setenv("SPECSCOPE_LOG_DIR", str(tmp_path / "log"))
    return QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat)


def open_window(qtbot, pair, settings, **kw):
    """A MainWindow on ``pair`` (target, draft, ...), shown at 1440×900, its plots built."""
    from specscope.app.window import MainWindow
    w = MainWindow(Path(pair[0]), Path(pair[1]), settings=settings, **kw)
    w.resize(1440, 900)
    w.show()
    qtbot.waitUntil(lambda: w.panels_ready, timeout=10_000)
    return w


def make_window(qtbot, tmp_path, pair=(None, None), name="a", **kw):
    """A MainWindow with settings of its own in ``tmp_path`` (``name`` tells several apart)."""
    from PySide6.QtCore import QSettings
    from specscope.app.window import MainWindow
    settings = QSettings(str(tmp_path / f"settings-{name}.ini"), QSettings.Format.IniFormat)
    w = MainWindow(*pair, settings=settings, **kw)
    w.resize(1440, 900)
    w.show()
    qtbot.waitUntil(lambda: w.panels_ready, timeout=10_000)
    return w


def for_short_runs(w, n_predict: int = 24, n_ctx: int = 512, prompt: str = "def add(a, b):\n    "):
    """``w`` set for short runs: ``n_predict`` tokens in a context of ``n_ctx``, after ``prompt``."""
    w.params.n_predict.setValue(n_predict)
    w.params.n_ctx.setValue(n_ctx)
    w.prompt.set_text(prompt)
    return w


@pytest.fixture
def window(qtbot, pair, settings):
    """The window on the pair, set for short runs (24 tokens, context 512, a code prompt)."""
    w = for_short_runs(open_window(qtbot, pair, settings))
    yield w
    w.close()
    assert w.worker_thread.isFinished() and w.pairs.doctor_thread.isFinished()


def run_and_wait(qtbot, w, action) -> str:
    """Call ``action`` (a button's slot) and wait for the run it starts to end; its finish."""
    with qtbot.waitSignal(w.run_done, timeout=RUN_TIMEOUT_MS) as blocker:
        action()
    return blocker.args[1]


def step_to_a_draft(qtbot, w, rounds: int = 40):
    """Press Step until a round with a draft is shown (or the run ends); that round's event."""
    from specscope.core.session.controller import RunState
    w.step_clicked()
    for _ in range(rounds):
        qtbot.waitUntil(lambda: w.controller.state in (RunState.PAUSED, RunState.IDLE), timeout=RUN_TIMEOUT_MS)
        ev = w.round_view.shown_event
        if w.controller.state is not RunState.PAUSED or (ev is not None and ev.drafted):
            break
        with qtbot.waitSignal(w.step_done, timeout=RUN_TIMEOUT_MS):
            w.step_clicked()
    return w.round_view.shown_event


def chain_after_ngram_simple(qtbot, w, drafter: str) -> None:
    """Run ngram-simple chained before ``drafter`` on a prompt that repeats itself: both draft,
    and the acceptance curves and the drafter table have one entry each."""
    d = w.params.drafter
    d.set_types([drafter, "ngram-simple"])
    d.knobs["ngram-simple.size_n"].setValue(2)
    d.knobs["ngram-simple.size_m"].setValue(6)
    w.prompt.set_text("def add(a, b):\n    return a + b\n\ndef add(a, b):\n    return a + b\n\n")
    assert run_and_wait(qtbot, w, w.run_clicked) in ("n_predict", "eog")
    assert {e.drafter for e in w.shown.events if e.drafted} == {"ngram-simple", drafter}
    w.tabs.setCurrentWidget(w.tabs.widget(0))
    w.shown.refresh_panels()
    shown = w.plots.shown()["by_drafter"]
    assert set(shown["curves"]) == {"ngram-simple", drafter}
    assert sorted(row[0] for row in shown["table"]) == sorted([drafter, "ngram-simple"])


def check_shared_lengths(qtbot, drafter: str):
    """A fresh drafter picker with ``drafter`` checked: draft-simple's n_max, n_min and p_min
    apply to it (its sync and n policy do not), and it chains after ngram-mod; the picker."""
    from specscope.app.drafter_panel import DrafterPanel
    from specscope.core.engine.drafters import DESCRIPTIONS
    picker = DrafterPanel()
    qtbot.addWidget(picker)
    assert DESCRIPTIONS[drafter] in picker.checks[drafter].toolTip()
    picker.set_types([drafter])
    assert all(w.isEnabled() for w in (picker.n_max, picker.n_min, picker.p_min))
    assert not picker.sync.isEnabled() and not picker.policy.isEnabled()   # draft-simple's alone
    picker.n_max.setValue(5)
    picker.n_min.setValue(2)
    picker.p_min.setValue(0.3)
    spec = picker.spec_settings()
    assert spec.types == (drafter,) and (spec.n_max, spec.n_min, spec.p_min) == (5, 2, 0.3)
    picker.set_types([drafter, "ngram-mod"])                      # a chain, in llama.cpp's order
    assert picker.spec_settings().types == ("ngram-mod", drafter)
    assert picker.problem() == ""
    return picker


def check_drafted_by(w, drafter: str):
    """After a run ``drafter`` alone drafted: its tokens take its own colour (the legend names
    it), the plots' drafter table and tree headroom count it; the first accepted span."""
    from specscope.app.drafter_style import drafter_colors
    from specscope.app.token_view import ACCEPTED
    from specscope.core.engine.drafters import DESCRIPTIONS
    assert w.banner.level != "error", w.banner.message
    drafted = [e for e in w.shown.events if e.drafted]
    assert drafted and {e.drafter for e in drafted} == {drafter}
    accepted = [s for s in w.token_view.spans if s.kind == ACCEPTED and s.end > s.start]
    assert accepted and {s.drafter for s in accepted} == {drafter}
    bg = drafter_colors(drafter)[1]
    assert bg not in {drafter_colors(t)[1] for t in DESCRIPTIONS if t != drafter}
    cursor = w.token_view.textCursor()
    cursor.setPosition(accepted[0].start + 1)
    assert cursor.charFormat().background().color().name() == bg
    assert "drafted&nbsp;by&nbsp;" + drafter.replace("-", "\u2011") in w.legend.text()
    w.tabs.setCurrentWidget(w.tabs.widget(0))
    w.shown.refresh_panels()
    shown = w.plots.shown()
    assert [row[0] for row in shown["by_drafter"]["table"]] == [drafter]
    assert sum(shown["tree"]["height"]) > 0 and "width-w draft tree" in shown["tree"]["numbers"]
    return accepted[0]
