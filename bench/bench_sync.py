"""Benchmark: incremental re-crawl with conditional GET (ETag / Last-Modified, 304s).

    .venv/bin/python bench/bench_sync.py [--quick] [--pages N]

Starts ONE loopback test site (``TestSite(pages=N, seed=1, warm=True)``, default N=5000,
``--quick`` 300), waits until its pre-rendering is done, then runs the real command three
times into the same fresh SQLite DB, from the repository root::

    .venv/bin/scrapy crawl knowledge -a seeds=SITE_URL -s LOG_LEVEL=WARNING -s DOWNLOAD_DELAY=0
        -s AUTOTHROTTLE_ENABLED=False -s CONCURRENT_REQUESTS=16
        -s CONCURRENT_REQUESTS_PER_DOMAIN=16 -s KC_DATABASE_URL=sqlite:///TMP/sync.db
        -s KC_PROGRESS_SECONDS=0

1. first crawl (fresh DB);
2. re-crawl of the unchanged site: every stored page is requested with its validators;
3. re-crawl after ``site.mutate(i, "text", copies=False)`` of 1% of the articles (at least
   one), spread evenly over the article indexes.

Measured per crawl: wall time (interpreter start-up included), responses
(``downloader/response_count``, robots.txt and redirects included) and responses/s,
page responses (the spider's ``kc/fetch/status/<code>`` counters: robots.txt and redirect
hops are not pages) and how many were 304, conditional requests sent, response bytes
(``downloader/response_bytes``: status line, headers and body), rows added to
``page_versions`` and ``page_content`` rows whose content changed (a SHA-256 of every row
before and after), CPU (the crawl process's and its stage workers') and peak RSS
(``/usr/bin/time -f`` or a getrusage wrapper), test-site CPU.

Targets (printed as PASS/FAIL lines): on the unchanged re-crawl at least 99% of page
responses are 304, response bytes at most 1% of the first crawl's and zero content rewrites
(page_versions rows added + page_content rows changed); after the 1% change exactly the
mutated articles get a new version. A miss is explained below the targets: which page
responses were not 304 (from ``page_meta.fetched_at``, which only a 200 moves), which stored
pages were not requested at all, and the responses that are not pages. The exit status is 0
whether or not targets are met (1 only if a crawl fails). Prints a markdown snippet.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sqlite3
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from _common import FAST_SETTINGS, doc_parser, meter_name, run_crawl, site_pid, wait_warm  # noqa: E402

SETTINGS = FAST_SETTINGS | {"KC_PROGRESS_SECONDS": "0"}
TARGET_304_PCT = 99.0
TARGET_BYTES_PCT = 1.0
CHANGE_FRACTION = 0.01
EXAMPLES = 8


# -- database snapshots -----------------------------------------------------------------------


def snapshot(db: Path) -> dict[str, Any]:
    """What a crawl may change: page_meta times, page_content checksums, page_versions."""
    conn = sqlite3.connect(db)
    try:
        meta = {
            pid: (url, fetched, checked, status)
            for pid, url, fetched, checked, status in conn.execute(
                "SELECT id, canonical_url, fetched_at, last_checked_at, http_status FROM page_meta"
            )
        }
        content = {
            pid: hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
            for pid, text in conn.execute("SELECT page_id, content FROM page_content")
        }
        versions = conn.execute("SELECT COUNT(*), COALESCE(MAX(id), 0) FROM page_versions")
        n_versions, max_version = versions.fetchone()
        version_rows = conn.execute("SELECT id, page_id FROM page_versions").fetchall()
    finally:
        conn.close()
    return {
        "meta": meta,
        "content": content,
        "versions": n_versions,
        "max_version": max_version,
        "version_rows": version_rows,
    }


def snapshot_empty() -> dict[str, Any]:
    return {"meta": {}, "content": {}, "versions": 0, "max_version": 0, "version_rows": []}


def diff(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """What one crawl did to the DB, by page id."""
    old_meta, new_meta = before["meta"], after["meta"]
    old_c, new_c = before["content"], after["content"]
    changed = sorted(p for p in new_c if p in old_c and new_c[p] != old_c[p])
    added = sorted(set(new_c) - set(old_c))
    removed = sorted(set(old_c) - set(new_c))
    # rows of page_versions written by this crawl (ids are AUTOINCREMENT, never reused)
    versioned = [page for vid, page in after["version_rows"] if vid > before["max_version"]]
    common = set(old_meta) & set(new_meta)
    return {
        "content_changed": changed,
        "content_added": added,
        "content_removed": removed,
        "versions_added": after["versions"] - before["versions"],
        "versioned": versioned,
        "new_pages": sorted(set(new_meta) - set(old_meta)),
        # fetched_at moves only with a 200 that reached the store (a 304 is a touch)
        "refetched": sorted(p for p in common if new_meta[p][1] != old_meta[p][1]),
        "not_checked": sorted(p for p in common if new_meta[p][2] == old_meta[p][2]),
    }


# -- counters ---------------------------------------------------------------------------------


def statuses(counters: dict[str, Any], prefix: str) -> dict[int, int]:
    out = {}
    for key, value in counters.items():
        if key.startswith(prefix) and key[len(prefix) :].isdigit():
            out[int(key[len(prefix) :])] = int(value)
    return dict(sorted(out.items()))


def measure(run: dict[str, Any], d: dict[str, Any]) -> dict[str, Any]:
    c = run["counters"]
    pages = statuses(c, "kc/fetch/status/")
    responses = int(c.get("downloader/response_count", 0))
    return {
        **run,
        **d,
        "responses": responses,
        "requests": int(c.get("downloader/request_count", 0)),
        "bytes": int(c.get("downloader/response_bytes", 0)),
        "page_statuses": pages,
        "all_statuses": statuses(c, "downloader/response_status_count/"),
        "page_responses": sum(pages.values()),
        "r304": pages.get(304, 0),
        "r304_column": int(run["run"].get("responses_304") or 0),
        "conditional": int(run["run"].get("conditional_requests_sent") or 0),
        "changed": int(run["run"].get("responses_200_changed") or 0),
        "unchanged": int(run["run"].get("responses_200_unchanged") or 0),
        "pages_new": int(run["run"].get("pages_new") or 0),
        "rewrites": d["versions_added"] + len(d["content_changed"]),
        "errors": {k: v for k, v in c.items() if k.startswith("kc/fetch/error/")},
        "ignored": int(c.get("kc/fetch/ignored", 0)),
        "non_html": int(c.get("kc/extract/non_html", 0)),
        "log_errors": sum("ERROR" in line for line in run["stderr"].splitlines()),
    }


# -- reporting --------------------------------------------------------------------------------


def page_kind(url: str) -> str:
    """A URL's kind on the test site, for grouping: ``/articles/<slug>``, ``/tag/*``, ..."""
    parts = urlsplit(url)
    path = parts.path or "/"
    if path == "/":
        return "/ (home)"
    if path == "/articles":
        return "/articles?page=N (listing)" if parts.query else "/articles (listing)"
    head = path.strip("/").split("/")[0]
    return f"/{head}/<slug>" if head in ("articles", "print", "syndicated") else f"/{head}/*"


