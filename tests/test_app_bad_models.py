"""The window on model files that used to kill the process or print raw bytes: a
vocabulary-less model (llama.cpp GGML_ASSERTs on it), a corrupted key name, and a tokenizer
model that does not fit the vocabulary (llama.cpp's tokenizer throws std::out_of_range).
Each becomes one escaped line in the banner, and the window keeps working."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("pytestqt")

from helpers import ggufgen  # noqa: E402
from specscope.core.session.controller import RunState  # noqa: E402
from helpers.window import for_short_runs, open_window, run_and_wait  # noqa: E402


@pytest.fixture
def window(qtbot, pair, settings):  # noqa: F811
    w = for_short_runs(open_window(qtbot, pair, settings), n_predict=8, n_ctx=256, prompt="x = ")
    yield w
    w.close()


def corrupted_key_model(source: Path, path: Path) -> Path:
    data = bytearray(source.read_bytes())
    key = b"general.name"
    at = data.index(key)
    data[at:at + len(key)] = b"gen\0ra\n.\x1bame"
    data[at + len(key):at + len(key) + 4] = (77).to_bytes(4, "little")
    path.write_bytes(bytes(data))
    return path


def one_clean_line(text: str) -> bool:
    return not any(c in text for c in "\n\r\0\x1b")


def test_bad_models_get_one_clean_line_and_the_window_keeps_working(qtbot, window, pair, tmp_path):
    no_vocab = ggufgen.write_llama(tmp_path / "novocab.gguf", n_layer=1, model="no_vocab")
    bad_key = corrupted_key_model(Path(pair[1]), tmp_path / "badkey.gguf")
    wrong_tokenizer = ggufgen.with_string(Path(pair[1]), tmp_path / "wrong-tokenizer.gguf",
                                          "tokenizer.ggml.model", "llama")
    for target, draft, words in ((Path(pair[0]), no_vocab, "has no tokenizer"),
                                 (no_vocab, Path(pair[1]), "has no tokenizer"),
                                 (Path(pair[0]), bad_key, r"metadata key 'gen\0ra\n.\x1bame'"),
                                 (wrong_tokenizer, wrong_tokenizer, "tokenizer.ggml.model = 'llama'")):
        with qtbot.waitSignal(window.pairs.report_shown, timeout=30_000):
            window.pair_panel.set_pair(target, draft)
        assert run_and_wait(qtbot, window, window.run_clicked) == "error"
        message = window.banner.message
        assert words in message and one_clean_line(message), message
        assert window.controller.state is RunState.IDLE
    window.pair_panel.set_pair(Path(pair[0]), Path(pair[1]))
    assert run_and_wait(qtbot, window, window.run_clicked) in ("n_predict", "eog")


def test_a_bad_file_keeps_the_good_one_s_facts(qtbot, window, pair, tmp_path):
    """A missing draft: its column stays empty, the target's facts are shown (and the other way
    round); the verdict says what is wrong."""
    missing = tmp_path / "missing.gguf"
    panel = window.pair_panel
    for target, draft, good in ((Path(pair[0]), missing, 0), (missing, Path(pair[1]), 1)):
        with qtbot.waitSignal(window.pairs.report_shown, timeout=30_000):
            panel.set_pair(target, draft)
        qtbot.waitUntil(lambda: panel.facts.item(0, good).text() == "llama", timeout=30_000)
        assert panel.facts.item(0, 1 - good).text() == "–"
        assert "missing.gguf: no such file" in panel.verdict.text()


def test_a_bad_file_picked_by_mistake_loses_nothing_and_its_error_goes_with_it(qtbot, window,
                                                                              pair, tmp_path):
    """A truncated target picked after a run cleared the run and its conversation, and the
    banner's error hid where they went; choosing the pair again did not bring them back, and
    the error stayed above a compatible pair."""
    w = window
    assert run_and_wait(qtbot, w, w.run_clicked) in ("n_predict", "eog")
    assert run_and_wait(qtbot, w, lambda: w.chat_send("and more")) in ("n_predict", "eog")
    run, turns = w.controller.session, list(w.chat_log.turns)
    text = w.token_view.toPlainText()
    trunc = tmp_path / "trunc.gguf"
    trunc.write_bytes(Path(pair[0]).read_bytes()[:100_000])
    with qtbot.waitSignal(w.pairs.report_shown, timeout=30_000):
        w.pair_panel.set_pair(trunc, Path(pair[1]))
    assert w.controller.session is None                        # not this pair's run
    assert w.banner.level == "error" and "trunc.gguf" in w.banner.message
    assert "comes back when its pair is chosen again" in w.banner.message
    with qtbot.waitSignal(w.pairs.report_shown, timeout=30_000):
        w.pair_panel.set_pair(Path(pair[0]), Path(pair[1]))
    assert w.controller.session is run and w.token_view.toPlainText() == text
    assert w.chat_log.turns == turns and w.chat_bar.reply.isEnabled()      # the conversation goes on
    assert w.banner.level != "error" or not w.banner.isVisible()           # the error went
    assert run_and_wait(qtbot, w, lambda: w.chat_send("third")) in ("n_predict", "eog")
    assert len(w.chat_log.turns) == 3


def test_two_pairs_each_with_a_run_swap_back_and_forth(qtbot, window, pair):
    """Each pair's run comes back with its pair: coming back to the first must not forget the
    second's (it did: the run swapped in cleared the one to swap out)."""
    w = window
    target, draft = Path(pair[0]), Path(pair[1])
    assert run_and_wait(qtbot, w, w.run_clicked) in ("n_predict", "eog")
    first = w.controller.session
    with qtbot.waitSignal(w.pairs.report_shown, timeout=30_000):
        w.pair_panel.set_pair(target, None)                       # the target alone
    assert w.controller.session is None
    assert run_and_wait(qtbot, w, w.baseline_clicked) in ("n_predict", "eog")
    second = w.controller.session
    for pair_now, run in (((target, draft), first), ((target, None), second), ((target, draft), first)):
        with qtbot.waitSignal(w.pairs.report_shown, timeout=30_000):
            w.pair_panel.set_pair(*pair_now)
        assert w.controller.session is run, pair_now
