"""Benchmark: the memory of a long crawl, and whether it keeps growing.

    .venv/bin/python bench/bench_memory.py [--quick] [--pages N]

Starts the loopback test site (``TestSite(pages=N, warm=True)``, default N=50000, ``--quick``
3000), waits until its pre-rendering is done, then runs the full ``scrapy crawl knowledge``
into a fresh SQLite database (the settings of bench_crawl.py). Every 2 s it records the
pages stored so far, the resident set size (RSS) of the crawl process, and the
proportional set size (PSS, from ``/proc/PID/smaps_rollup``) of the crawl process and
everything below it (the stage workers and their server), so shared pages count once.

Prints the peaks, the memory at each tenth of the crawl, and the trend after warm-up: over
the second half of the crawl, in MiB per 10,000 pages, of the crawl process's RSS. Two
figures decide it: the Theil-Sen slope of memory against pages stored (the median of the
slopes between every two samples) and the net growth (the median of the half's last tenth
of samples against that of its first tenth). The least-squares slope is printed too, with
those of the crawl process's PSS and of the whole tree's; a passing bump near the end (the
test site's redirects and duplicate pages all come last) pulls it up on its own. The
issue's target: peak RSS under 1 GB, no upward trend after warm-up.

``--samples FILE`` also writes every sample (pages stored, RSS, PSS, tree PSS in KiB) as
JSON.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from _common import (  # noqa: E402
    crawl_argv,
    doc_parser,
    median_slope_per_100,
    process_tree,
    pss_kib,
    rss_kib,
    run_sampled,
    site_pid,
    slope_per_100,
    stored_pages,
    wait_warm,
)

TARGET_PEAK_MIB = 1024
#: "no upward trend": the second half's slope stays under this, MiB per 10,000 pages
#: (about 100 bytes a page: no per-page state of a kilobyte can hide under it)
TARGET_TREND_MIB = 1.0
SAMPLE_SECONDS = 2.0


def crawl(site_url: str, db: Path) -> dict[str, Any]:
    samples: list[tuple[int, int, int, int]] = []  # pages, crawler RSS, crawler PSS, tree PSS

    def sample(proc: subprocess.Popen[str]) -> None:
        tree = process_tree(proc.pid)
        own = pss_kib(proc.pid)
        samples.append(
            (stored_pages(db), rss_kib(proc.pid), own, own + sum(pss_kib(p) for p in tree[1:]))
        )

    wall, _ = run_sampled(
        crawl_argv(site_url, db), sample, every=SAMPLE_SECONDS, prog="bench_memory"
    )
    return {"wall": wall, "samples": samples, "rows": stored_pages(db), "counters": counters(db)}


def counters(db: Path) -> dict[str, Any]:
    """The Scrapy stats of the crawl's run, as the store recorded them."""
    conn = sqlite3.connect(db)
    try:
        row = conn.execute("SELECT counters FROM crawl_runs ORDER BY id DESC LIMIT 1").fetchone()
    finally:
        conn.close()
    return json.loads(row[0] or "{}") if row else {}


def main() -> int:
    ap = doc_parser(__doc__)
    ap.add_argument("--quick", action="store_true", help="3000 articles instead of 50000")
    ap.add_argument("--pages", type=int, help="test site articles (overrides --quick)")
    ap.add_argument("--samples", type=Path, help="write every sample to this JSON file")
    args = ap.parse_args()
    n = args.pages or (3000 if args.quick else 50_000)

    from knowledge_crawler.testsite import TestSite

    tmp = Path(tempfile.mkdtemp(prefix="kc-bench-memory-"))
    try:
        with TestSite(pages=n, warm=True) as site:
            pid = site_pid(site)
            warm_s = wait_warm(pid, timeout=900) if pid else 0.0
            result = crawl(site.url, tmp / "memory.db")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if args.samples:
        args.samples.write_text(json.dumps(result["samples"]), encoding="utf-8")
    samples = [s for s in result["samples"] if s[0] > 0]
    if not samples:
        sys.exit(
            f"bench_memory: the crawl ended before a sample was taken; use more than {n} pages"
        )
    rows = result["rows"]
    peak_rss = max(s[1] for s in result["samples"]) / 1024
    peak_tree = max(s[3] for s in result["samples"]) / 1024
    second_half = [s for s in samples if s[0] >= rows / 2]
    rss_slope = 100 * slope_per_100([(s[0], s[1]) for s in second_half])
    crawler_slope = 100 * slope_per_100([(s[0], s[2]) for s in second_half])
    tree_slope = 100 * slope_per_100([(s[0], s[3]) for s in second_half])
    print(
        f"Memory of a long crawl: `scrapy crawl knowledge` on the loopback test site, {n} "
        f"articles (warmed in {warm_s:.0f} s), {rows} pages stored in {result['wall']:.0f} s; "
        f"sampled every {SAMPLE_SECONDS:.0f} s\n"
    )
    print("| pages stored | crawler RSS MiB | crawler PSS MiB | crawler + workers PSS MiB |")
    print("|---:|---:|---:|---:|")
    shown: set[int] = set()
    for tenth in range(1, 11):
        goal = rows * tenth / 10
        sample = min(samples, key=lambda s: abs(s[0] - goal))
        if sample[0] in shown:
            continue
        shown.add(sample[0])
        print(
            f"| {sample[0]} | {sample[1] / 1024:.0f} | {sample[2] / 1024:.0f} "
            f"| {sample[3] / 1024:.0f} |"
        )
    verdict = "**PASS**" if peak_rss < TARGET_PEAK_MIB else "**FAIL**"
    print(
        f"\n- {verdict} peak RSS of the crawl process {peak_rss:.0f} MiB (target < "
        f"{TARGET_PEAK_MIB} MiB); peak PSS of the crawl process with its workers "
        f"{peak_tree:.0f} MiB"
    )
    rss = [(s[0], s[1]) for s in second_half]
    robust = 100 * median_slope_per_100(rss)
    tenth = max(1, len(second_half) // 10)
    start = statistics.median(m for _, m in rss[:tenth])
    end = statistics.median(m for _, m in rss[-tenth:])
    span = (rss[-1][0] - rss[0][0]) or 1
    net = (end - start) / 1024 / span * 10_000
    ok = robust < TARGET_TREND_MIB and net < TARGET_TREND_MIB
    trend = "**PASS**" if ok else "**FAIL**"
    print(
        f"- {trend} trend of the crawl process's RSS over the second half ({len(second_half)} "
        f"samples), MiB per 10,000 pages (target < {TARGET_TREND_MIB:g} for both: no upward "
        f"trend): Theil-Sen slope {robust:+.1f}; net growth {net:+.1f} ({start / 1024:.0f} "
        f"MiB at its start, {end / 1024:.0f} at its end, medians of {tenth} samples); "
        f"least-squares slope {rss_slope:+.1f} (its PSS {crawler_slope:+.1f}, with its "
        f"workers {tree_slope:+.1f})"
    )
    moved = result["counters"].get("kc/dedupe/state_moved_at_pages")
    print(
        "- dedupe state: "
        + (
            f"moved to its temporary file at {moved:,} pages (KC_DEDUPE_MEMORY_PAGES) in "
            f"{result['counters'].get('kc/dedupe/state_move_ms', 0) / 1000:.2f} s"
            if moved is not None
            else "in memory for the whole crawl"
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
