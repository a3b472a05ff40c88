"""Quality gate: main-content extraction F1 on the dev set must not regress, scored on
what the crawl STORES, and cleaning must not cost a word of it.

Runs :func:`knowledge_crawler.transform.extract.extract` over ``extraction-dev`` (58 real
article pages with ground truth), then the crawl's clean step on the markdown
(:meth:`Extraction.cleaned <knowledge_crawler.transform.extract.Extraction.cleaned>`:
``clean_text(markdown)``, the stored ``content``, reduced to plain text with
``markdown_to_text``), and scores that with the benchmark's metric (4-token shingles
over ``\\w+`` tokens, per-page normalised TP/FP/FN, macro P/R, F1 of the two: the same
as ``shared/tools/extraction_eval.py``, re-implemented here so the gate does not depend
on that script). Floors are pinned in ``floors.json`` (measured minus a small margin);
raise them when the extractor improves.

The same run checks that cleaning keeps what pages say: no word is lost except those of
standalone banners that clean reports removing, and fenced code, indented (nested)
list lines and table rows come out of clean exactly as extraction rendered them.

Data: env ``KC_EXTRACTION_DEV`` or ``<repo>/../shared/extraction-dev``. Missing data
skips the gate, except under ``CI=true`` where it fails.
"""

from __future__ import annotations

import json
import os
import re
import statistics
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from knowledge_crawler.transform.clean import BANNER_MAX_WORDS, Cleaned, clean, clean_text
from knowledge_crawler.transform.extract import Extraction, extract
from knowledge_crawler.transform.render import markdown_to_text

REPO = Path(__file__).resolve().parents[2]
FLOORS = json.loads((Path(__file__).with_name("floors.json")).read_text(encoding="utf-8"))
_TOKEN_RE = re.compile(r"\w+", re.UNICODE)
NGRAM = 4


def _data_dir() -> Path:
    env = os.environ.get("KC_EXTRACTION_DEV")
    path = Path(env) if env else REPO.parent / "shared" / "extraction-dev"
    if not (path / "ground-truth.json").is_file():
        reason = f"extraction dev set not found at {path} (set KC_EXTRACTION_DEV)"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(reason)
        pytest.skip(reason)
    return path


def _shingles(text: str) -> Counter[tuple[str, ...]]:
    tokens = _TOKEN_RE.findall(text or "")
    if not tokens:
        return Counter()
    if len(tokens) < NGRAM:
        return Counter([tuple(tokens)])
    return Counter(tuple(tokens[i : i + NGRAM]) for i in range(len(tokens) - NGRAM + 1))


def _tp_fp_fn(true: str, pred: str) -> tuple[float, float, float]:
    t, p = _shingles(true), _shingles(pred)
    tp = float(sum((t & p).values()))
    fp = float(sum((p - t).values()))
    fn = float(sum((t - p).values()))
    s = tp + fp + fn
    return (tp / s, fp / s, fn / s) if s > 0 else (tp, fp, fn)


def _precision(tp: float, fp: float, fn: float) -> float:
    if fp == fn == 0:
        return 1.0
    if tp == fp == 0:
        return 0.0
    return tp / (tp + fp)


def _recall(tp: float, fp: float, fn: float) -> float:
    if fp == fn == 0:
        return 1.0
    if tp == fn == 0:
        return 0.0
    return tp / (tp + fn)


def score(pairs: list[tuple[str, str]]) -> dict[str, float]:
    """Benchmark metric over (truth, prediction) pairs."""
    rows = [_tp_fp_fn(t, p) for t, p in pairs]
    ps = [_precision(*r) for r in rows if r[0] + r[1] > 0]
    rs = [_recall(*r) for r in rows if r[0] + r[2] > 0]
    p = statistics.mean(ps) if ps else 0.0
    r = statistics.mean(rs) if rs else 0.0
    f1 = 2 * p * r / (p + r) if p + r > 0 else 0.0
    return {"precision": p, "recall": r, "f1": f1}


@dataclass(frozen=True)
class DevPage:
    item_id: str
    truth: str
    extracted: Extraction  # what extract() returns
    stored: Extraction  # the same after the crawl's clean step
    report: Cleaned  # what clean() removed from the markdown


@pytest.fixture(scope="module")
def dev_run() -> dict[str, Any]:
    data = _data_dir()
    truth = json.loads((data / "ground-truth.json").read_text(encoding="utf-8"))
    pages: list[DevPage] = []
    t0 = time.perf_counter()
    for item_id in sorted(truth):
        body = (data / "html" / f"{item_id}.html").read_bytes()
        result = extract(body, url=truth[item_id].get("url"))
        pages.append(
            DevPage(
                item_id=item_id,
                truth=truth[item_id].get("articleBody") or "",
                extracted=result,
                stored=result.cleaned(),
                report=clean(result.markdown),
            )
        )
    elapsed = time.perf_counter() - t0
    return {
        "pages": pages,
        "pairs": [(p.truth, p.stored.text) for p in pages],
        "empty": sum(not p.stored.text.strip() for p in pages),
        "seconds": elapsed,
    }


