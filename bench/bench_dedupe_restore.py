"""Benchmark: restoring the dedupe state from a real SQLite store at spider start.

    python bench/bench_dedupe_restore.py [--pages N] [--quick]

Loads N pages (default 100,000; --quick 20,000) with 525-byte MinHash
signatures into a fresh SQLite database through the store's batched upsert,
then times what the dedupe pipeline does when a spider opens: read every
active page (``Store.dedupe_state``), build the exact-hash map and restore the
LSH index (``MemoryNearDuplicateIndex.restore``). Prints a markdown table.
"""

from __future__ import annotations

import argparse
import resource
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from knowledge_crawler.store import PageRecord, open_store  # noqa: E402
from knowledge_crawler.transform.minhash import (  # noqa: E402
    DEFAULT,
    MemoryNearDuplicateIndex,
    _lean,
    to_bytes,
)


def _records(n: int, rng: np.random.Generator) -> list[PageRecord]:
    values = rng.integers(0, 2**32 - 1, size=(n, DEFAULT.num_perm), dtype=np.uint32)
    fingerprint = DEFAULT.fingerprint()
    return [
        PageRecord(
            source_id="bench",
            canonical_url=f"https://example.com/page/{i}",
            url=f"https://example.com/page/{i}",
            final_url=f"https://example.com/page/{i}",
            fetched_at=f"2026-01-01T00:00:{i % 60:02d}.{i % 1_000_000:06d}Z",
            http_status=200,
            content_hash=f"{i:064x}",
            content=f"page {i}",
            word_count=2,
            minhash=to_bytes(_lean(DEFAULT.seed, values[i])),
            minhash_params=fingerprint,
        )
        for i in range(n)
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=None, help="pages to store (100000)")
    parser.add_argument("--quick", action="store_true", help="20,000 pages")
    args = parser.parse_args()
    n = args.pages or (20_000 if args.quick else 100_000)
    rng = np.random.default_rng(7)
    with tempfile.TemporaryDirectory(dir=REPO / "data" if (REPO / "data").is_dir() else None) as d:
        url = f"sqlite:///{d}/restore.db"
        records = _records(n, rng)
        with open_store(url) as store:
            t0 = time.perf_counter()
            for start in range(0, n, 1000):
                store.write(records[start : start + 1000])
            load = time.perf_counter() - t0
        del records
        rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        t0 = time.perf_counter()
        with open_store(url) as store:
            by_hash: dict[str, tuple[str, str]] = {}
            rows = []
            for row in store.dedupe_state():
                by_hash.setdefault(row.content_hash, row.key)
                if row.minhash is not None and row.minhash_params is not None:
                    rows.append(
                        (f"{row.source_id}|{row.canonical_url}", row.minhash, row.minhash_params)
                    )
            t_read = time.perf_counter() - t0
            index = MemoryNearDuplicateIndex.restore(DEFAULT, rows)
        total = time.perf_counter() - t0
        rss_after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        size = Path(f"{d}/restore.db").stat().st_size
    assert len(index) == n
    print(f"### Dedupe state restore from SQLite ({n:,} stored signatures)\n")
    print("| step | seconds | rate |")
    print("|---|---:|---:|")
    print(f"| load pages (batches of 1,000) | {load:.2f} | {n / load:,.0f} rows/s |")
    print(f"| read active pages (`dedupe_state`) | {t_read:.2f} | {n / t_read:,.0f} rows/s |")
    print(f"| restore LSH index | {total - t_read:.2f} | {n / (total - t_read):,.0f} sig/s |")
    print(f"| **total at spider start** | **{total:.2f}** | |")
    print(
        f"\nPeak RSS {rss_after / 1024:.0f} MiB (before restore {rss_before / 1024:.0f} MiB); "
        f"database {size / 2**20:.0f} MiB."
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
