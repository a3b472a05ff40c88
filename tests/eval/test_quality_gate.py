"""Quality gate: main-content extraction F1 on the dev set must not regress.

Runs :func:`knowledge_crawler.transform.extract.extract` over ``extraction-dev`` (58 real
article pages with ground truth) and scores it with the benchmark's metric (4-token
shingles over ``\\w+`` tokens, per-page normalised TP/FP/FN, macro P/R, F1 of the two:
the same as ``shared/tools/extraction_eval.py``, re-implemented here so the gate does
not depend on that script). Floors are pinned in ``floors.json`` (measured minus a
small margin); raise them when the extractor improves.

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
from pathlib import Path
from typing import Any

import pytest

from knowledge_crawler.transform.extract import extract

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


@pytest.fixture(scope="module")
def dev_run() -> dict[str, Any]:
    data = _data_dir()
    truth = json.loads((data / "ground-truth.json").read_text(encoding="utf-8"))
    pairs: list[tuple[str, str]] = []
    empty = 0
    t0 = time.perf_counter()
    for item_id in sorted(truth):
        body = (data / "html" / f"{item_id}.html").read_bytes()
        text = extract(body, url=truth[item_id].get("url")).text
        empty += not text.strip()
        pairs.append((truth[item_id].get("articleBody") or "", text))
    elapsed = time.perf_counter() - t0
    return {"pairs": pairs, "empty": empty, "seconds": elapsed, "pages": len(pairs)}


def test_metric_matches_known_values() -> None:
    assert score([("a b c d e", "a b c d e")])["f1"] == 1.0
    assert score([("a b c d e", "")])["recall"] == 0.0
    half = score([("one two three four five six", "one two three four")])
    assert half["precision"] == 1.0
    assert 0.0 < half["recall"] < 1.0


def test_dev_set_f1_floor(dev_run: dict[str, Any]) -> None:
    floors = FLOORS["extraction-dev"]
    m = score(dev_run["pairs"])
    summary = (
        f"P={m['precision']:.4f} R={m['recall']:.4f} F1={m['f1']:.4f} "
        f"empty={dev_run['empty']} ({dev_run['pages']} pages, {dev_run['seconds']:.1f} s)"
    )
    print(summary)
    assert m["f1"] >= floors["f1"], summary
    assert m["precision"] >= floors["precision"], summary
    assert m["recall"] >= floors["recall"], summary
    assert dev_run["empty"] <= floors["max_empty"], summary


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
