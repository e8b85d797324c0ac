"""``specscope export``: a recorded session's rounds as a GIF, an MP4 video and PNG or SVG frames
for slides, drawn as the window draws them: the text up to each round and the round's step
picture."""

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


def test_an_mp4_shows_each_round_for_its_pace(qtbot, session, tmp_path, capsys):
    from specscope.app.video import FPS, ffmpeg_exe
    from specscope.core.session.session import Session
    if ffmpeg_exe() is None:
        pytest.skip("no ffmpeg (the test extra installs imageio-ffmpeg)")
    import imageio_ffmpeg
    rounds = len(Session.load(session).run.events)
    mp4 = tmp_path / "run.mp4"
    assert cli(["export", str(session), "--mp4", str(mp4), "--size", "641x361", "--pace-ms", "400"]) == 0
    assert f"{rounds} rounds, 641x361, 400 ms each" in capsys.readouterr().out
    assert mp4.read_bytes()[4:8] == b"ftyp"                    # an MP4 container
    n_frames, seconds = imageio_ffmpeg.count_frames_and_secs(str(mp4))
    assert seconds == pytest.approx(rounds * 0.4, abs=2 / FPS)
    assert n_frames == pytest.approx(rounds * 0.4 * FPS, abs=2)
    reader = imageio_ffmpeg.read_frames(str(mp4))
    meta = next(reader)
    assert tuple(meta["size"]) == (642, 362)                    # padded to even sides for H.264
    reader.close()


def test_svg_frames_keep_the_text_as_text(qtbot, session, tmp_path, capsys):
    import xml.etree.ElementTree as ET
    from specscope.core.session.session import Session
    s = Session.load(session)
    out = tmp_path / "svg"
    assert cli(["export", str(session), "--frames", str(out), "--format", "svg", "--size", "1024x640"]) == 0
    files = sorted(out.iterdir())
    assert [f.name for f in files[:2]] == ["round_0001.svg", "round_0002.svg"] and len(files) == len(s.run.events)
    root = ET.parse(files[-1]).getroot()
    assert root.tag.endswith("svg") and root.get("viewBox") == "0 0 1024 640"
    sizes = {float(e.get("font-size")) for e in root.iter() if e.get("font-size")}
    assert max(sizes) >= 12                                   # the type at the window's dpi, not 72
    words = " ".join(t.text or "" for t in root.iter() if t.tag.endswith("text"))
    assert "Round" in words and "seed" in words              # the step picture's words, as text


def test_mp4_without_ffmpeg_says_how_to_get_it(qtbot, session, tmp_path, capsys, monkeypatch):
    monkeypatch.setattr("specscope.app.video.ffmpeg_exe", lambda: None)
    assert cli(["export", str(session), "--mp4", str(tmp_path / "x.mp4")]) == 2
    assert "specscope[video]" in capsys.readouterr().err and not (tmp_path / "x.mp4").exists()


def test_bad_input_is_one_line_and_exit_status_2(qtbot, tmp_path, capsys):
    assert cli(["export", str(tmp_path / "none.jsonl"), "--gif", str(tmp_path / "x.gif")]) == 2
    assert "none.jsonl: no such file" in capsys.readouterr().err
    bad = tmp_path / "bad.jsonl"
    bad.write_text("not a session\n")
    assert cli(["export", str(bad), "--gif", str(tmp_path / "x.gif")]) == 2
    assert "cannot be opened" in capsys.readouterr().err
    assert cli(["export", str(bad)]) == 2 and "--gif FILE" in capsys.readouterr().err
    assert cli(["export", str(bad), "--gif", str(tmp_path / "x.gif"), "--pace-ms", "0"]) == 2
    assert "--pace-ms 0" in capsys.readouterr().err
    assert not (tmp_path / "x.gif").exists()


def test_an_output_that_cannot_be_written_is_one_line_before_any_frame(qtbot, session, tmp_path,
                                                                        capsys):
    a_file = tmp_path / "notes.txt"
    a_file.write_text("x")
    for argv, says in [(["--gif", str(tmp_path)], f"{tmp_path}: the GIF is written as a .gif file"),
                       (["--gif", str(a_file)], "the GIF is written as a .gif file"),
                       (["--mp4", str(tmp_path / "x.gif")], "the video is written as a .mp4 file"),
                       (["--frames", str(a_file)], f"{a_file}: this is a file; the frames need a folder"),
                       (["--gif", str(a_file / "x.gif")], f"({a_file} is not a folder)")]:
        assert cli(["export", str(session), *argv]) == 2, argv
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and says in err, (argv, err)


def test_the_window_exports_the_run_shown_and_comes_back(qtbot, pair, settings, session, tmp_path, monkeypatch):
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
        from specscope.app import video
        if video.ffmpeg_exe() is not None:
            assert w.export_rounds(tmp_path / "w.mp4", pace_ms=500) == n
            assert (tmp_path / "w.mp4").read_bytes()[4:8] == b"ftyp"
        monkeypatch.setattr(video, "ffmpeg_exe", lambda: None)   # no ffmpeg: the banner says how
        assert w.export_rounds(tmp_path / "x.mp4") == 0
        assert w.banner.level == "warning" and "specscope[video]" in w.banner.message
        assert w.controller.shown_upto == n
    finally:
        w.close()


def test_each_frame_shows_all_of_its_round_s_words_and_nothing_to_click(qtbot, session):
    """A slide cannot scroll: the words under the picture were cut ("Next: id_last = …" half
    drawn) beside a scroll bar, below the window's menus, toolbar and an idle chat bar."""
    from specscope.app.export import walk
    seen = 0
    for w, k, n in walk(session, (1280, 720)):
        words = w.round_view.text
        area = words.parentWidget().parentWidget().parentWidget()        # its QScrollArea
        assert not area.verticalScrollBar().isVisible(), k
        assert words.height() >= words.heightForWidth(words.width()), k
        assert not w.chat_bar.isVisible() and not w.menuBar().isVisible()
        assert not w.run_toolbar.isVisible() and w.token_view.height() >= 100
        seen += 1
    assert seen == n >= 3
