"""Benchmark: the memory of a crawl whose database knows 1,000,000 URLs.

    .venv/bin/python bench/bench_scale.py [--quick] [--urls N] [--seconds S]

Builds a SQLite database that knows ``--urls`` URLs of one source (default 1,000,000,
``--quick`` 100,000): half of them stored pages (``page_meta`` and ``page_content``, with
validators and a content hash), half links found but not fetched yet (``frontier`` rows,
``adapter = link``). Then runs ``scrapy crawl knowledge`` on it (the settings of
bench_crawl.py) for ``--seconds`` of crawling (default 120, ``CLOSESPIDER_TIMEOUT``)
against a loopback "wide site" served by this script: ``/u/<i>`` answers 304 to its own
ETag and otherwise a small article with 20 links to new pages, so the crawl revalidates
stored pages, fetches the ones found, and discovers more the whole time.

Samples the crawl process's resident set size (RSS, ``/proc/PID/status``) every 0.5 s and
prints its peak, the time to the crawl's first response, and how many stored pages answered
304 and how many new pages were stored in the window. The same crawl on an empty database
(the wide site's home page as its seed) runs first as the baseline of the same run: the
difference is what the known URLs cost. Target (issue: crawl state, memory): under 1 GB
peak RSS with 1,000,000 URLs known, on a 2-core machine.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import shutil
import sqlite3
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from _common import crawl_argv, doc_parser, run_sampled  # noqa: E402

TARGET_PEAK_MIB = 1024
FANOUT = 20
SAMPLE_SECONDS = 0.5
_WORDS = [
    "river",
    "stone",
    "lantern",
    "orbit",
    "meadow",
    "copper",
    "signal",
    "harbor",
    "quartz",
    "willow",
    "ember",
    "falcon",
    "glacier",
    "prism",
    "tundra",
    "violet",
    "canyon",
    "delta",
    "summit",
    "marble",
    "beacon",
    "cedar",
    "comet",
    "dune",
    "fjord",
    "grove",
    "horizon",
    "island",
    "jungle",
    "kelp",
    "lagoon",
    "mesa",
    "nebula",
    "oasis",
    "pebble",
    "quiver",
    "reef",
    "savanna",
    "tide",
    "umbra",
    "valley",
    "wharf",
    "yarrow",
    "zephyr",
    "anchor",
    "basalt",
    "cobalt",
    "drift",
]


def article(i: int) -> bytes:
    """Page ``i``: a title, two paragraphs of words drawn from its own hash (no two pages
    alike, so none is a near duplicate of another) and links to its FANOUT children."""
    digest = hashlib.sha256(str(i).encode()).digest() * 4
    words = [_WORDS[b % len(_WORDS)] for b in digest[:90]]
    children = range(i * FANOUT + 1, i * FANOUT + FANOUT + 1)
    links = "".join(f'<li><a href="/u/{c}">page {c}</a></li>' for c in children)
    return (
        f"<!doctype html><html><head><title>Page {i}</title></head><body>"
        f"<nav><a href='/'>home</a></nav><main><article><h1>Page {i}</h1>"
        f"<p>Page {i} says {' '.join(words[:45])}.</p><p>{' '.join(words[45:])}.</p>"
        f"</article></main><ul>{links}</ul></body></html>"
    ).encode()


class WideSite:
    """The loopback wide site, on an asyncio server in a thread of this process."""

    def __init__(self) -> None:
        self.port = 0
        self.answers = {200: 0, 304: 0, 404: 0}
        self._ready = threading.Event()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/"

    def __enter__(self) -> WideSite:
        self._thread.start()
        self._ready.wait(10)
        return self

    def __exit__(self, *exc: object) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        server = self._loop.run_until_complete(
            asyncio.start_server(self._serve, "127.0.0.1", 0, backlog=256)
        )
        self.port = server.sockets[0].getsockname()[1]
        self._ready.set()
        self._loop.run_forever()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                path = lines[0].split(" ")[1]
                headers = {
                    k.strip().lower(): v.strip()
                    for k, _, v in (line.partition(":") for line in lines[1:] if line)
                }
                writer.write(self._answer(path, headers.get("if-none-match")))
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    def _answer(self, path: str, inm: str | None) -> bytes:
        status, body, etag = 404, b"not here", None
        if path == "/":
            status, body = 200, article(0)
        elif path.startswith("/u/") and path[3:].isdigit():
            i = int(path[3:])
            etag = f'"{i}"'
            status, body = (304, b"") if inm == etag else (200, article(i))
        self.answers[status] += 1
        reason = {200: "OK", 304: "Not Modified", 404: "Not Found"}[status]
        head = f"HTTP/1.1 {status} {reason}\r\nContent-Length: {len(body)}\r\n"
        if status != 304:
            head += "Content-Type: text/html; charset=utf-8\r\n"
        if etag:
            head += f"ETag: {etag}\r\n"
        return (head + "\r\n").encode() + body


def fill(db: Path, site_url: str, urls: int) -> float:
    """Give ``db`` ``urls`` known URLs of the wide site's source: the first half stored
    pages, the second half links found on them and not fetched yet. Seconds taken."""
    from knowledge_crawler.sources import resolve_seeds
    from knowledge_crawler.store import open_store

    t0 = time.perf_counter()
    [source] = resolve_seeds(site_url)
    with open_store(f"sqlite:///{db}"):
        pass  # the schema
    stored = urls // 2
    now = "2026-01-01T00:00:00Z"
    later = "2030-01-01T00:00:00Z"
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA synchronous = OFF")
    with conn:
        conn.executemany(
            "INSERT INTO page_meta (id, source_id, canonical_url, url, final_url, fetched_at,"
            " title, word_count, content_hash, http_status, etag, status, first_seen_at,"
            " last_seen_at, last_checked_at, last_changed_at, next_check_at, depth)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, 90, ?, 200, ?, 'active', ?, ?, ?, ?, ?, ?)",
            (
                (
                    i + 1,
                    source.id,
                    source.key(f"{site_url}u/{i}"),
                    f"{site_url}u/{i}",
                    f"{site_url}u/{i}",
                    now,
                    f"Page {i}",
                    hashlib.sha256(str(i).encode()).hexdigest(),
                    f'"{i}"',
                    now,
                    now,
                    now,
                    now,
                    later,
                    1,
                )
                for i in range(1, stored + 1)
            ),
        )
        conn.executemany(
            "INSERT INTO page_content (page_id, content) VALUES (?, ?)",
            ((i + 1, f"Page {i}") for i in range(1, stored + 1)),
        )
        conn.executemany(
            "INSERT INTO frontier (source_id, canonical_url, url, depth, adapter,"
            " discovered_at, found_on) VALUES (?, ?, ?, 2, 'link', ?, ?)",
            (
                (
                    source.id,
                    source.key(f"{site_url}u/{i}"),
                    f"{site_url}u/{i}",
                    now,
                    source.key(f"{site_url}u/{(i - 1) // FANOUT}"),
                )
                for i in range(stored + 1, urls + 1)
            ),
        )
    conn.close()
    return time.perf_counter() - t0


def crawl(site: WideSite, db: Path, seconds: int) -> dict[str, Any]:
    samples: list[tuple[float, int]] = []
    t0 = time.perf_counter()

    def sample(proc: Any) -> None:
        try:
            status = Path(f"/proc/{proc.pid}/status").read_text()
        except OSError:
            return
        for line in status.splitlines():
            if line.startswith("VmRSS:"):
                samples.append((time.perf_counter() - t0, int(line.split()[1])))

    before = dict(site.answers)
    settings = {
        "LOG_LEVEL": "WARNING",
        "DOWNLOAD_DELAY": "0",
        "AUTOTHROTTLE_ENABLED": "False",
        "CONCURRENT_REQUESTS": "16",
        "CONCURRENT_REQUESTS_PER_DOMAIN": "16",
        "CLOSESPIDER_TIMEOUT": str(seconds),
        "KC_ARCHIVE_DIR": str(db.parent / "archive"),
    }
    wall, _ = run_sampled(
        crawl_argv(site.url, db, settings), sample, every=SAMPLE_SECONDS, prog="bench_scale"
    )
    conn = sqlite3.connect(db)
    try:
        row = conn.execute("SELECT counters FROM crawl_runs ORDER BY id DESC LIMIT 1").fetchone()
    finally:
        conn.close()
    counters = json.loads(row[0] or "{}") if row else {}
    answers = {k: site.answers[k] - before[k] for k in before}
    return {
        "wall": wall,
        "peak_mib": max((s[1] for s in samples), default=0) / 1024,
        "samples": samples,
        "answers": answers,
        "counters": counters,
    }


def main() -> int:
    ap = doc_parser(__doc__)
    ap.add_argument("--quick", action="store_true", help="100,000 URLs and 30 s")
    ap.add_argument("--urls", type=int, help="URLs the database knows (default 1,000,000)")
    ap.add_argument("--seconds", type=int, help="seconds of crawling (default 120)")
    args = ap.parse_args()
    urls = args.urls or (100_000 if args.quick else 1_000_000)
    seconds = args.seconds or (30 if args.quick else 120)
    tmp = Path(tempfile.mkdtemp(prefix="kc-bench-scale-"))
    try:
        with WideSite() as site:
            (tmp / "empty").mkdir()
            (tmp / "known").mkdir()
            empty = crawl(site, tmp / "empty" / "k.db", seconds)
            fill_s = fill(tmp / "known" / "k.db", site.url, urls)
            known = crawl(site, tmp / "known" / "k.db", seconds)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(
        f"A crawl whose SQLite database knows {urls:,} URLs of one source ({urls // 2:,} "
        f"stored pages, {urls - urls // 2:,} links not fetched yet; filled in {fill_s:.0f} s), "
        f"against the same crawl on an empty database: `scrapy crawl knowledge` of a "
        f"loopback site whose every page links to {FANOUT} new ones, stopped after "
        f"{seconds} s (CLOSESPIDER_TIMEOUT); RSS of the crawl process sampled every "
        f"{SAMPLE_SECONDS} s.\n"
    )
    print("| database | peak RSS MiB | 200s | 304s | pages stored | links recorded | wall s |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, r in (("empty", empty), (f"{urls:,} URLs known", known)):
        c = r["counters"]
        print(
            f"| {name} | {r['peak_mib']:.0f} | {r['answers'][200]:,} | {r['answers'][304]:,} "
            f"| {c.get('kc/store/inserted', 0):,} | {c.get('kc/crawl_state/links_recorded', 0):,} "
            f"| {r['wall']:.0f} |"
        )
    extra = known["peak_mib"] - empty["peak_mib"]
    verdict = "PASS" if known["peak_mib"] < TARGET_PEAK_MIB else "FAIL"
    print(
        f"\n- **{verdict}** peak RSS with {urls:,} URLs known: {known['peak_mib']:.0f} MiB "
        f"(target < {TARGET_PEAK_MIB} MiB); {extra:+.0f} MiB over the empty database, "
        f"{extra * 1024 * 1024 / urls:.0f} bytes per known URL"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
