"""Quantized copies of the demo draft, made by llama.cpp's llama_model_quantize in a child process."""

import threading

import pytest

from specscope.core.cli.main import main
from specscope.core.models.demo import demo_pair
from specscope.core.engine.engine import Engine, EngineSettings, SpecSettings
from specscope.core.errors import ConfigError, ModelFileError
from specscope.core.models.gguf_file import check_gguf
from specscope.core.models.quantize import Quantization, output_name, parse_quant_types
from specscope.core.engine.sampling import SamplerSettings
from specscope.core.measure.stats import fold

PROMPT = "def fibonacci(n):\n    return"


@pytest.fixture(scope="module")
def q8(tmp_path_factory):
    out = tmp_path_factory.mktemp("q8")
    results = Quantization(demo_pair()[1], ["Q8_0"], out).run()
    assert [r.status for r in results] == ["done"], results[0].error
    return results[0]


def test_q8_copy_holds_q8_tensors_and_keeps_norms_f32(q8):
    assert q8.path.name == "demo-draft.Q8_0.gguf"
    info = check_gguf(q8.path)
    src = check_gguf(demo_pair()[1])
    assert "F16" in src.tensor_types and "Q8_0" not in src.tensor_types
    assert set(info.tensor_types) == {"Q8_0", "F32"}
    assert info.n_params == src.n_params
    assert info.metadata["general.file_type"] == 7          # LLAMA_FTYPE_MOSTLY_Q8_0
    assert q8.tensor_types == {"Q8_0": 8, "F32": 3}
    assert 8.0 < q8.bits_per_weight < 9.0 and q8.size == q8.path.stat().st_size
    assert not list(q8.path.parent.glob("*.part"))


def test_q8_copy_drafts_for_the_demo_target_losslessly(q8):
    settings = EngineSettings.deterministic(n_ctx=256)
    sampler = SamplerSettings()
    with Engine(demo_pair()[0], q8.path, settings) as engine:     # the vocabulary gate passes
        base = engine.baseline(PROMPT, sampler, 32)
        list(base)
        spec = engine.speculative(PROMPT, SpecSettings(n_max=4), sampler, 32)
        stats = fold(list(spec))
    assert spec.tokens == base.tokens and len(base.tokens) > 0
    assert stats.n_accept > 0


def test_k_quant_falls_back_where_rows_do_not_fit_the_block(tmp_path):
    # the demo draft's rows are 128 and 352 wide, not multiples of 256: llama.cpp gives
    # those tensors Q5_0 (for Q4_K) or Q8_0 (for Q6_K) instead
    (r,) = Quantization(demo_pair()[1], ["Q4_K_M"], tmp_path).run()
    assert r.status == "done", r.error
    assert r.fallbacks > 0
    assert "Q4_K" not in r.tensor_types and "Q5_0" in r.tensor_types
    assert set(check_gguf(r.path).tensor_types) == set(r.tensor_types)
    assert "fell back" in r.describe()


def test_stop_during_a_quantization_leaves_no_file(tmp_path):
    q = Quantization(demo_pair()[1], ["Q8_0", "Q4_0"], tmp_path)
    seen = []

    def progress(i, n, frac, path):
        seen.append(frac)
        if frac > 0:                      # llama.cpp has finished a tensor: the child is mid-file
            q.stop()

    results = q.run(progress)
    assert q.stopped and any(f > 0 for f in seen)
    assert [r.status for r in results] == ["stopped", "pending"]
    assert list(tmp_path.iterdir()) == []


def test_stop_from_another_thread_terminates_the_child(tmp_path):
    q = Quantization(demo_pair()[1], ["Q8_0"], tmp_path)
    started = threading.Event()
    q_run = []
    t = threading.Thread(target=lambda: q_run.extend(q.run(lambda *a: started.set())))
    t.start()
    assert started.wait(30)
    q.stop()
    t.join(60)
    assert q_run[0].status == "stopped"
    assert list(tmp_path.iterdir()) == []


