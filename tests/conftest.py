import os
import sys
import tempfile
import threading
from fnmatch import fnmatch
from pathlib import Path

import pytest

os.environ["QT_QPA_PLATFORM"] = os.environ.get("QT_QPA_PLATFORM") or "offscreen"
# llama.cpp's OpenMP threads wait at their barriers asleep, not spinning (set before llama.cpp
# loads; children inherit it): on a machine other processes load, spinning threads made the
# fast tier 5-10x slower (docs/threads.md). What the tests check does not depend on it.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
# calibrations and crash-probe verdicts go to a cache of the test session's own, not the user's
os.environ["SPECSCOPE_CACHE_DIR"] = tempfile.mkdtemp(prefix="specscope-test-cache-")
# the window's autosave of the last run (app/session_files.py) too
os.environ["SPECSCOPE_DATA_DIR"] = tempfile.mkdtemp(prefix="specscope-test-data-")
sys.path.insert(0, str(Path(__file__).parent))

from helpers import ggufgen  # noqa: E402
from helpers import realmodel  # noqa: E402
from helpers.window import pair, settings, window  # noqa: E402,F401 - the window's fixtures

# The test tiers (markers, registered in pyproject.toml; docs/testing.md). A test's tiers follow
# from the fixtures it uses and the file it is in; `unit`, the fast tier, is every test in none
# of them and not marked slow: python -m pytest -m unit
TIER_FIXTURES = {"gui": {"qapp"}, "real_model": {"smollm2"}, "rpc": {"rpc_build", "rpc_server"}}
TIER_FILES = {"gui": ("test_app_*.py", "test_chat_window.py"),
              "bundle": ("test_bundle.py", "test_wheel.py"),
              "conformance": ("test_drafters_golden.py", "test_*_conformance.py")}


def pytest_collection_modifyitems(items):
    for item in items:
        tiers = {t for t, names in TIER_FIXTURES.items() if names & set(item.fixturenames)}
        tiers |= {t for t, names in TIER_FILES.items() if any(fnmatch(item.path.name, n) for n in names)}
        callspec = getattr(item, "callspec", None)
        if callspec is not None and "smollm2" in callspec.id:   # a case that fetches it itself
            tiers.add("real_model")
        for tier in sorted(tiers):
            item.add_marker(tier)
        if not tiers and item.get_closest_marker("slow") is None:
            item.add_marker("unit")


@pytest.fixture(scope="session")
def smollm2():
    """SmolLM2-135M-Instruct Q4_1 (tests/helpers/realmodel.py). In CI the tier must run: no skip."""
    try:
        return realmodel.smollm2_path()
    except (RuntimeError, OSError) as exc:
        if os.environ.get("CI"):
            pytest.fail(f"the real-model tier needs SmolLM2: {exc}")
        pytest.skip(f"SmolLM2-135M-Instruct Q4_1 is not available: {exc}")


@pytest.fixture(scope="session")
def tiny_models(tmp_path_factory):
    """Tiny F32 models generated with the gguf package (no download, seconds to make)."""
    d = tmp_path_factory.mktemp("models")
    weights = ggufgen.llama_weights(len(ggufgen.bpe_vocab()[0]), n_layer=2, seed=1)
    _, first = ggufgen.first_layer_only(weights)
    agree_target, agree_draft = ggufgen.first_layer_only(
        ggufgen.llama_weights(len(ggufgen.bpe_vocab()[0]), n_layer=3, seed=3))
    paths = {
        # a 2-layer target and a draft made of its first layer: agrees often, not always
        "target": ggufgen.write_llama(d / "target.gguf", weights, n_layer=2),
        "draft": ggufgen.write_llama(d / "draft.gguf", first, n_layer=1),
        # a draft that computes exactly what the target computes
        "agree_target": ggufgen.write_llama(d / "agree-target.gguf", agree_target, n_layer=3),
        "agree_draft": ggufgen.write_llama(d / "agree-draft.gguf", agree_draft, n_layer=1),
        # unrelated random weights
        "random_draft": ggufgen.write_llama(d / "random-draft.gguf", n_layer=1, seed=7),
        # recurrent memory (no partial sequence removal)
        "mamba": ggufgen.write_mamba(d / "mamba.gguf", seed=4),
        "mamba_draft": ggufgen.write_mamba(d / "mamba-draft.gguf", n_layer=1, seed=5),
        # another vocabulary: fewer merges, so the EOS id and the sizes differ
        "foreign": ggufgen.write_llama(d / "foreign.gguf", n_layer=1, n_vocab_merges=10, seed=8),
        # llama.cpp aborts on it at the first decode (SIGABRT): for the crash probe
        "crashing": ggufgen.write_crashing_llama(d / "crashing.gguf"),
    }
    # the demo draft with tokenizer.ggml.model 'llama' (SentencePiece) over its byte-level BPE
    # vocabulary: llama.cpp's tokenizer throws std::out_of_range on the first text (SIGABRT)
    from specscope.core.models.demo import DEMO_DRAFT, models_dir
    source = models_dir() / DEMO_DRAFT
    paths["wrong_tokenizer"] = ggufgen.with_string(source if source.is_file() else paths["draft"],
                                                   d / "wrong-tokenizer.gguf", "tokenizer.ggml.model", "llama")
    return paths
    return paths


@pytest.fixture
def quiet_machine(monkeypatch):
    """Calibrations read as taken on a quiet machine and cached ones pass the drift check, so
    that what a test sees of the cache does not depend on what else runs on the machine
    (test_calibrate tests the load reading and the drift check themselves)."""
    from test_calibrate import FixedLoad
    from specscope.core.measure.cost import calibrate as cb
    from specscope.core.measure.cost import cache as cc
    monkeypatch.setattr(cb, "LoadMeter", lambda: FixedLoad(0.0))
    monkeypatch.setattr(cc, "DRIFT_TOLERANCE", float("inf"))
    # nor do decodes slowing down meanwhile (threads auto's evidence of load)
    monkeypatch.setattr("specscope.core.models.threads.ThreadGovernor.SLOW", float("inf"))


@pytest.fixture(autouse=True)
def no_leftover_threads():
    """Fail a test that leaves a thread running."""
    before = set(threading.enumerate())
    yield
    import time
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        extra = [t for t in threading.enumerate() if t not in before and t.is_alive()
                 and not t.daemon]
        if not extra:
            return
        time.sleep(0.05)
    pytest.fail(f"threads left running: {[t.name for t in extra]}")


@pytest.fixture(scope="session")
def rpc_build():
    """The folder of an RPC-enabled llama.cpp build (libllama.so, ggml libs, ggml-rpc-server)
    from the same source as the installed llama-cpp-python: built once, cached under
    ~/.cache/specscope/llama-rpc (tests/helpers/rpc_build.py; minutes on 2 cores the first time).
    Skips with the reason where it cannot be built; in CI it must build."""
    from helpers import rpc_build as rb
    try:
        return rb.ensure()
    except rb.BuildUnavailable as exc:
        if os.environ.get("CI"):
            pytest.fail(f"the RPC tests need the RPC build: {exc}")
        pytest.skip(f"no RPC-enabled llama.cpp build: {exc}")


@pytest.fixture(scope="session")
def rpc_server(rpc_build):
    """A ggml-rpc-server from that build on 127.0.0.1 (a free port): its endpoint."""
    from helpers import rpc_build as rb
    proc, endpoint = rb.start_server(rpc_build)
    yield endpoint
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except Exception:
        proc.kill()
        proc.wait()