def short(url: str) -> str:
    parts = urlsplit(url)
    return (parts.path or "/") + (f"?{parts.query}" if parts.query else "")


def paths(urls: list[str]) -> str:
    shown = ", ".join(f"`{short(u)}`" for u in urls[:EXAMPLES])
    more = len(urls) - EXAMPLES
    return shown + (f" and {more} more" if more > 0 else "")


def kinds(urls: list[str]) -> str:
    count = Counter(page_kind(u) for u in urls)
    return ", ".join(f"{k}: {n}" for k, n in count.most_common())


def counted_bytes(status: int, headers: dict[str, str], body: bytes) -> int:
    """What Scrapy's ``downloader/response_bytes`` adds for a response (its DownloaderStats)."""
    from twisted.web import http

    size = sum(len(k) + 2 + len(v) for k, v in headers.items()) + 2 * (len(headers) - 1)
    return len(body) + size + len(http.RESPONSES.get(status, b"")) + 15 + 4


def probe_304(site: Any, path: str) -> tuple[int, int, list[str]]:
    """A 304 for ``path``: its size on the wire, what it counts in ``downloader/response_bytes``
    and its header names. Scrapy's HTTP/1.1 handler adds ``Content-Length: 0`` to it."""
    etag = site.fetch(path).headers.get("ETag", "")
    reply = site.fetch(path, headers={"If-None-Match": etag})
    assert reply.status == 304, f"{path}: expected a 304, got {reply.status}"
    wire = counted_bytes(304, reply.headers, reply.body)
    scrapy_headers = {"Content-Length": str(len(reply.body))} | reply.headers
    return wire, counted_bytes(304, scrapy_headers, reply.body), list(scrapy_headers)


