"""The crash probe: a model that kills llama.cpp kills a child process, not SpecScope."""

import os
import subprocess
import sys

import pytest

from specscope.core.models import probe as probe_mod
from specscope.core.cli.main import main
from specscope.core.errors import ModelCrashError
from specscope.core.engine.engine import EngineSettings
from specscope.core.models.probe import ProbeSettings, first_crash, guard, probe


@pytest.fixture(autouse=True)
def own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("SPECSCOPE_CACHE_DIR", str(tmp_path / "cache"))


def test_the_crashing_model_really_aborts_llama_cpp(tiny_models):
    """The fixture is a real crash, not a stand-in: run in-process, llama.cpp aborts."""
    code = ("import sys; from specscope.core.cli.main import main; "
            f"sys.exit(main(['baseline', '-m', {str(tiny_models['crashing'])!r}, '-p', 'hi', '-n', '2', "
            "'--no-probe']))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True,
                          env={**os.environ, "GGML_NO_BACKTRACE": "1"}, timeout=120)
    assert proc.returncode == -6, proc.stderr[-500:]          # SIGABRT
    assert b"GGML_ASSERT" in proc.stderr


def test_a_crash_is_reported_with_signal_cause_and_log(tiny_models):
    v = probe(tiny_models["crashing"])
    assert not v.ok and v.status == "signal" and v.signal_name == "SIGABRT"
    assert "ggml_can_mul_mat" in v.failed_check
    assert "malformed" in v.cause
    assert v.log_tail and not v.cached
    line = v.describe()
    assert "crashing.gguf" in line and "SIGABRT" in line and "\n" not in line


def test_verdicts_are_cached_per_file_and_settings(tiny_models):
    first = probe(tiny_models["target"])
    assert first.ok and first.status == "ok" and not first.cached
    again = probe(tiny_models["target"])
    assert again.ok and again.cached and again.seconds == first.seconds
    other = probe(tiny_models["target"], ProbeSettings(repack="off"))
    assert other.ok and not other.cached
    assert other.settings["repack_used"] == "off"
    crashed = probe(tiny_models["crashing"])
    assert probe(tiny_models["crashing"]).cached and not crashed.cached


def test_a_clean_error_is_left_to_the_in_process_load(tmp_path):
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"GGUF but not really")
    v = probe(bad)
    assert v.ok and v.status == "error"
    assert not list((tmp_path / "cache").rglob("*.json"))     # not cached


def test_guard_raises_one_clear_error(tiny_models):
    assert first_crash(EngineSettings(), tiny_models["target"], tiny_models["draft"]) is None
    with pytest.raises(ModelCrashError) as info:
        guard(EngineSettings(), tiny_models["target"], tiny_models["crashing"])
    assert info.value.path.endswith("crashing.gguf")
    assert info.value.verdict.signal_name == "SIGABRT"


def test_cli_survives_a_crashing_model(capsys, tiny_models):
    for cmd in (["baseline", "-m", str(tiny_models["crashing"])],
                ["run", "-m", str(tiny_models["crashing"]), "-md", str(tiny_models["draft"])],
                ["run", "-m", str(tiny_models["target"]), "-md", str(tiny_models["crashing"])]):
        code = main([*cmd, "-p", "hi", "-n", "4"])
        out, err = capsys.readouterr()
        assert code == 2
        lines = err.strip().splitlines()
        assert len(lines) == 1 and "crashing.gguf" in lines[0] and "SIGABRT" in lines[0], err


def test_timeout_is_reported_and_not_cached(tiny_models, monkeypatch):
    v = probe(tiny_models["target"], ProbeSettings(n_threads=1), timeout_s=0.001)
    assert not v.ok and v.status == "timeout"
    assert "did not finish" in v.describe()
    assert probe(tiny_models["target"], ProbeSettings(n_threads=1)).ok


def test_the_key_follows_the_file(tiny_models, tmp_path):
    import shutil
    copy = shutil.copy(tiny_models["target"], tmp_path / "copy.gguf")
    k1 = probe_mod.probe_key(copy, ProbeSettings())
    with open(copy, "ab") as f:
        f.write(b"\0" * 32)
    assert probe_mod.probe_key(copy, ProbeSettings()) != k1


def test_a_tokenizer_that_does_not_fit_the_vocabulary_is_caught_in_the_child(tiny_models):
    """Issue 20: the demo draft with tokenizer.ggml.model 'llama' over its BPE vocabulary. It
    decodes fine; llama.cpp's tokenizer throws std::out_of_range on the first text and the
    process aborts. The probe tokenizes in its child, so the verdict names the step and the key."""
    bad = tiny_models["wrong_tokenizer"]
    code = ("import sys; from specscope.core.cli.main import main; "
            f"sys.exit(main(['run', '-m', {str(bad)!r}, '-md', {str(bad)!r}, '-p', 'hi', '-n', '4', "
            "'--no-probe']))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True,
                          env={**os.environ, "GGML_NO_BACKTRACE": "1"}, timeout=120)
    assert proc.returncode == -6 and b"std::out_of_range" in proc.stderr, proc.stderr[-500:]
    v = probe(bad)
    assert not v.ok and v.signal_name == "SIGABRT" and v.step == "tokenize"
    assert "tokenizer.ggml.model = 'llama'" in v.cause and "std::out_of_range" in v.cause
    line = v.describe()
    assert "wrong-tokenizer.gguf" in line and "while tokenizing text" in line and "\n" not in line
    assert "repacking" not in line and not v.kernels_matter     # repacking off would not help
