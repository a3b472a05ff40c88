"""Benchmark: rendered crawling (Playwright + the machine's Chromium) against plain HTTP.

    .venv/bin/python bench/bench_render.py [--quick] [--pages N]

Starts the loopback test site with N articles (default 500, ``--quick`` 100) and crawls its
N JavaScript pages ``/js/inline/<i>`` (the article is built by an inline script; over plain
HTTP the page is an empty shell) with the real ``scrapy crawl knowledge`` command, in a
subprocess each, from a seeds file listing the N pages (``follow_links = false``)::

    .venv/bin/scrapy crawl knowledge -a seeds=TMP/render.toml -s LOG_LEVEL=WARNING
        -s DOWNLOAD_DELAY=0 -s AUTOTHROTTLE_ENABLED=False -s CONCURRENT_REQUESTS=16
        -s CONCURRENT_REQUESTS_PER_DOMAIN=16 -s KC_DATABASE_URL=sqlite:///TMP/x.db

Scenarios, on the same pages: ``plain HTTP`` (``render = "http"``, the baseline: stores the
shells), ``rendered`` (``render = "playwright"``, ``wait_for = "load"``, default
``KC_BROWSER_PAGES``, fresh database) and ``rendered, 2nd crawl`` (the same source into the
same database, site unchanged: every page is checked with a plain conditional GET, so no
browser should start).

Memory: every 0.5 s the benchmark sums the proportional set size (PSS, from
``/proc/PID/smaps_rollup``: shared pages split between the processes sharing them) of the
crawl process and every process below it (Playwright's driver, Chromium's browser, renderer,
GPU and utility processes), and reads how many pages the database holds. The report gives
the peak, the memory at each tenth of the crawl, and a least-squares slope of memory against
pages stored over the second half of the crawl (after start-up), in MiB per 100 pages.
Prints a markdown snippet.
"""

from __future__ import annotations

import shutil
import sqlite3
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
    process_tree,
    pss_kib,
    run_sampled,
    slope_per_100,
    stored_pages,
)

SETTINGS = {
    "LOG_LEVEL": "WARNING",
    "DOWNLOAD_DELAY": "0",
    "AUTOTHROTTLE_ENABLED": "False",
    "CONCURRENT_REQUESTS": "16",
    "CONCURRENT_REQUESTS_PER_DOMAIN": "16",
    "KC_PROGRESS_SECONDS": "0",
}


def seeds_file(path: Path, site_url: str, pages: int, render: str) -> Path:
    urls = ", ".join(f'"{site_url}js/inline/{i}"' for i in range(pages))
    path.write_text(
        "[[source]]\n"
        'id = "js"\n'
        f"start_urls = [{urls}]\n"
        'allowed_domains = ["localhost"]\n'
        "follow_links = false\n"
        f'render = "{render}"\n'
        'wait_for = "load"\n',
        encoding="utf-8",
    )
    return path


def crawl(seeds: Path, db: Path) -> dict[str, Any]:
    """One crawl, with memory samples ``(pages stored, crawler PSS, total PSS)``."""
    samples: list[tuple[int, int, int]] = []

    def sample(proc: subprocess.Popen[str]) -> None:
        pids = process_tree(proc.pid)
        own = pss_kib(proc.pid)
        samples.append((stored_pages(db), own, own + sum(pss_kib(pid) for pid in pids[1:])))

    wall, stderr = run_sampled(
        crawl_argv(str(seeds), db, SETTINGS), sample, every=0.5, prog="bench_render"
    )
    conn = sqlite3.connect(db)
    try:
        counters = conn.execute(
            "SELECT pages_new, responses_200_changed, responses_304 FROM crawl_runs "
            "ORDER BY id DESC LIMIT 1"
        ).fetchone()
        words = conn.execute("SELECT COALESCE(SUM(word_count), 0) FROM pages").fetchone()[0]
        rows = conn.execute("SELECT COUNT(*) FROM pages").fetchone()[0]
    finally:
        conn.close()
    return {
        "wall": wall,
        "samples": samples,
        "rows": rows,
        "words": words,
        "new": counters[0],
        "changed": counters[1],
        "not_modified": counters[2],
        "errors": sum("ERROR" in line for line in stderr.splitlines()),
    }


