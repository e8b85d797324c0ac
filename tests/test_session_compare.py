"""Two recorded sessions side by side: what differs, acceptance, speed-up, first divergence."""

from __future__ import annotations

import pytest

from specscope.core.cli.main import main as cli_main
from specscope.core.session.session import Session
from specscope.core.session.comparison import compare_sessions

PROMPT = "def parse_args(argv=None):\n"


def record(tmp_path, name, *args):
    path = tmp_path / f"{name}.jsonl"
    assert cli_main(["run", "-p", PROMPT, "-n", "48", "--record", str(path), *args]) == 0
    return Session.load(path)


@pytest.fixture(scope="module")
def sessions(tmp_path_factory):
    d = tmp_path_factory.mktemp("sessions")
    return {"n3": record(d, "n3", "--spec-draft-n-max", "3", "--with-baseline"),
            "n8": record(d, "n8", "--spec-draft-n-max", "8"),
            "hot1": record(d, "hot1", "--temp", "0.9", "-s", "1"),
            "hot2": record(d, "hot2", "--temp", "0.9", "-s", "2"),
            "ngram": record(d, "ngram", "--spec-type", "ngram-simple",
                            "--spec-ngram-simple-size-n", "2", "--spec-ngram-simple-size-m", "6")}


def test_two_draft_lengths_differ_only_in_n_max_and_agree_on_every_token(sessions):
    a, b = sessions["n3"], sessions["n8"]
    c = compare_sessions(a, b)
    assert c.differences == ("n_max 3 vs 8",)
    assert c.same_prompt and c.diverge_at is None
    assert c.divergence_sentence() == "The outputs agree on all 48 tokens both generated."
    assert c.a.position_acceptance == a.run.stats.position_acceptance
    assert len(c.b.position_acceptance) == 8 and len(c.a.position_acceptance) == 3
    assert sum(c.a.accepted_share) == pytest.approx(1.0)
    assert c.a.speedup == a.speedup and c.a.speedup is not None and c.b.speedup is None
    assert "n_max 3" in c.a.label and "n_max 8" in c.b.label


def test_sampled_runs_with_other_seeds_diverge_where_their_tokens_do(sessions):
    a, b = sessions["hot1"], sessions["hot2"]
    c = compare_sessions(a, b)
    assert "sampler" in " ".join(c.differences)
    ta, tb = a.run.tokens, b.run.tokens
    i = next(i for i, (x, y) in enumerate(zip(ta, tb)) if x != y)
    assert c.diverge_at == i
    piece = lambda v, t: v.piece(t).decode("utf-8")          # noqa: E731 (code: ASCII)
    assert c.next_a == piece(a.vocab, ta[i]) and c.next_b == piece(b.vocab, tb[i])
    assert c.next_a != c.next_b
    prefix = "".join(piece(a.vocab, t) for t in ta[:i] if not a.vocab.is_eog(t))
    assert prefix.endswith(c.shared_text) and len(c.shared_text) == min(40, len(prefix))


def test_a_divergence_part_way_names_the_token_and_quotes_what_came_before(sessions):
    """B is A with one emitted token changed in round 6: they share everything before it."""
    from dataclasses import replace as dc_replace
    from specscope.core.session.session import RunRecord, Session
    a = sessions["n3"]
    events = list(a.run.events)
    r = 6
    shared = [t for ev in events[:r] for t in ev.emitted]
    other = next(t for t in a.prompt_tokens if t != events[r].emitted[0] and not a.vocab.is_eog(t))
    changed = dc_replace(events[r], emitted=(other,) + events[r].emitted[1:])
    b = Session(a.settings, a.prompt_text, a.prompt_tokens, dict(a.models), a.vocab,
                spec=RunRecord("spec"))
    b.spec.append(events[:r] + [changed] + events[r + 1:])
    c = compare_sessions(a, b)
    assert c.differences == () and c.diverge_at == len(shared)
    text = "".join(a.vocab.piece(t).decode("utf-8") for t in shared)
    assert c.shared_text == text[-40:]
    assert c.divergence_sentence() == (
        f"The outputs first differ at generated token {len(shared) + 1}: after "
        f"“…{text[-40:]}”, A emits “{a.vocab.piece(events[r].emitted[0]).decode()}” and "
        f"B “{a.vocab.piece(other).decode()}”.")

def test_a_draft_model_against_an_ngram_type(sessions):
    c = compare_sessions(sessions["n3"], sessions["ngram"])
    assert any(d.startswith("drafters draft-simple vs ngram-simple") for d in c.differences)
    assert c.diverge_at is None                 # greedy and lossless: the same tokens
    assert "ngram-simple" in c.b.label


def test_the_view_overlays_both_sessions(qtbot, sessions):
    pytest.importorskip("pytestqt")
    from specscope.app.session_compare_view import SessionCompareView
    view = SessionCompareView()
    qtbot.addWidget(view)
    c = compare_sessions(sessions["n3"], sessions["n8"])
    view.show_comparison(c)
    shown = view.shown()
    assert shown["rows"][0][0] == "A" and shown["rows"][1][0] == "B"
    assert shown["rows"][0][2] == f"{c.a.speedup:.2f}×" and shown["rows"][1][2] == "– (no baseline)"
    assert shown["rows"][1][4] == f"{c.b.acceptance_rate:.1%}"
    assert shown["curves"] == [list(c.a.position_acceptance), list(c.b.position_acceptance)]
    assert shown["differences"] == "Settings that differ: n_max 3 vs 8"
    assert shown["divergence"] == c.divergence_sentence()


def test_no_system_message_is_the_same_prompt_whoever_wrote_it(sessions):
    """The window writes no system message as '', the CLI as None: the same prompt."""
    from dataclasses import replace
    a = sessions["n3"]
    b = replace(sessions["n8"], settings=replace(sessions["n8"].settings, system=""))
    assert a.settings.system is None
    assert compare_sessions(a, b).differences == ("n_max 3 vs 8",)
    c = replace(b, settings=replace(b.settings, system="Be brief."))
    assert "the prompts differ" in compare_sessions(a, c).differences


def test_the_settings_of_types_with_and_without_parameters_of_their_own_are_compared():
    """Each type's own parameters are compared where it has some (draft-tree's p_split), a type
    with none (an EAGLE-3 head) by its name alone, and a shared setting where a type reads it."""
    from types import SimpleNamespace
    from specscope.core.engine.drafters.tree import TreeParams
    from specscope.core.engine.engine import EngineSettings, SpecSettings
    from specscope.core.engine.sampling import SamplerSettings
    from specscope.core.session.comparison import _differences
    from specscope.core.session.session import RunSettings

    def side(spec):
        return SimpleNamespace(settings=RunSettings("t.gguf", "d.gguf", EngineSettings(), spec,
                                                    SamplerSettings(), 48, PROMPT, False, None))
    eagle = side(SpecSettings(types=("draft-eagle3",)))
    tree = side(SpecSettings(types=("draft-tree",), own={"draft-tree": TreeParams(0.3)}))
    assert _differences(eagle, eagle) == ()
    assert _differences(eagle, tree) == ("drafters draft-eagle3 vs draft-tree",
                                         "draft-tree p_split 0.1 vs p_split 0.3")
    # the settings the types share are compared where either reads them (draft-tree its n_max)
    longer = side(SpecSettings(types=("draft-tree",), n_max=5, own={"draft-tree": TreeParams(0.3)}))
    assert _differences(tree, longer) == ("n_max 3 vs 5",)
