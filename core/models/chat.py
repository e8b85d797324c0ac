"""Chat prompts: the target's own chat template, rendered in Jinja2's sandbox.

A chat template (GGUF key ``tokenizer.chat_template``) is untrusted code that
arrives inside a model file. It is rendered only in
``jinja2.sandbox.ImmutableSandboxedEnvironment``, as transformers and
llama-cpp-python do since CVE-2024-34359: a template that reaches for
``__globals__``, ``os`` or any other unsafe attribute is stopped by the
sandbox and the user gets one line saying it was refused.

Rendering follows llama-cpp-python 0.3.36's ``Jinja2ChatFormatter`` (the
renderer of the library SpecScope runs on, which follows transformers'):
``trim_blocks`` and ``lstrip_blocks``, the ``loopcontrols`` extension, a
pass-through ``{% generation %}`` tag, ``tojson`` that keeps non-ASCII text,
and the variables ``messages``, ``bos_token``, ``eos_token``,
``add_generation_prompt=True``, ``raise_exception`` and ``strftime_now``
(``tools``, ``functions``, ``tool_choice``, ``function_call`` are None).

Tokenizing follows llama.cpp (``common_chat_templates_apply`` in
common/chat.cpp, then ``common_tokenize(ctx, prompt, add_special=true,
parse_special=true)`` in llama-cli/llama-completion and the server):
``bos_token`` and ``eos_token`` are the tokens' pieces; where the vocabulary
adds a BOS itself, a BOS the template wrote at the start is cut from the text
(and an EOS at the end where it adds an EOS), so the prompt does not begin
with two BOS tokens. The text ``render_chat`` returns is therefore exactly
what ``Engine.tokenize`` (add_special, parse_special) must turn into
llama.cpp's prompt tokens: special tokens written by the template
(``<|im_start|>``) become single tokens. (llama-cpp-python instead never adds
a BOS to a rendered template; the two agree whenever the template writes the
BOS itself, and differ only for templates that leave it out while the
vocabulary asks for one: there llama.cpp's tokens are the ones we follow.)

The message content is the user's text as typed, and may itself contain
special-token text: llama.cpp parses it as special too (parse_special covers
the whole prompt), and so do we.
"""

from __future__ import annotations

import json
from datetime import datetime

import jinja2
import jinja2.ext
from jinja2.sandbox import ImmutableSandboxedEnvironment, SecurityError

from specscope.core.errors import SpecScopeError

TEMPLATE_KEY = "tokenizer.chat_template"
MAX_MESSAGE_CHARS = 300      # how much of a template's own error message the one line keeps
MAX_RENDER_CHARS = 4_000_000  # a chat prompt longer than any context: the template is runaway


class ChatTemplateError(SpecScopeError):
    """The model has no chat template, or its template cannot be rendered (or was refused)."""


class _IgnoreGenerationTags(jinja2.ext.Extension):
    """HuggingFace's ``{% generation %}`` … ``{% endgeneration %}``: rendered as its body."""

    tags = {"generation"}

    def parse(self, parser):
        parser.stream.skip(1)
        return parser.parse_statements(("name:endgeneration",), drop_needle=True)


def _tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False) -> str:
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators,
                      sort_keys=sort_keys)


class _TemplateRaised(Exception):
    """What the template's own ``raise_exception(message)`` raises."""


def _raise_exception(message) -> None:
    raise _TemplateRaised(message)


def _strftime_now(fmt: str) -> str:
    return datetime.now().strftime(fmt)


def _environment() -> ImmutableSandboxedEnvironment:
    env = ImmutableSandboxedEnvironment(loader=jinja2.BaseLoader(), trim_blocks=True,
                                        lstrip_blocks=True,
                                        extensions=[_IgnoreGenerationTags, jinja2.ext.loopcontrols])
    env.filters["tojson"] = _tojson
    return env


def _one_line(text: str) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= MAX_MESSAGE_CHARS else text[:MAX_MESSAGE_CHARS - 1] + "…"


