"""Chat prompts: the target's own template, rendered in Jinja2's sandbox, tokenized as llama.cpp does.

Real llama.cpp on generated GGUF files (tests/helpers/ggufgen.py) with chat templates:
a ChatML template, a template that writes the BOS itself over an SPM vocabulary
that adds one, templates that are broken, and one that reaches for ``os``.
"""

from __future__ import annotations

import ctypes
import json
import os

import pytest

from helpers import ggufgen
from specscope.core.models.chat import ChatTemplateError, render_chat, render_template
from specscope.core.cli.main import main
from specscope.core.models.llama import Model

CHATML = ("{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + message['content']"
          " + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}"
          "{{ '<|im_start|>assistant\n' }}{% endif %}")
BOS_CHATML = "{{ bos_token }}" + CHATML
CHAT_TOKENS = ["<|im_start|>", "<|im_end|>"]


def evil_template(marker) -> str:
    """CVE-2024-34359's shape: reach os through a global's __globals__ and run a command."""
    return ("{% for m in messages %}{{ m.content }}{% endfor %}"
            f"{{{{ lipsum.__globals__['os'].popen('touch {marker}').read() }}}}")


@pytest.fixture(scope="module")
def chat_models(tmp_path_factory):
    d = tmp_path_factory.mktemp("chat")
    marker = d / "PWNED"
    common = dict(n_layer=1, n_embd=32, n_ff=64, n_head=2, n_head_kv=1, seed=11)
    return {
        "marker": marker,
        "chatml": ggufgen.write_llama(d / "chatml.gguf", specials=CHAT_TOKENS, chat_template=CHATML,
                                      add_bos=False, **common),
        # SentencePiece vocabulary that adds a BOS, with a template that writes one too
        "spm_bos": ggufgen.write_llama(d / "spm-bos.gguf", model="llama", bos=1, eos=2, add_bos=True,
                                       tokens=ggufgen.spm_vocab(CHAT_TOKENS),
                                       chat_template=BOS_CHATML, **common),
        "evil": ggufgen.write_llama(d / "evil.gguf", specials=CHAT_TOKENS,
                                    chat_template=evil_template(marker), **common),
        "evil_cycler": ggufgen.write_llama(
            d / "evil-cycler.gguf", specials=CHAT_TOKENS, **common,
            chat_template=f"{{{{ cycler.__init__.__globals__.os.popen('touch {marker}') }}}}"),
        "syntax": ggufgen.write_llama(d / "syntax.gguf", chat_template="{% for m in messages %}{{ m.content }",
                                      **common),
        "raises": ggufgen.write_llama(d / "raises.gguf", **common, chat_template=(
            "{% if messages[0]['role'] == 'system' %}{{ raise_exception('System role not supported') }}"
            "{% endif %}{{ messages[0]['content'] }}")),
        "none": ggufgen.write_llama(d / "plain.gguf", **common),
    }


