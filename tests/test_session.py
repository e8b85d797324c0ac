"""core/session/session.py: the session file round trip, strict loading, record and replay in the CLI."""

import json
import shutil

import pytest

from specscope.core.cli.main import main
from specscope.core.models.demo import demo_pair
from specscope.core.engine.engine import Engine, SpecSettings
from specscope.core.errors import SessionFileError
from specscope.core.engine.events import RoundEvent
from specscope.core.engine.sampling import SamplerSettings
from specscope.core.session.session import (FORMAT, VERSION, ModelIdentity, RunSettings, Session,
                                            TokenTable)
from specscope.core.session.workbench import Workbench
from specscope.core.measure.stats import fold


@pytest.fixture(scope="module")
def pair_copy(tmp_path_factory):
    """The demo pair copied where a test may rename it away."""
    d = tmp_path_factory.mktemp("pair")
    return tuple(shutil.copy(p, d / p.name) for p in demo_pair())


def live_session(target, draft, spec, prompt="def fibonacci(n):\n", n_predict=40):
    """A speculative run and its baseline, recorded in process as the window records them."""
    from specscope.core.engine.engine import EngineSettings
    bench = Workbench()
    sampler = SamplerSettings()
    settings = RunSettings(str(target), str(draft), EngineSettings(n_ctx=512), spec, sampler,
                           n_predict, prompt)
    with Engine(target, draft, settings.engine) as engine:
        for kind in ("spec", "baseline"):
            run = engine.speculative(prompt, spec, sampler, n_predict) if kind == "spec" \
                else engine.baseline(prompt, sampler, n_predict)
            events = list(run)
            s = bench.start(settings, kind, prompt_text=prompt, prompt_tokens=run.prefill.tokens,
                            vocab=engine.target, prefill_s=run.prefill.seconds)
            s.run.append(events[:5])
            s.run.stats                      # folded in two steps, as the window folds
            s.run.append(events[5:])
            s.run.finish = run.finish
            bench.finished(s)
            if kind == "spec":
                session = s
    assert session.baseline is not None      # the baseline with the same key was paired
    return session


@pytest.mark.parametrize("types", [("draft-simple",), ("ngram-simple", "draft-simple")])
def test_a_saved_session_loads_with_the_same_events_stats_and_text(tmp_path, pair_copy, types):
    spec = SpecSettings(n_max=4, types=types)
    live = live_session(*pair_copy, spec, prompt="abc abc abc abc abc abc\n" * 3)
    path = live.save(tmp_path / "run.jsonl")
    back = Session.load(path)
    assert back.spec.events == live.spec.events             # every float bit, draft_probs included
    assert back.baseline.events == live.baseline.events
    assert back.spec.stats == live.spec.stats == fold(live.spec.events)
    assert back.baseline.stats == live.baseline.stats
    assert back.speedup == live.speedup and back.speedup is not None
    assert back.settings == live.settings and back.key == live.key
    assert back.prompt_tokens == live.prompt_tokens and back.spec.finish == live.spec.finish
    assert back.text() == live.text() and back.text()
    assert back.document() == live.document()
    assert back.models["target"] == ModelIdentity.of(pair_copy[0])
    assert back.models_present() == {"target": True, "draft": True}
    head = json.loads(path.read_text().splitlines()[0])
    assert head["format"] == FORMAT and head["version"] == VERSION
    assert len(path.read_text().splitlines()) == 1 + len(live.spec.events) + len(live.baseline.events)


def test_token_pieces_keep_bytes_that_are_not_utf8():
    table = TokenTable({1: (b"\xe4\xb8", b"<0xE4>", False), 2: (b"\xad", b"x", False),
                        3: ("é".encode(), "é".encode(), False), 4: (b"", b"</s>", True)})
    rows = json.loads(json.dumps(table.to_plain()))
    back = TokenTable.from_plain(rows)
    assert back.entries == table.entries
    assert rows[2][1] == "é" and rows[0][1] == {"hex": "e4b8"}
    assert back.is_eog(4) and not back.is_eog(1) and back.piece(99) == b""


