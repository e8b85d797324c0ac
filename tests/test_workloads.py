"""The workload suite: eight categories of at least six prompts, each chat prompt rendered in a
real chat template and tokenized by real llama.cpp within the context, loadable by bench."""

import pytest

from specscope.core.errors import ConfigError
from specscope.core.measure.bench.settings import load_prompts
from specscope.core.measure.bench.workloads import CATEGORIES, load_workloads
from specscope.core.models.chat import chat_template, render_template
from specscope.core.models.llama import Model
from specscope.core.models.demo import demo_pair


def test_every_category_has_six_prompts_or_more_with_unique_names():
    suite = load_workloads()
    assert {w.category for w in suite} == set(CATEGORIES)
    for cat in CATEGORIES:
        assert len([w for w in suite if w.category == cat]) >= 6, cat
    assert len({w.name for w in suite}) == len(suite)
    assert all(w.text.strip() for w in suite)
    multi = [w for w in suite if w.category == "multi-turn"]
    assert all(len(w.messages) >= 3 and w.messages[-1]["role"] == "user" for w in multi)
    assert not any(w.chat for w in suite if w.category == "code-completion")


def test_categories_filter_and_unknown_ones_are_named():
    assert {w.category for w in load_workloads(["translation", "code-editing"])} == \
        {"translation", "code-editing"}
    with pytest.raises(ConfigError, match="unknown workload category: poetry .known: multi-turn"):
        load_workloads(["poetry"])


def test_bench_reads_the_suite_by_name():
    names = [name for name, _ in load_prompts("workloads.json")]
    assert names == [w.name for w in load_workloads()]


def test_every_chat_prompt_renders_in_smollm2s_template_and_fits_its_context(smollm2):
    with Model(smollm2, vocab_only=True) as model:
        template = chat_template(model)
        assert template
        for w in load_workloads():
            rendered = render_template(template, list(w.messages), where=w.name) if w.chat else w.text
            tokens = model.tokenize(rendered, add_special=not w.chat, parse_special=w.chat)
            assert 8 <= len(tokens) <= 400, (w.name, len(tokens))
            if w.chat:
                assert rendered.count("<|im_start|>user") == sum(m["role"] == "user" for m in w.messages)


def test_every_prompt_tokenizes_on_the_demo_target():
    target, _ = demo_pair()
    with Model(target, vocab_only=True) as model:
        for w in load_workloads():
            assert 0 < len(model.tokenize(w.text, add_special=True, parse_special=False)) <= 1024