def test_not_gguf_source_is_one_line_naming_it(tmp_path):
    bad = tmp_path / "notes.gguf"
    bad.write_text("hello")
    with pytest.raises(ModelFileError) as e:
        Quantization(bad, ["Q8_0"], tmp_path / "out")
    assert str(bad) in str(e.value) and "\n" not in str(e.value)
    with pytest.raises(ModelFileError, match="missing.gguf"):
        Quantization(tmp_path / "missing.gguf", ["Q8_0"], tmp_path / "out")


def test_unwritable_folder_is_one_line_naming_it(tmp_path):
    afile = tmp_path / "a-file"
    afile.write_text("x")
    with pytest.raises(ModelFileError, match="a-file: is not a folder"):
        Quantization(demo_pair()[1], ["Q8_0"], afile)
    # /proc refuses new files even to root, where permission bits would not
    q = Quantization(demo_pair()[1], ["Q8_0"], "/proc/self")
    with pytest.raises(ModelFileError) as e:
        q.run()
    assert str(e.value).startswith("/proc/self: cannot write") and "\n" not in str(e.value)


def test_existing_file_is_never_overwritten_silently(tmp_path):
    target = tmp_path / output_name(demo_pair()[1], "Q4_0")
    target.write_bytes(b"keep me")
    with pytest.raises(ModelFileError, match="already exists and is not overwritten"):
        Quantization(demo_pair()[1], ["Q4_0"], tmp_path)
    assert target.read_bytes() == b"keep me"


def test_requantizing_and_pointless_f16_are_refused(q8, tmp_path):
    with pytest.raises(ModelFileError, match="already quantized"):
        Quantization(q8.path, ["Q4_0"], tmp_path)
    with pytest.raises(ModelFileError, match="F16 copy would gain nothing"):
        Quantization(demo_pair()[1], ["F16"], tmp_path)
    with pytest.raises(ConfigError, match="unknown quantization type 'Q9_9'"):
        parse_quant_types("Q8_0,q9_9")


def test_cli_prints_each_file_and_the_bench_line(tmp_path, capsys):
    assert main(["quantize", str(demo_pair()[1]), "--type", "q4_0", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "demo-draft.Q4_0.gguf" in out and "bits/weight" in out
    assert f"-md {tmp_path / 'demo-draft.Q4_0.gguf'}" in out
    assert main(["quantize", str(demo_pair()[1]), "--type", "q4_0", "--out", str(tmp_path)]) == 2
    assert "already exists" in capsys.readouterr().err


def test_pure_gives_every_matrix_the_chosen_type(tmp_path):
    # by default the tied token embedding (the output matrix too) gets more bits: Q6_K, which
    # falls back to Q8_0 on 128-wide rows; --pure keeps it Q4_0
    (plain,) = Quantization(demo_pair()[1], ["Q4_0"], tmp_path / "plain").run()
    (pure,) = Quantization(demo_pair()[1], ["Q4_0"], tmp_path / "pure", pure=True).run()
    assert plain.tensor_types == {"Q4_0": 7, "Q8_0": 1, "F32": 3}
    assert pure.tensor_types == {"Q4_0": 8, "F32": 3}
    assert pure.size < plain.size


def test_a_full_disk_is_one_line_and_leaves_no_part_file(tmp_path):
    import subprocess
    disk = tmp_path / "small-disk"
    disk.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=300k", "tmpfs", str(disk)],
                      capture_output=True).returncode != 0:
        pytest.skip("mounting a small tmpfs needs root")
    try:
        q = Quantization(demo_pair()[1], ["Q8_0"], disk)
        (r,) = q.run()                                       # checked before starting
        assert r.status == "failed" and "not enough free space" in r.error
        q.expected_bytes = lambda qtype: 0       # past the check: llama.cpp's own write fails
        (r,) = q.run()
        assert r.status == "failed" and "is it full?" in r.error and "\n" not in r.error
        assert r.error.startswith(str(disk / "demo-draft.Q8_0.gguf"))
        assert list(disk.iterdir()) == []
    finally:
        subprocess.run(["umount", str(disk)])