def chat_template(model) -> str | None:
    """The model's default chat template (``tokenizer.chat_template``), or None."""
    text = model.meta(TEMPLATE_KEY)
    return text if text else None


def messages_for(user: str, system: str | None = None, history=()) -> list[dict]:
    """The chat messages for ``user`` (after ``system``, and a conversation's turns before it:
    ``history``, (message, reply) pairs)."""
    out = [{"role": "system", "content": system}] if system else []
    for message, reply in history:
        out += [{"role": "user", "content": message}, {"role": "assistant", "content": reply}]
    return out + [{"role": "user", "content": user}]


def render_template(source: str, messages: list[dict], *, bos_token: str = "", eos_token: str = "",
                    where: str = "the model") -> str:
    """Render ``source`` in the sandbox with add_generation_prompt; ``where`` names the file
    in error messages. Raises ChatTemplateError with one line for every failure."""
    try:
        template = _environment().from_string(source)
    except jinja2.TemplateSyntaxError as exc:
        raise ChatTemplateError(f"{where}: the chat template is not valid Jinja "
                                f"(line {exc.lineno}: {_one_line(exc.message or exc)})") from None
    except Exception as exc:  # noqa: BLE001 - anything else the compiler rejects
        raise ChatTemplateError(f"{where}: the chat template cannot be compiled "
                                f"({type(exc).__name__}: {_one_line(exc)})") from None
    try:
        parts, n = [], 0
        for part in template.generate(messages=messages, bos_token=bos_token, eos_token=eos_token,
                                      add_generation_prompt=True, raise_exception=_raise_exception,
                                      strftime_now=_strftime_now, functions=None,
                                      function_call=None, tools=None, tool_choice=None):
            parts.append(part)
            n += len(part)
            if n > MAX_RENDER_CHARS:
                raise ChatTemplateError(f"{where}: the chat template was stopped: it wrote more "
                                        f"than {MAX_RENDER_CHARS:,} characters for one message")
        return "".join(parts)
    except ChatTemplateError:
        raise
    except SecurityError as exc:
        raise ChatTemplateError(
            f"{where}: the chat template was refused: it reached for something Jinja2's sandbox "
            f"forbids ({_one_line(exc)}) and was stopped there") from None
    except _TemplateRaised as exc:
        raise ChatTemplateError(f"{where}: the chat template refused these messages "
                                f"(raise_exception: {_one_line(exc)})") from None
    except Exception as exc:  # noqa: BLE001 - a template can fail in any way; say how, in one line
        raise ChatTemplateError(f"{where}: the chat template failed to render "
                                f"({type(exc).__name__}: {_one_line(exc)})") from None


def render_chat(model, user: str, system: str | None = None) -> str:
    """The prompt text for ``user`` (and ``system``) in ``model``'s own chat template, with the
    generation prompt added, ready for ``Engine.tokenize`` (see the module notes)."""
    return render_messages(model, messages_for(user, system))


def render_messages(model, messages: list[dict]) -> str:
    """A whole conversation (role/content messages) in ``model``'s own chat template, as
    :func:`render_chat` renders one user message."""
    source = chat_template(model)
    where = str(model.path)
    if source is None:
        raise ChatTemplateError(f"{where}: this model has no chat template ({TEMPLATE_KEY}), "
                                "so a chat prompt cannot be made; run without chat to use the "
                                "prompt as it is")
    bos = model.piece(model.bos).decode("utf-8", "replace") if model.bos >= 0 else ""
    eos = model.piece(model.eos).decode("utf-8", "replace") if model.eos >= 0 else ""
    text = render_template(source, list(messages), bos_token=bos, eos_token=eos,
                           where=where)
    # llama.cpp's common_chat_templates_apply: the tokenizer adds these itself
    if bos and model.add_bos and text.startswith(bos):
        text = text[len(bos):]
    if eos and model.add_eos and text.endswith(eos):
        text = text[:-len(eos)]
    return text
