"""The model library (core/models/library.py, ``specscope models``): each store's real layout
built in a temporary home with real GGUF files (generated ones, the demo pair and its EAGLE-3
head); broken manifests, dangling links and files that are not GGUF are one line each."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from helpers import ggufgen
from specscope.core.cli.main import main
from specscope.core.models.demo import DEMO_EAGLE3_HEAD, demo_pair, models_dir
from specscope.core.models.library import scan_library

CHATML = ("{% for m in messages %}{{'<|im_start|>' + m['role'] + '\n' + m['content'] + '<|im_end|>\n'}}"
          "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}")
COMMIT = "0123456789abcdef0123456789abcdef01234567"


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    """A home holding one GGUF file in each store's layout, and the usual mistakes."""
    home = tmp_path_factory.mktemp("home")
    src = tmp_path_factory.mktemp("src")
    chat = ggufgen.write_llama(src / "chat.gguf", n_layer=1, n_embd=32, n_ff=64, n_head=2,
                               n_head_kv=1, chat_template=CHATML, specials=["<|im_start|>", "<|im_end|>"],
                               name="tiny-chat")
    target, draft = demo_pair()

    def put(path: Path, source: Path) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, path)
        return path

    # LM Studio: publisher/repository/file.gguf, plus a dangling link
    put(home / ".lmstudio/models/specscope/demo/demo-target.gguf", target)
    (home / ".lmstudio/models/specscope/demo/gone.gguf").symlink_to(home / "nowhere.gguf")
    # Ollama: a manifest naming its model layer's blob; a broken manifest; one whose blob is gone
    ollama = home / ".ollama/models"
    blob = "sha256-" + "ab" * 32
    put(ollama / "blobs" / blob, chat)
    manifest = {"schemaVersion": 2, "layers": [
        {"mediaType": "application/vnd.ollama.image.template", "digest": "sha256-" + "cd" * 32},
        {"mediaType": "application/vnd.ollama.image.model", "digest": blob.replace("-", ":"),
         "size": chat.stat().st_size}]}
    lib = ollama / "manifests/registry.ollama.ai/library"
    (lib / "tinychat").mkdir(parents=True)
    (lib / "tinychat/latest").write_text(json.dumps(manifest))
    (lib / "broken").mkdir()
    (lib / "broken/latest").write_text("{not json")
    (lib / "lost").mkdir()
    lost = dict(manifest, layers=[dict(manifest["layers"][1], digest="sha256:" + "ef" * 32)])
    (lib / "lost/latest").write_text(json.dumps(lost))
    # the Hugging Face hub cache: blobs, refs, snapshots linked to blobs
    repo = home / ".cache/huggingface/hub/models--specscope--demo-draft-GGUF"
    put(repo / "blobs" / ("12" * 32), draft)
    (repo / "refs").mkdir()
    (repo / "refs/main").write_text(COMMIT)
    snap = repo / "snapshots" / COMMIT
    snap.mkdir(parents=True)
    (snap / "demo-draft.gguf").symlink_to(Path("../../blobs") / ("12" * 32))
    # llama.cpp's download cache, Jan, GPT4All
    put(home / ".cache/llama.cpp/specscope_demo_demo-eagle3-head.gguf", models_dir() / DEMO_EAGLE3_HEAD)
    put(home / "jan/models/tiny/tiny.gguf", chat)
    put(home / ".local/share/nomic.ai/GPT4All/not-a-model.gguf", src / "chat.gguf").write_bytes(b"hello")
    return home


def env_of(home: Path) -> dict:
    return {}      # no store moved by a variable: each under the home


def test_each_store_is_found_with_its_facts_and_each_mistake_is_one_line(home):
    lib = scan_library(home=home, env=env_of(home))
    by_store = {m.store: m for m in lib.models}
    assert set(by_store) == {"LM Studio", "Ollama", "Hugging Face", "llama.cpp", "Jan"}
    lm = by_store["LM Studio"]
    assert lm.name == "specscope/demo/demo-target.gguf" and lm.architecture == "llama"
    assert lm.params > 1_000_000 and lm.quantization == "F16" and lm.context_length == 2048
    assert not lm.chat_template and lm.kind == "model"
    ol = by_store["Ollama"]
    assert ol.name == "tinychat:latest" and ol.chat_template and ol.path.endswith("sha256-" + "ab" * 32)
    hf = by_store["Hugging Face"]
    assert hf.name == "specscope/demo-draft-GGUF/demo-draft.gguf" and "snapshots" in hf.path
    assert by_store["llama.cpp"].kind == "eagle3 head"
    assert by_store["llama.cpp"].drafts_with == "an eagle3 head"
    # Jan holds the same bytes as Ollama's blob, but another file: both listed
    assert by_store["Jan"].name == "tiny/tiny.gguf" and by_store["Jan"].chat_template
    problems = "\n".join(lib.problems)
    assert len(lib.problems) == 4, problems
    assert "gone.gguf: a dangling link" in problems
    assert "broken/latest: an Ollama manifest that names no model layer (Ollama broken:latest)" in problems
    assert "Ollama lost:latest's model blob is missing" in problems
    assert "not-a-model.gguf" in problems and "GGUF" in problems