def main() -> int:
    ap = doc_parser(__doc__)
    ap.add_argument("--quick", action="store_true", help="100 pages instead of 500")
    ap.add_argument("--pages", type=int, help="JavaScript pages to crawl (overrides --quick)")
    args = ap.parse_args()
    n = args.pages or (100 if args.quick else 500)

    from knowledge_crawler.crawl.chromium import find_chromium
    from knowledge_crawler.testsite import TestSite

    chromium = find_chromium()
    if chromium is None:
        sys.exit("bench_render: no Chromium on this machine (make install puts it in place)")
    chromium_version = subprocess.run(
        [chromium, "--version"], capture_output=True, text=True, check=False
    ).stdout.strip()

    tmp = Path(tempfile.mkdtemp(prefix="kc-bench-render-"))
    results: dict[str, dict[str, Any]] = {}
    try:
        with TestSite(pages=n) as site:
            plain = seeds_file(tmp / "plain.toml", site.url, n, "http")
            rendered = seeds_file(tmp / "render.toml", site.url, n, "playwright")
            results["plain HTTP (baseline)"] = crawl(plain, tmp / "plain.db")
            results["rendered, fresh DB"] = crawl(rendered, tmp / "render.db")
            results["rendered, 2nd crawl, unchanged site"] = crawl(rendered, tmp / "render.db")
            blocked = site.hits()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    print(
        f"Rendered crawl: `scrapy crawl knowledge` over the test site's {n} `/js/inline/<i>` "
        f"pages, CONCURRENT_REQUESTS(_PER_DOMAIN)=16, no delay; {chromium_version}, "
        "headless, KC_BROWSER_PAGES=4, wait_for = load\n"
    )
    base = results["plain HTTP (baseline)"]
    base_pps = n / base["wall"]
    print(
        "| scenario | wall s | pages/s | vs plain HTTP | words stored | new / changed / 304 "
        "| peak PSS crawler MiB | peak PSS crawler + browser MiB |"
    )
    print("|---|---:|---:|---:|---:|---|---:|---:|")
    for name, r in results.items():
        pps = n / r["wall"]
        own = max((s[1] for s in r["samples"]), default=0) / 1024
        total = max((s[2] for s in r["samples"]), default=0) / 1024
        print(
            f"| {name} | {r['wall']:.1f} | {pps:.1f} | {pps / base_pps:.2f}x | {r['words']} "
            f"| {r['new']} / {r['changed']} / {r['not_modified']} | {own:.0f} | {total:.0f} |"
        )

    fresh = results["rendered, fresh DB"]["samples"]
    print(
        "\nMemory of the rendered crawl (fresh DB) as pages are stored "
        "(PSS of the crawl process and of everything below it):\n"
    )
    print("| pages stored | crawler MiB | crawler + browser MiB |")
    print("|---:|---:|---:|")
    for tenth in range(1, 11):
        mark = n * tenth // 10
        at = [s for s in fresh if s[0] >= mark]
        if at:
            print(f"| {mark} | {at[0][1] / 1024:.0f} | {at[0][2] / 1024:.0f} |")
    second_half = [(s[0], s[2]) for s in fresh if s[0] >= n // 2 and s[0] < n]
    own_half = [(s[0], s[1]) for s in fresh if s[0] >= n // 2 and s[0] < n]
    print(
        f"\n- Trend over the second half of the crawl: crawler + browser "
        f"{slope_per_100(second_half):+.1f} MiB per 100 pages, crawler alone "
        f"{slope_per_100(own_half):+.1f} MiB per 100 pages (least squares over "
        f"{len(second_half)} samples)."
    )
    print(
        f"- Asset requests that reached the site (image, font, video): {sum(blocked.values())} "
        f"({', '.join(f'{k}={v}' for k, v in blocked.items())}); the browser blocks them."
    )
    print(
        "- pages/s = the N pages over the wall time of the whole command, interpreter and "
        "browser start-up included; vs plain HTTP = relative to the baseline of the same run."
    )
    bad = {k: r["errors"] for k, r in results.items() if r["errors"]}
    if bad:
        print(f"- log lines with ERROR: {bad}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