def pct(part: float, whole: float) -> float:
    return 100.0 * part / whole if whole else 0.0


def verdict(ok: bool) -> str:
    return "**PASS**" if ok else "**FAIL**"


def main() -> int:
    ap = doc_parser(__doc__)
    ap.add_argument("--quick", action="store_true", help="300 articles instead of 5000")
    ap.add_argument("--pages", type=int, help="test site articles (overrides --quick)")
    args = ap.parse_args()
    n = args.pages or (300 if args.quick else 5000)
    k = max(1, round(n * CHANGE_FRACTION))
    step = n / k
    mutated = sorted({min(n - 1, int(j * step + step / 2)) for j in range(k)})

    from knowledge_crawler.testsite import TestSite

    load0 = os.getloadavg() if hasattr(os, "getloadavg") else (0.0, 0.0, 0.0)
    tmp = Path(tempfile.mkdtemp(prefix="kc-bench-sync-"))
    db = tmp / "sync.db"
    runs: list[dict[str, Any]] = []
    try:
        with TestSite(pages=n, seed=1, warm=True) as site:
            pid = site_pid(site)
            warm_s = wait_warm(pid) if pid else 0.0
            articles = site.manifest()["articles"]

            def crawl() -> dict[str, Any]:
                before = snapshot(db) if db.exists() else snapshot_empty()
                run = run_crawl(site.url, db, pid, settings=SETTINGS, prog="bench_sync")
                return measure(run, diff(before, snapshot(db)))

            runs.append(crawl())  # 1. fresh DB
            runs.append(crawl())  # 2. unchanged site
            wire_304, size_304, headers_304 = probe_304(site, articles[0]["path"])
            robots = site.fetch("/robots.txt")
            robots_bytes = counted_bytes(robots.status, robots.headers, robots.body)
            for i in mutated:
                site.mutate(i, "text", copies=False)
            runs.append(crawl())  # 3. 1% changed
            load1 = os.getloadavg() if hasattr(os, "getloadavg") else (0.0, 0.0, 0.0)
            final = snapshot(db)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    url_of = {p: m[0] for p, m in final["meta"].items()}
    first, again, change = runs
    print(
        f"Incremental sync: `scrapy crawl knowledge` three times into one SQLite DB on one "
        f"loopback test site, {n} articles (warmed in {warm_s:.0f} s): first crawl, re-crawl "
        f"of the unchanged site, re-crawl after {len(mutated)} articles ({pct(len(mutated), n):g}%)"
        f" changed their text. CONCURRENT_REQUESTS(_PER_DOMAIN)=16, no delay; CPU and peak RSS "
        f"of the crawl process via {meter_name()}; load average {load0[0]:.2f} at start, "
        f"{load1[0]:.2f} at end ({os.cpu_count()} CPUs)\n"
    )
    print(
        "| crawl | wall s | vs 1st | responses | resp/s | page responses | 304 | 304 % "
        "| conditional sent | response bytes | bytes vs 1st | new pages | changed (200) "
        "| versions added | content rows changed | CPU s (crawl + stage workers) | site CPU s "
        "| peak RSS MiB |"
    )
    print(
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    )
    names = ["1st crawl, fresh DB", "re-crawl, unchanged site", f"re-crawl, {len(mutated)} changed"]
    for name, r in zip(names, runs, strict=True):
        print(
            f"| {name} | {r['wall']:.1f} | {r['wall'] / first['wall']:.2f}x | {r['responses']} "
            f"| {r['responses'] / r['wall']:.0f} | {r['page_responses']} | {r['r304']} "
            f"| {pct(r['r304'], r['page_responses']):.1f} | {r['conditional']} "
            f"| {r['bytes']:,} | {pct(r['bytes'], first['bytes']):.2f}% | {r['pages_new']} "
            f"| {r['changed']} | {r['versions_added']} | {len(r['content_changed'])} "
            f"| {r['cpu']:.1f} | {r['site_cpu']:.1f} | {r['rss_kib'] / 1024:.0f} |"
        )

    # -- targets ----------------------------------------------------------------------------
    p304 = pct(again["r304"], again["page_responses"])
    pbytes = pct(again["bytes"], first["bytes"])
    mean_first = first["bytes"] / max(1, first["responses"])
    mean_again = again["bytes"] / max(1, again["responses"])
    expected = {urlsplit(articles[i]["url"]).path for i in mutated}
    versioned = {urlsplit(url_of[p]).path for p in change["versioned"]}
    content_moved = {urlsplit(url_of[p]).path for p in change["content_changed"]}
    exact = (
        versioned == expected
        and content_moved == expected
        and change["changed"] == len(expected)
        and change["versions_added"] == len(expected)
    )
    print("\nTargets (issue):\n")
    print(
        f"- {verdict(p304 >= TARGET_304_PCT)} ≥ {TARGET_304_PCT:g}% of page requests answered "
        f"304 on the unchanged re-crawl: {p304:.2f}% ({again['r304']} of "
        f"{again['page_responses']} page responses)"
    )
    print(
        f"- {verdict(pbytes <= TARGET_BYTES_PCT)} response bytes ≤ {TARGET_BYTES_PCT:g}% of the "
        f"first crawl's: {pbytes:.2f}% ({again['bytes']:,} of {first['bytes']:,} bytes; "
        f"{mean_again:.0f} bytes/response vs {mean_first:,.0f} on the first crawl)"
    )
    print(
        f"- {verdict(again['rewrites'] == 0)} zero content rewrites on the unchanged re-crawl: "
        f"{again['rewrites']} ({again['versions_added']} page_versions rows added, "
        f"{len(again['content_changed'])} page_content rows changed)"
    )
    print(
        f"- {verdict(exact)} the 1% change is detected exactly: {len(expected)} articles mutated;"
        f" responses_200_changed {change['changed']}, page_versions rows added "
        f"{change['versions_added']} ({len(versioned & expected)} of them mutated articles), "
        f"page_content rows changed {len(content_moved)}"
    )
    print(
        f"- wall-time ratio re-crawl / first crawl: {again['wall'] / first['wall']:.2f} "
        f"(unchanged), {change['wall'] / first['wall']:.2f} (1% changed)"
    )

    # -- details ----------------------------------------------------------------------------
    notes = []
    for name, r in zip(names, runs, strict=True):
        line = (
            f"{name}: page statuses {r['page_statuses']}; all responses by status "
            f"{r['all_statuses']} ({r['responses'] - r['page_responses']} not pages: robots.txt,"
            f" redirect hops); requests {r['requests']}"
        )
        if r["errors"] or r["ignored"]:
            line += f"; fetch errors {r['errors']}, ignored (robots/offsite) {r['ignored']}"
        if r["non_html"]:
            line += f"; non-HTML page responses (not stored) {r['non_html']}"
        if r["r304_column"] != r["r304"]:
            line += f"; crawl_runs.responses_304 = {r['r304_column']} (counter {r['r304']})"
        if r["log_errors"]:
            line += f"; {r['log_errors']} ERROR log lines"
        notes.append(line)
    refetched = [url_of[p] for p in again["refetched"]]
    non304 = again["page_responses"] - again["r304"]
    if refetched or non304:
        notes.append(
            f"unchanged re-crawl, page responses not 304: {non304}; stored pages re-fetched with "
            f"a 200 (fetched_at moved): {len(refetched)} ({kinds(refetched)}), e.g. "
            f"{paths(refetched)}"
        )
    unconditional = again["page_responses"] - again["conditional"]
    if unconditional:
        notes.append(
            f"unchanged re-crawl: {unconditional} page requests went out without validators "
            f"({again['page_responses']} page responses, {again['conditional']} conditional)"
        )
    for name, r in zip(names[1:], runs[1:], strict=True):
        if r["not_checked"]:
            missed = [url_of[p] for p in r["not_checked"]]
            notes.append(
                f"{name}: {len(missed)} stored pages not requested ({kinds(missed)}), e.g. "
                f"{paths(missed)}"
            )
        if r["content_removed"]:
            gone = [url_of.get(p, f"page id {p}") for p in r["content_removed"]]
            notes.append(f"{name}: {len(gone)} page_content rows removed, e.g. {paths(gone)}")
        if r["new_pages"]:
            fresh = [url_of[p] for p in r["new_pages"]]
            notes.append(f"{name}: {len(fresh)} new pages stored, e.g. {paths(fresh)}")
    if again["rewrites"]:
        moved = [url_of[p] for p in again["content_changed"]]
        vers = [url_of[p] for p in again["versioned"]]
        notes.append(
            f"unchanged re-crawl rewrites: page_content changed for {paths(moved) or 'none'}; "
            f"page_versions added for {paths(vers) or 'none'}"
        )
    if not exact:
        for label, found in (("page_versions", versioned), ("page_content", content_moved)):
            missing = sorted(expected - found)
            extra_keys = sorted(found - expected)
            if missing or extra_keys:
                notes.append(
                    f"1% change, {label}: mutated but not detected {len(missing)} "
                    f"{missing[:EXAMPLES]}; detected but not mutated {len(extra_keys)} "
                    f"{extra_keys[:EXAMPLES]}"
                )
    notes.append(
        f"mutated article indexes: {mutated[:EXAMPLES]}{' ...' if len(mutated) > EXAMPLES else ''}"
        f" (every {step:g}th); detected keys: "
        f"{sorted(versioned)[:3]}{' ...' if len(versioned) > 3 else ''}"
    )
    notes.append(
        f"a 304 has no body, but its status line and headers count: {size_304} bytes for an "
        f"article (`{articles[0]['path']}`: {wire_304} on the wire with "
        f"{', '.join(h for h in headers_304 if h != 'Content-Length')}, plus the "
        f"`Content-Length: 0` Scrapy's HTTP/1.1 handler adds), about 25 fewer for pages "
        f"without Cache-Control (home, listings, tags). The unchanged re-crawl averaged "
        f"{mean_again:.0f} bytes/response, so ≤ {TARGET_BYTES_PCT:g}% needs a mean first-crawl "
        f"response of ≥ {100 * mean_again / TARGET_BYTES_PCT:,.0f} bytes; the test site's is "
        f"{mean_first:,.0f}"
    )
    if again["responses"] - again["r304"] == 1:  # robots.txt and 304s only
        bytes_304 = again["bytes"] - robots_bytes
        notes.append(
            f"unchanged re-crawl bytes: robots.txt {robots_bytes} (200, fetched every run), the "
            f"{again['r304']} 304s {bytes_304:,} ({bytes_304 / max(1, again['r304']):.0f} each,"
            f" {pct(bytes_304, first['bytes']):.2f}% of the first crawl's bytes)"
        )
    notes.append(
        "responses = downloader/response_count (incl. robots.txt and redirect hops); page "
        "responses = sum of the spider's kc/fetch/status/<code>; response bytes = "
        "downloader/response_bytes (status line + headers + body); wall time includes "
        "interpreter start-up (~2 s)."
    )
    print("\n" + "\n".join(f"- {line}" for line in notes))
    return 0


if __name__ == "__main__":
    sys.exit(main())