def test_the_header_hash_covers_the_header_not_the_weights(tmp_path, pair_copy):
    target = pair_copy[0]
    changed = tmp_path / "changed-weights.gguf"
    data = bytearray(target.read_bytes())
    data[-1] ^= 0xFF                          # the last weight byte
    changed.write_bytes(data)
    a, b = ModelIdentity.of(target), ModelIdentity.of(changed)
    assert a.header_sha256 == b.header_sha256 and a.file_size == b.file_size
    assert a.n_params > 0 and a.architecture == "llama"
    other = ModelIdentity.of(pair_copy[1])
    assert other.header_sha256 != a.header_sha256
    assert not a.present(pair_copy[1]) and a.present(changed)


# ----------------------------------------------------------------------------- strict loading
@pytest.fixture(scope="module")
def recorded(tmp_path_factory, pair_copy):
    path = tmp_path_factory.mktemp("rec") / "good.jsonl"
    live_session(*pair_copy, SpecSettings(), n_predict=16).save(path)
    return path


def broken(tmp_path, recorded, edit):
    lines = recorded.read_text().splitlines(keepends=True)
    path = tmp_path / "broken.jsonl"
    path.write_text("".join(edit(lines)))
    return path


def event_line(fields: dict) -> str:
    return json.dumps({"run": "spec", "event": fields}) + "\n"


