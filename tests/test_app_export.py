"""``specscope export``: a recorded session's rounds as a GIF (and PNG frames) for slides, drawn
as the window draws them: the text up to each round and the round's step picture."""

from __future__ import annotations

import pytest

pytest.importorskip("pytestqt")
PIL = pytest.importorskip("PIL.Image")

from specscope.app.main import cli  # noqa: E402
from specscope.core.models.demo import demo_pair  # noqa: E402


@pytest.fixture(scope="module")
def session(tmp_path_factory):
    path = tmp_path_factory.mktemp("export") / "demo.jsonl"
    target, draft = demo_pair()[:2]
    assert cli(["run", "-m", str(target), "-md", str(draft), "-n", "24", "-t", "1", "-td", "1",
                "--no-probe", "-p", "def add(a, b):\n    return a + b\n", "--record", str(path)]) == 0
    return path


def test_a_gif_has_a_frame_per_round_at_the_size_asked(qtbot, session, tmp_path, capsys):
    from specscope.core.session.session import Session
    rounds = len(Session.load(session).run.events)
    gif, pngs = tmp_path / "run.gif", tmp_path / "frames"
    assert cli(["export", str(session), "--gif", str(gif), "--frames", str(pngs), "--size", "800x450",
                "--pace-ms", "700"]) == 0
    assert f"{rounds} frames, 800x450, 700 ms each" in capsys.readouterr().out
    with PIL.open(gif) as im:
        assert im.n_frames == rounds >= 3 and im.size == (800, 450)
        im.seek(rounds - 1)
        last = im.convert("RGB")
    colours = {c for _, c in last.getcolors(800 * 450)}
    # the text's accepted tokens and the target's own, in the step picture and the text
    near = lambda rgb: any(sum(abs(a - b) for a, b in zip(rgb, c)) < 24 for c in colours)  # noqa: E731
    assert near((0xbb, 0xf0, 0xc6)) and near((0xc9, 0xdc, 0xff))
    assert sorted(p.name for p in pngs.iterdir())[:2] == ["round_0001.png", "round_0002.png"]
    assert len(list(pngs.iterdir())) == rounds


def test_bad_input_is_one_line_and_exit_status_2(qtbot, tmp_path, capsys):
    assert cli(["export", str(tmp_path / "none.jsonl"), "--gif", str(tmp_path / "x.gif")]) == 2
    assert "none.jsonl: no such file" in capsys.readouterr().err
    bad = tmp_path / "bad.jsonl"
    bad.write_text("not a session\n")
    assert cli(["export", str(bad), "--gif", str(tmp_path / "x.gif")]) == 2
    assert "cannot be opened" in capsys.readouterr().err
    assert cli(["export", str(bad)]) == 2 and "--gif FILE" in capsys.readouterr().err
    assert not (tmp_path / "x.gif").exists()


def test_the_window_exports_the_run_shown_and_comes_back(qtbot, pair, settings, session, tmp_path):
    from helpers.window import open_window
    w = open_window(qtbot, pair, settings, preload=False)
    try:
        assert w.files.open_session(session)
        n = len(w.controller.session.run.events)
        w.tabs.setCurrentIndex(0)
        assert w.export_rounds(tmp_path / "w.gif") == n
        with PIL.open(tmp_path / "w.gif") as im:
            assert im.n_frames == n and im.size == (w.width(), w.height())
        assert w.controller.shown_upto == n and w.tabs.currentIndex() == 0
    finally:
        w.close()