def run_cli(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


# ---------------------------------------------------------------------------- rendering

TEMPLATES = {
    "chatml": CHATML,
    "bos": BOS_CHATML,
    # llama-cpp-python's own Llama-3 and Mistral templates (raise_exception, trim, loop.index0)
    "llama3": None,
    "mistral": None,
    # the {% generation %} tag, loop controls, tojson keeping non-ASCII text, trim/lstrip blocks
    "extensions": ("{% generation %}{{ messages[0]['content'] }}{% endgeneration %}"
                   "{% for m in messages %}{% if loop.index0 == 1 %}{% break %}{% endif %}"
                   "{{ m['role'] }}{% endfor %}{{ messages[-1] | tojson }}\n"
                   "  {% if add_generation_prompt %}GO{% endif %}"),
}


@pytest.mark.parametrize("name", sorted(TEMPLATES))
def test_rendering_equals_llama_cpp_python(name):
    """The same text as llama-cpp-python 0.3.36's Jinja2ChatFormatter renders."""
    lcf = pytest.importorskip("llama_cpp.llama_chat_format")
    source = TEMPLATES[name] or {"llama3": lcf.LLAMA3_INSTRUCT_CHAT_TEMPLATE,
                                 "mistral": lcf.MISTRAL_INSTRUCT_CHAT_TEMPLATE}[name]
    messages = [{"role": "user", "content": "Grüße, 世界 😀 \"quoted\""}]
    if name != "mistral":       # Mistral's template refuses system messages
        messages.insert(0, {"role": "system", "content": "Be brief."})
    theirs = lcf.Jinja2ChatFormatter(source, eos_token="</s>", bos_token="<s>")(messages=messages).prompt
    ours = render_template(source, messages, bos_token="<s>", eos_token="</s>")
    assert ours == theirs
    assert "😀" in ours


def test_chatml_equals_llama_cpp_builtin_formatter(chat_models):
    """libllama's own ChatML formatter (llama_chat_apply_template) writes the same text."""
    import llama_cpp.llama_cpp as ll
    m = Model(chat_models["chatml"], vocab_only=True)
    try:
        ours = render_chat(m, "What is 2+2?", "You are terse.")
        msgs = (ll.llama_chat_message * 2)(ll.llama_chat_message(b"system", b"You are terse."),
                                           ll.llama_chat_message(b"user", b"What is 2+2?"))
        buf = ctypes.create_string_buffer(4096)
        n = ll.llama_chat_apply_template(b"chatml", msgs, 2, True, buf, len(buf))
        assert n > 0 and ours == buf.raw[:n].decode()
    finally:
        m.close()


def test_chatml_tokens_have_single_special_tokens(chat_models):
    m = Model(chat_models["chatml"], vocab_only=True)
    try:
        start, end = (m.tokenize(t, add_special=False) for t in CHAT_TOKENS)
        assert len(start) == len(end) == 1          # control tokens: one token each
        tokens = m.tokenize(render_chat(m, "hi"))
        assert tokens.count(start[0]) == 2 and tokens.count(end[0]) == 1
        assert tokens[0] == start[0]                 # no BOS: this vocabulary does not add one
        assert tokens[-len(m.tokenize("assistant\n", add_special=False)):] == \
            m.tokenize("assistant\n", add_special=False)
    finally:
        m.close()


def test_a_bos_written_by_the_template_is_not_doubled(chat_models):
    """llama.cpp cuts the template's BOS where the tokenizer adds one: one BOS, not two."""
    m = Model(chat_models["spm_bos"], vocab_only=True)
    try:
        text = render_chat(m, "hello 中")
        assert not text.startswith("<s>")
        tokens = m.tokenize(text)                    # what Engine.tokenize does
        assert tokens[0] == m.bos and tokens.count(m.bos) == 1
        naive = m.tokenize("<s>" + text)             # the template's text, BOS left in
        assert naive[:2] == [m.bos, m.bos]
        # the same tokens as llama-cpp-python's way (no BOS added to the template's own)
        assert tokens == m.tokenize("<s>" + text, add_special=False)
        # 中 goes through SentencePiece's byte fallback: three byte tokens
        assert [m.token_text(t) for t in tokens if m.token_text(t).startswith(b"<0xE")] == [b"<0xE4>"]
    finally:
        m.close()


# ---------------------------------------------------------------------------- bad templates

@pytest.mark.parametrize("name", ["evil", "evil_cycler"])
def test_a_template_that_reaches_for_os_is_refused(capsys, chat_models, name):
    marker = chat_models["marker"]
    for command in ("run", "baseline"):
        extra = ["-md", chat_models[name]] if command == "run" else []
        code, out, err = run_cli(capsys, command, "-m", chat_models[name], *extra, "--chat",
                                 "-p", "hi", "-n", "4")
        assert code == 2 and out == ""
        lines = err.strip().splitlines()
        assert len(lines) == 1, err
        assert name.replace("_", "-") in lines[0] and "refused" in lines[0] and "sandbox" in lines[0]
        assert not marker.exists()                   # nothing ran


def test_a_refused_template_raises_one_error_directly(chat_models):
    m = Model(chat_models["evil"], vocab_only=True)
    try:
        with pytest.raises(ChatTemplateError, match=r"evil\.gguf: the chat template was refused"):
            render_chat(m, "hi")
    finally:
        m.close()
    assert not chat_models["marker"].exists()


@pytest.mark.parametrize("name, words", [
    ("syntax", "is not valid Jinja (line 1"),
    ("raises", "refused these messages (raise_exception: System role not supported)"),
    ("none", "has no chat template"),
])
def test_bad_or_missing_templates_give_one_line(capsys, chat_models, name, words):
    code, out, err = run_cli(capsys, "baseline", "-m", chat_models[name], "--chat", "--system", "Be kind.",
                             "-p", "hi", "-n", "4")
    assert code == 2 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and words in lines[0] and str(chat_models[name]) in lines[0], err
    assert "Traceback" not in err


def test_a_runaway_template_is_stopped():
    loop = "{% for i in range(100000) %}{% for j in range(100000) %}xxxxxxxxxx{% endfor %}{% endfor %}"
    with pytest.raises(ChatTemplateError, match="stopped: it wrote more than"):
        render_template(loop, [{"role": "user", "content": "hi"}], where="loop.gguf")


def test_system_needs_chat(capsys, chat_models):
    code, _, err = run_cli(capsys, "baseline", "-m", chat_models["chatml"], "--system", "x", "-p", "hi")
    assert code == 2 and "--system needs --chat" in err


# ---------------------------------------------------------------------------- the CLI runs

def test_chat_run_gives_the_template_tokens(capsys, chat_models):
    path = chat_models["chatml"]
    code, out, err = run_cli(capsys, "run", "-m", path, "-md", path, "--chat", "--system", "Be brief.",
                             "-p", "Name a colour.", "-n", "8", "--ignore-eos", "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["chat"] is True and doc["system"] == "Be brief." and doc["prompt"] == "Name a colour."
    assert doc["chat_prompt"] == ("<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\n"
                                  "Name a colour.<|im_end|>\n<|im_start|>assistant\n")
    m = Model(path, vocab_only=True)
    try:
        assert doc["prompt_tokens"] == m.tokenize(doc["chat_prompt"])
    finally:
        m.close()
    code, out, _ = run_cli(capsys, "baseline", "-m", path, "-p", "Name a colour.", "-n", "4", "--json")
    assert code == 0 and json.loads(out)["chat"] is False and json.loads(out)["chat_prompt"] is None


def test_chat_stream_prints_the_rendered_prompt(capsys, chat_models):
    code, out, _ = run_cli(capsys, "baseline", "-m", chat_models["chatml"], "--chat", "-p", "hi",
                           "-n", "4", "--ignore-eos", "--stream")
    assert code == 0 and out.startswith("<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n")


# ---------------------------------------------------------------------------- a real model

def test_real_chatml_model_tokens_equal_llama_cpp(smollm2, capsys):
    """SmolLM2's own ChatML template: the same text as llama.cpp's built-in ChatML formatter and
    llama-cpp-python's renderer, the same tokens as llama-cpp-python's chat path."""
    import llama_cpp.llama_cpp as ll
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter
    from specscope.core.models.chat import chat_template
    m = Model(smollm2, vocab_only=True)
    try:
        ours = render_chat(m, "Hi 你好 😀", "You are a poet.")
        msgs = [{"role": "system", "content": "You are a poet."}, {"role": "user", "content": "Hi 你好 😀"}]
        theirs = Jinja2ChatFormatter(chat_template(m), eos_token=m.token_text(m.eos).decode(),
                                     bos_token=m.token_text(m.bos).decode())(messages=msgs).prompt
        assert ours == theirs
        arr = (ll.llama_chat_message * 2)(*(ll.llama_chat_message(x["role"].encode(), x["content"].encode())
                                            for x in msgs))
        buf = ctypes.create_string_buffer(4096)
        n = ll.llama_chat_apply_template(chat_template(m).encode(), arr, 2, True, buf, len(buf))
        assert buf.raw[:n].decode() == ours
        assert m.tokenize(ours) == m.tokenize(theirs, add_special=False)   # llama-cpp-python's way
        # the CLI's prompt tokens are llama.cpp's tokenization of llama.cpp's own rendering
        code, out, err = run_cli(capsys, "run", "-m", smollm2, "-md", smollm2, "--chat", "--system",
                                 "You are a poet.", "-p", "Hi 你好 😀", "-n", "4", "--json",
                                 "-t", "1", "-td", "1")
        assert code == 0, err
        assert json.loads(out)["prompt_tokens"] == m.tokenize(buf.raw[:n].decode())
    finally:
        m.close()