@pytest.mark.parametrize("edit, line, words", [
    (lambda ls: ls[:-1] + [ls[-1][:len(ls[-1]) // 2]], -1, "truncated"),     # cut mid-line
    (lambda ls: ls[:-2], -1, "truncated"),                                    # cut at a line end
    (lambda ls: ls[:3] + ["{{{ not json\n"] + ls[4:], 4, "not valid JSON"),
    (lambda ls: ls[:2] + [event_line({**json.loads(ls[2])["event"], "n_accepted": "2"})] + ls[3:], 3,
     "n_accepted has the wrong type"),
    (lambda ls: ls[:2] + [event_line({k: v for k, v in json.loads(ls[2])["event"].items()
                                      if k != "seed"})] + ls[3:], 3, "lacks the field 'seed'"),
    (lambda ls: [ls[0].replace(f'"version": {VERSION}', f'"version": {VERSION + 1}')] + ls[1:], 1,
     "newer SpecScope"),
    (lambda ls: ['{"rounds": [], "stats": {}}\n'], 1, "not a SpecScope session"),
    (lambda ls: ['[1, 2, 3]\n'], 1, "not a SpecScope session"),
    (lambda ls: [ls[0].replace('"n_predict": 16', '"n_predict": "16"')] + ls[1:], 1, "n_predict"),
    (lambda ls: ls + [ls[-1]], None, "one line more"),
    (lambda ls: ls[:2] + ls[3:] + [ls[2]], 3, "round 2 where round 1"),
])
def test_a_bad_file_names_the_file_and_the_line(tmp_path, recorded, edit, line, words):
    path = broken(tmp_path, recorded, edit)
    n_lines = len(path.read_text().splitlines())
    with pytest.raises(SessionFileError) as info:
        Session.load(path)
    msg = str(info.value)
    expected = {-1: n_lines if "cut" in msg else n_lines + 1, None: n_lines}.get(line, line)
    assert msg.startswith(f"{path}, line {expected}: "), msg
    assert words in msg and "\n" not in msg


def test_a_missing_file_is_one_line(tmp_path):
    with pytest.raises(SessionFileError, match="cannot be read"):
        Session.load(tmp_path / "nowhere.jsonl")


def test_from_dict_reads_what_to_dict_wrote():
    ev = RoundEvent(3, 10, 5, (1, 2), (0.123456789, 0.5), 1, (1, 7), "spec", t_round=0.1, t_draft=0.03)
    assert RoundEvent.from_dict(json.loads(json.dumps(ev.to_dict(exact=True)))) == ev


# ----------------------------------------------------------------------------- the CLI
def test_cli_records_and_replays_with_the_models_renamed_away(tmp_path, capsys):
    d = tmp_path / "models"
    d.mkdir()
    target, draft = (shutil.copy(p, d / p.name) for p in demo_pair())
    rec = tmp_path / "run.jsonl"
    args = ["-m", str(target), "-md", str(draft), "-n", "32", "--spec-type", "ngram-simple,draft-simple"]
    assert main(["run", *args, "--json", "--with-baseline", "--record", str(rec)]) == 0
    live = json.loads(capsys.readouterr().out)
    assert live["speedup"] > 0 and live["baseline_stats"]["n_tokens"] == 32
    assert main(["run", *args, "--record", str(tmp_path / "text.jsonl")]) == 0
    live_text = capsys.readouterr().out
    d.rename(tmp_path / "elsewhere")                     # no model where the session says
    assert not target.exists()
    assert main(["replay", str(rec), "--json"]) == 0
    replayed = json.loads(capsys.readouterr().out)
    assert replayed == live
    assert replayed["stats"]["n_rounds"] == len(replayed["rounds"]) > 0
    assert main(["replay", str(tmp_path / "text.jsonl")]) == 0
    # the same text and summary, up to the timing lines (that run was a second live run)
    assert capsys.readouterr().out.split("\n\n")[0] == live_text.split("\n\n")[0]
    assert not any(Session.load(rec).models_present().values())


def test_cli_replay_of_a_bad_file_exits_2_with_one_line(tmp_path, capsys):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"format": "something-else"}\n')
    assert main(["replay", str(bad)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and f"{bad}, line 1" in err


def test_a_session_path_alone_opens_the_window_on_it(monkeypatch, tmp_path):
    import specscope.app.main as app_main
    seen = []
    monkeypatch.setattr(app_main, "_open", lambda args: seen.append(args) or 0)
    (tmp_path / "run.jsonl").write_text("")       # (the window reads it; only its being there is checked first)
    assert app_main.cli([str(tmp_path / "run.jsonl")]) == 0
    assert seen[0].command == "gui" and seen[0].session == tmp_path / "run.jsonl"


def test_the_core_command_line_opens_no_window_of_its_own(capsys):
    """core never imports the app: without the window handed in, `gui` says where it is."""
    assert main(["gui"]) == 2
    assert "desktop app" in capsys.readouterr().err


def test_a_file_written_before_a_field_was_added_still_loads(tmp_path, recorded):
    """Fields added to events later (synthetic acceptance, the counterfactual) have defaults: a
    recording without them loads with those defaults instead of being refused."""
    added = ("synthetic", "counterfactual", "counterfactual_rule")

    def drop(ls):
        out = []
        for line in ls:
            rec = json.loads(line)
            if "event" in rec:
                rec["event"] = {k: v for k, v in rec["event"].items() if k not in added}
                line = json.dumps(rec) + "\n"
            out.append(line)
        return out
    path = broken(tmp_path, recorded, drop)
    events = [json.loads(line)["event"] for line in path.read_text().splitlines()
              if '"event"' in line]
    assert events and not any(k in ev for ev in events for k in added)
    loaded, original = Session.load(path), Session.load(recorded)
    assert loaded.spec.events == original.spec.events and loaded.spec.events


def test_a_version_1_round_keeps_its_shape_under_the_key_of_its_kind():
    """Version 1 wrote a round's tree or lookahead window under "tree" / "lookahead"; version 2
    under "shape". A version-1 round reads into the same event."""
    from specscope.core.engine.events import LookaheadShape, RoundEvent, TreeShape
    tree = TreeShape(((5, 6), (5, 7)), ((0.9, 0.6), (0.9, 0.3)), 1, 3, 2, ((1, 0, 1, 0, 1),))
    window = LookaheadShape(((4, 5),), 0, 12, ((3, 0, 1, 0),))
    for shape in (tree, window):
        ev = RoundEvent(index=0, n_past=9, seed=3, drafted=(5, 7), draft_probs=(), n_accepted=2,
                        emitted=(5, 7, 8), mode="spec", shape=shape)
        d = ev.to_dict(exact=True)
        assert RoundEvent.from_dict(d) == ev and "tree" not in d and "lookahead" not in d
        v1 = {k: v for k, v in d.items() if k != "shape"}
        v1 |= {"tree": d["shape"] if shape is tree else None,
               "lookahead": d["shape"] if shape is window else None}
        assert RoundEvent.from_dict(v1) == ev
        assert (ev.tree is shape) == (shape is tree)


def test_a_version_2_round_keeps_its_detail_as_fields_of_their_own():
    """Versions 1 and 2 wrote what a drafter adds to its draft as fields of the round
    (draft_key, draft_key_len, draft_source; draft_ids; draft_vocab, draft_own, draft_own_text);
    version 3 as its "detail". Each reads into the same event, and a round with none as none."""
    from specscope.core.engine.events import HeadIds, NgramMatch, OwnVocab, RoundEvent
    empty = {"draft_key": -1, "draft_key_len": 0, "draft_source": -1, "draft_ids": [],
             "draft_vocab": "", "draft_own": [], "draft_own_text": []}
    cases = [(NgramMatch(2, 3, 5), {"draft_key": 2, "draft_key_len": 3, "draft_source": 5}),
             (NgramMatch(2, 3), {"draft_key": 2, "draft_key_len": 3}),
             (HeadIds((40, 41)), {"draft_ids": [40, 41]}),
             (OwnVocab("translate", (9, 8, 7), ("a", "b", "c")),
              {"draft_vocab": "translate", "draft_own": [9, 8, 7], "draft_own_text": ["a", "b", "c"]}),
             (None, {})]
    for detail, fields in cases:
        ev = RoundEvent(index=0, n_past=9, seed=3, drafted=(5, 7), draft_probs=(), n_accepted=2,
                        emitted=(5, 7, 8), mode="spec", detail=detail)
        d = ev.to_dict(exact=True)
        assert RoundEvent.from_dict(d) == ev and not set(empty) & set(d)
        v2 = {k: v for k, v in d.items() if k != "detail"} | empty | fields
        back = RoundEvent.from_dict(v2)
        assert back == ev, (detail, back.detail)
        assert back.ngram == (detail if isinstance(detail, NgramMatch) else None)
        assert back.head_ids == (detail.ids if isinstance(detail, HeadIds) else ())
        assert back.xvocab == (detail if isinstance(detail, OwnVocab) else None)


def test_a_spec_before_version_4_keeps_each_types_parameters_as_a_field_of_its_own():
    """Versions 1 to 3 wrote each type's own parameters as a field of the spec ("ngram_mod",
    "suffix", "lookahead", ...) and draft-tree's p_split beside n_max; version 4 under "own" by
    type name. Both read into the same settings; a type the file does not name keeps its default."""
    from specscope.core.engine.drafters.lookahead import LookaheadParams
    from specscope.core.engine.drafters.ngram_mod import NgramModParams
    from specscope.core.engine.drafters.suffix import SuffixParams
    from specscope.core.engine.settings import SpecSettings, earlier_spec
    from specscope.core.plain import PlainError, from_plain, to_plain
    spec = SpecSettings(types=("ngram-mod",), n_max=5, own={
        "ngram-mod": NgramModParams(8, 2, 16), "suffix": SuffixParams(max_depth=30),
        "lookahead": LookaheadParams(w=7), "draft-tree": type(SpecSettings().params("draft-tree"))(0.3)})
    d = to_plain(spec)
    assert set(d["own"]) >= {"ngram-simple", "ngram-mod", "suffix", "lookahead", "draft-tree"}
    assert from_plain(SpecSettings, d) == spec and hash(from_plain(SpecSettings, d)) == hash(spec)
    v3 = {k: v for k, v in d.items() if k != "own"}
    v3 |= {"ngram_mod": d["own"]["ngram-mod"], "suffix": d["own"]["suffix"],
           "lookahead": d["own"]["lookahead"], "p_split": 0.3}
    back = from_plain(SpecSettings, earlier_spec(v3))
    assert back == spec and back.params("draft-tree").p_split == 0.3
    assert back.params("ngram-simple") == SpecSettings().params("ngram-simple")
    with pytest.raises(PlainError, match="unknown type 'draft-nope'"):
        from_plain(SpecSettings, {**d, "own": {"draft-nope": {}}})
    with pytest.raises(PlainError, match="own.ngram-mod"):
        from_plain(SpecSettings, {**d, "own": {"ngram-mod": {"n_match": "8"}}})
