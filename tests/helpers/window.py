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