def test_metric_matches_known_values() -> None:
    assert score([("a b c d e", "a b c d e")])["f1"] == 1.0
    assert score([("a b c d e", "")])["recall"] == 0.0
    half = score([("one two three four five six", "one two three four")])
    assert half["precision"] == 1.0
    assert 0.0 < half["recall"] < 1.0


def _fmt(m: dict[str, float]) -> str:
    return f"P={m['precision']:.4f} R={m['recall']:.4f} F1={m['f1']:.4f}"


def test_dev_set_f1_floor(dev_run: dict[str, Any]) -> None:
    """Floors hold for the stored form (cleaned markdown, reduced to plain text)."""
    floors = FLOORS["extraction-dev"]
    pages: list[DevPage] = dev_run["pages"]
    m = score(dev_run["pairs"])
    summary = (
        f"stored form: {_fmt(m)} empty={dev_run['empty']} "
        f"({len(pages)} pages, {dev_run['seconds']:.1f} s)"
    )
    print(summary)
    print("extract().text before clean:", _fmt(score([(p.truth, p.extracted.text) for p in pages])))
    print(
        "clean_text(extract().text):",
        _fmt(score([(p.truth, clean_text(p.extracted.text)) for p in pages])),
    )
    assert m["f1"] >= floors["f1"], summary
    assert m["precision"] >= floors["precision"], summary
    assert m["recall"] >= floors["recall"], summary
    assert dev_run["empty"] <= floors["max_empty"], summary


def _tokens(text: str) -> list[str]:
    return _TOKEN_RE.findall(text)


def test_markdown_reduces_to_the_extracted_text(dev_run: dict[str, Any]) -> None:
    """Scoring reduced markdown scores the same words as ``extract().text`` did."""
    for page in dev_run["pages"]:
        reduced = markdown_to_text(page.extracted.markdown)
        assert _tokens(reduced) == _tokens(page.extracted.text), page.item_id


def test_clean_removes_no_dev_set_words(dev_run: dict[str, Any]) -> None:
    """Cleaning drops only the words of the standalone banners it reports, in order."""
    touched: list[str] = []
    for page in dev_run["pages"]:
        before = _tokens(page.extracted.markdown)
        after = _tokens(page.stored.markdown)
        report = page.report
        assert report.text == page.stored.markdown
        removed = Counter(_tokens("\n".join((*report.banners, *report.matched))))
        assert Counter(before) - Counter(after) == removed, page.item_id
        assert not Counter(after) - Counter(before), page.item_id
        rest = iter(before)
        assert all(token in rest for token in after), f"{page.item_id}: words reordered"
        for banner in report.banners:
            assert len(_tokens(banner)) <= BANNER_MAX_WORDS, banner
        if report.banners or report.matched or before != after:
            touched.append(f"{page.item_id[:12]}: {[*report.banners, *report.matched]}")
    print(f"clean removed something on {len(touched)} of {len(dev_run['pages'])} pages")
    for line in touched:
        print("  ", line)


_FENCED_RE = re.compile(r"^(`{3,})\n.*?\n\1$", re.MULTILINE | re.DOTALL)
_NESTED_ITEM_RE = re.compile(r"^ +(?:-|\d+\.) .*$", re.MULTILINE)
_TABLE_ROW_RE = re.compile(r"^\|.*$", re.MULTILINE)


def test_clean_keeps_code_nested_lists_and_tables(dev_run: dict[str, Any]) -> None:
    """Fenced blocks, indented list lines and table rows: identical before and after."""
    counts = Counter[str]()
    for page in dev_run["pages"]:
        before, after = page.extracted.markdown, page.stored.markdown
        for name, regex in (
            ("code blocks", _FENCED_RE),
            ("nested list items", _NESTED_ITEM_RE),
            ("table rows", _TABLE_ROW_RE),
        ):
            found = [m.group(0) for m in regex.finditer(before)]
            assert [m.group(0) for m in regex.finditer(after)] == found, (page.item_id, name)
            counts[name] += len(found)
    print("kept verbatim on the dev set:", dict(counts))
    assert counts["nested list items"] > 0 and counts["table rows"] > 0  # not vacuous


def test_metric_agrees_with_shared_scorer(dev_run: dict[str, Any]) -> None:
    """Cross-check the re-implemented metric against the shared scorer, when present."""
    import importlib.util

    path = _data_dir().parent / "tools" / "extraction_eval.py"
    if not path.is_file():
        pytest.skip(f"{path} not found")
    spec = importlib.util.spec_from_file_location("extraction_eval", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    theirs = module.aggregate([module.tp_fp_fn(t, p, NGRAM) for t, p in dev_run["pairs"]])
    ours = score(dev_run["pairs"])
    assert ours == pytest.approx(theirs, abs=1e-12)