def test_a_variable_moves_a_store_and_a_folder_is_searched_too(home, tmp_path):
    moved = tmp_path / "elsewhere"
    shutil.copytree(home / ".cache/llama.cpp", moved)
    lib = scan_library([tmp_path / "mine", home / "jan"], home=tmp_path / "empty-home",
                       env={"LLAMA_CACHE": str(moved)})
    assert [(m.store, Path(m.path).parent) for m in lib.models if m.store == "llama.cpp"] == \
        [("llama.cpp", moved)]
    assert [m.name for m in lib.models if m.store == "folder"] == ["models/tiny/tiny.gguf"]
    assert lib.problems == [f"{tmp_path / 'mine'}: no such folder"]


def test_models_json_and_the_ranking_for_a_target(home, monkeypatch, capsys):
    monkeypatch.setenv("HOME", str(home))
    for var in ("XDG_CACHE_HOME", "HF_HOME", "HF_HUB_CACHE", "LLAMA_CACHE", "OLLAMA_MODELS"):
        monkeypatch.delenv(var, raising=False)
    assert main(["models", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert len(doc["models"]) == 5 and len(doc["problems"]) == 4
    assert {"name", "architecture", "params", "quantization", "size", "context_length",
            "chat_template", "kind", "mtp_blocks"} <= set(doc["models"][0])
    target = next(m["path"] for m in doc["models"] if m["store"] == "LM Studio")
    assert main(["models", "--for", target]) == 0
    text = capsys.readouterr().out
    ranked = text[text.index("What can draft for"):]
    # the demo draft (Hugging Face) first, then the EAGLE-3 head (llama.cpp's cache)
    assert ranked.index("demo-draft.gguf (Hugging Face): --spec-type draft-simple") < \
        ranked.index("(llama.cpp): --spec-type draft-eagle3")
    assert "the n-gram types" in ranked
    assert "tinychat:latest (Ollama)" in ranked          # another vocabulary: a verdict line too


def test_the_window_s_library_lists_them_and_sets_the_pair(qtbot, window, home, monkeypatch):
    monkeypatch.setenv("HOME", str(home))
    for var in ("XDG_CACHE_HOME", "HF_HOME", "HF_HUB_CACHE", "LLAMA_CACHE", "OLLAMA_MODELS"):
        monkeypatch.delenv(var, raising=False)
    w = window
    dialog = w.model_library()
    qtbot.waitUntil(lambda: dialog.library is not None, timeout=30_000)
    assert dialog.table.rowCount() == 5
    assert "Problems (4)" in dialog.ranking.toPlainText()
    names = [dialog.table.item(r, 0).text() for r in range(5)]
    row = names.index("specscope/demo/demo-target.gguf")
    assert not dialog.as_target.isEnabled() and not dialog.as_draft.isEnabled()   # nothing chosen
    dialog.table.selectRow(row)
    assert dialog.as_target.isEnabled() and dialog.as_draft.isEnabled()
    dialog.as_target.click()
    assert w.pair_panel.pair()[0] == home / ".lmstudio/models/specscope/demo/demo-target.gguf"
    dialog.table.selectRow(names.index("specscope/demo-draft-GGUF/demo-draft.gguf"))
    dialog.as_draft.click()
    assert w.pair_panel.pair()[1].name == "demo-draft.gguf"
    dialog.rank.click()
    qtbot.waitUntil(lambda: dialog.rank.isEnabled(), timeout=60_000)
    text = dialog.ranking.toPlainText()
    assert text.startswith("What can draft for demo-target.gguf") and "draft-eagle3" in text
    assert "Problems (4)" in text                       # the scan's problems stay beside it
    dialog.filter.setText("ollama")
    assert [dialog.table.isRowHidden(r) for r in range(5)].count(False) == 1
    dialog.close()


def test_models_with_none_found_names_the_demo_pair(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("HOME", str(tmp_path))
    for var in ("XDG_CACHE_HOME", "HF_HOME", "HF_HUB_CACHE", "LLAMA_CACHE", "OLLAMA_MODELS"):
        monkeypatch.delenv(var, raising=False)
    assert main(["models"]) == 0
    out = capsys.readouterr().out
    target, draft = demo_pair()
    assert "No GGUF model found" in out and str(target) in out and str(draft) in out


def test_a_long_name_keeps_its_file_name_in_the_listing(tmp_path, monkeypatch, capsys):
    deep = tmp_path / "mine" / ("a-very-long-publisher-folder-name" * 2) / "the-variant-Q4_K_M.gguf"
    deep.parent.mkdir(parents=True)
    shutil.copy(demo_pair()[1], deep)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    for var in ("XDG_CACHE_HOME", "HF_HOME", "HF_HUB_CACHE", "LLAMA_CACHE", "OLLAMA_MODELS"):
        monkeypatch.delenv(var, raising=False)
    assert main(["models", "--folder", str(tmp_path / "mine")]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if "…" in x and "folder" in x)
    assert line.split()[0].endswith("Q4_K_M.gguf") and len(line.split()[0]) == 44


def test_a_draft_as_big_as_its_target_is_ranked_with_its_warning(tmp_path, capsys):
    import shutil

    from specscope.core.models.demo import demo_pair
    target, draft = demo_pair()
    shutil.copy(target, tmp_path / "twin.gguf")            # fits, but costs a target pass
    shutil.copy(draft, tmp_path / "small.gguf")
    assert main(["models", "--folder", str(tmp_path), "--for", str(tmp_path / "small.gguf")]) == 0
    text = capsys.readouterr().out
    line = next(x for x in text.splitlines() if "twin.gguf" in x and "--spec-type" in x)
    assert line.endswith("the draft is not smaller than the target: speculation cannot pay"), line
