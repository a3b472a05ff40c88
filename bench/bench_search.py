"""Benchmark: full-text search latency over 100,000 passages (SQLite FTS5, BM25).

    .venv/bin/python bench/bench_search.py [--quick] [--passages N] [--queries Q]

Builds a fresh SQLite dataset through the store's own write path (``Store.write`` in
batches of 200 pages): N passages (default 100,000, ``--quick`` 20,000) on N/10 pages of
generated English-like text (a 20,000-word vocabulary drawn with a Zipf law, so a few words
are everywhere and most are rare, as in real text), split by
``transform.passages.split_passages`` (a heading every ~60 words). Then runs Q queries
(default 500) through ``knowledge-crawler search``'s own path (``transform.query.query_terms``
then ``Store.search``, k=10): questions of 2 to 5 content words mixed with stop words
(any word, the default) and the same with ``--all`` (every word), and reports latency
percentiles, results per query and the load speed. Prints a markdown snippet.
"""

from __future__ import annotations

import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from _common import doc_parser  # noqa: E402

from knowledge_crawler.store import PageRecord, PassageRecord, open_store  # noqa: E402
from knowledge_crawler.transform.fingerprint import content_hash  # noqa: E402
from knowledge_crawler.transform.passages import split_passages  # noqa: E402
from knowledge_crawler.transform.query import STOPWORDS, query_terms  # noqa: E402

SYLLABLES = "ka lo mi ne ru sa ti vo pe da gri mon tel vas quo ber nix ophe lan dro"


def vocabulary(rng: random.Random, size: int) -> list[str]:
    words: set[str] = set()
    while len(words) < size:
        words.add("".join(rng.choice(SYLLABLES.split()) for _ in range(rng.randint(2, 4))))
    return sorted(words)


def zipf_sampler(rng: random.Random, vocab: list[str]) -> list[str]:
    """A long list whose word frequencies follow a Zipf law (rank r has weight 1/r)."""
    weights = [1 / (r + 1) for r in range(len(vocab))]
    return rng.choices(vocab, weights=weights, k=400_000)


def page_content(rng: random.Random, pool: list[str], passages: int) -> str:
    blocks: list[str] = []
    for n in range(passages):
        blocks.append(f"## Section {n} {rng.choice(pool)}")
        words = [pool[rng.randrange(len(pool))] for _ in range(rng.randint(40, 80))]
        blocks.append(" ".join(words).capitalize() + ".")
    return "\n\n".join(blocks)


def build(db: Path, n_passages: int, rng: random.Random, pool: list[str]) -> tuple[float, int]:
    pages = n_passages // 10
    written = 0
    t0 = time.perf_counter()
    with open_store(f"sqlite:///{db}") as store:
        batch: list[PageRecord] = []
        for i in range(pages):
            url = f"https://bench.example/p{i}"
            content = page_content(rng, pool, 10)
            split = split_passages(content, source_id="bench", canonical_url=url, max_words=200)
            written += len(split)
            batch.append(
                PageRecord(
                    source_id="bench",
                    canonical_url=url,
                    url=url,
                    final_url=url,
                    fetched_at="2026-01-01T00:00:00.000000Z",
                    http_status=200,
                    content_hash=content_hash(content),
                    content=content,
                    title=f"Page {i} {pool[i % len(pool)]}",
                    word_count=len(content.split()),
                    passages=[
                        PassageRecord(p.id, p.ord, p.heading_path, p.text, p.word_count)
                        for p in split
                    ],
                )
            )
            if len(batch) == 200:
                store.write(batch)
                batch = []
        if batch:
            store.write(batch)
    return time.perf_counter() - t0, written


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main() -> int:
    ap = doc_parser(__doc__)
    ap.add_argument("--quick", action="store_true", help="20,000 passages instead of 100,000")
    ap.add_argument("--passages", type=int, help="passages to index (overrides --quick)")
    ap.add_argument("--queries", type=int, default=500, help="queries per mode")
    args = ap.parse_args()
    n = args.passages or (20_000 if args.quick else 100_000)

    rng = random.Random(7)
    vocab = vocabulary(rng, 20_000)
    pool = zipf_sampler(rng, vocab)
    stop = sorted(STOPWORDS)
    questions = [
        " ".join(
            [*rng.sample(stop, 2), *(rng.choice(pool) for _ in range(rng.randint(2, 5)))]
        ).capitalize()
        + "?"
        for _ in range(args.queries)
    ]
    tmp = Path(tempfile.mkdtemp(prefix="kc-bench-search-"))
    try:
        db = tmp / "search.db"
        load_s, written = build(db, n, rng, pool)
        size = db.stat().st_size
        rows: dict[str, tuple[list[float], list[int]]] = {}
        with open_store(f"sqlite:///{db}") as store:
            for text in questions[:20]:  # warm the page cache
                store.search(query_terms(text).items, k=10)
            for mode, require_all in (("any word (default)", False), ("every word (--all)", True)):
                times: list[float] = []
                counts: list[int] = []
                for text in questions:
                    t0 = time.perf_counter()
                    terms = query_terms(text).items
                    found = store.search(terms, require_all=require_all, k=10)
                    times.append(time.perf_counter() - t0)
                    counts.append(len(found))
                rows[mode] = (times, counts)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    print(
        f"Search: {written:,} passages on {n // 10:,} pages of generated text (20,000-word "
        f"Zipf vocabulary), SQLite FTS5 with BM25, k=10, {args.queries} questions of 2-5 "
        f"content words plus 2 stop words each, one process, warm cache\n"
    )
    print("| mode | p50 ms | p95 ms | p99 ms | max ms | mean results |")
    print("|---|---:|---:|---:|---:|---:|")
    for mode, (times, counts) in rows.items():
        ms = [1000 * t for t in times]
        print(
            f"| {mode} | {percentile(ms, 0.5):.1f} | {percentile(ms, 0.95):.1f} "
            f"| {percentile(ms, 0.99):.1f} | {max(ms):.1f} | {statistics.mean(counts):.1f} |"
        )
    print(
        f"\n- Load through `Store.write` (pages, content, passages and the FTS index in one "
        f"transaction per 200 pages): {written / load_s:,.0f} passages/s "
        f"({n // 10 / load_s:,.0f} pages/s); database {size / 2**20:,.0f} MiB."
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
