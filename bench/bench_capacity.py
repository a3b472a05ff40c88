"""Benchmark: the per-page costs of a crawl, and what they make of a large corpus (docs/scaling.md).

    .venv/bin/python bench/bench_capacity.py [--quick] [--pages N] [--corpus N]
        [--change-rate F] [--machine-cores N] [--machine-gib N] [--write]

Measures, on this machine and in one run:

1. the whole crawl's CPU and bytes per page: ``scrapy crawl knowledge`` of the loopback test
   site (``--pages`` articles, default 2000, ``--quick`` 300) with no pipelines, with all of
   them into a fresh SQLite database, and again on the unchanged site (304s), as
   bench_crawl.py runs them;
2. each stage's CPU per page, in this process, on the site's article pages as fetched:
   decode, link extraction, extract, clean, canonical URL, SHA-256, MinHash, passages, the
   dedupe decision, the WARC record, and the store's batch write into SQLite and into
   PostgreSQL (client and server CPU; batches of 200);
3. Redis memory (``MEMORY USAGE``, exact) per queued request (scrapy-redis's priority
   queue of pickled requests as the knowledge spider builds them), per dupefilter
   fingerprint and per dedupe log entry;
4. database bytes per page and per version: SQLite file size, and PostgreSQL's
   ``pg_total_relation_size`` of every table of a fresh schema (indexes, TOAST and the
   full-text vectors included), after loading the pages with their passages and after
   rewriting each once with changed content;
5. a crawl process's memory per stored page: the known-page map it loads at start and the
   dedupe state (exact map, LSH index, ranks) it restores, with tracemalloc.

Then it extrapolates to ``--corpus`` pages (default 100,000,000) each checked once a day,
``--change-rate`` of them (default 0.05) changed: CPU cores and machines of
``--machine-cores`` / ``--machine-gib`` (2, 24: this kind of machine), bandwidth, Redis
memory, database size and growth, the write rate, and which component saturates first.
Prints markdown; ``--write`` also writes docs/scaling.md. Needs PostgreSQL
(``KC_TEST_POSTGRES_URL``) and Redis (``KC_TEST_REDIS_URL``); it exits with a message
without them.
"""

from __future__ import annotations

import gc
import os
import secrets
import shutil
import sys
import tempfile
import time
import tracemalloc
import urllib.request
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from _common import doc_parser, meter_name, run_crawl, site_pid, wait_warm  # noqa: E402

from knowledge_crawler.config import DEFAULTS  # noqa: E402

#: pages whose dedupe state a crawl keeps in memory (KC_DEDUPE_MEMORY_PAGES's default)
DEDUPE_MEMORY_PAGES = DEFAULTS.dedupe_memory_pages

POSTGRES_URL = os.environ.get("KC_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test")
REDIS_URL = os.environ.get("KC_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
DOC = REPO / "docs" / "scaling.md"
BATCH = 200
MIB = 2**20


def cpu_now() -> float:
    return time.process_time()


def proc_cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


# ----------------------------------------------------------------------------- 1. crawls


def crawls(site: Any, pid: int, tmp: Path) -> dict[str, dict[str, float]]:
    """Each crawl's CPU per response and wall time, less those of starting and stopping one."""
    # The start-up: a crawl of one page (robots.txt and /about, no links followed).
    seeds = tmp / "one.toml"
    seeds.write_text(
        f'[[source]]\nid = "one"\nstart_urls = ["{site.url}about"]\ndepth_limit = 0\n',
        encoding="utf-8",
    )
    ones = [
        run_crawl(str(seeds), tmp / f"one-{i}.db", pid, prog="bench_capacity") for i in range(2)
    ]
    startup = min(r["cpu"] for r in ones)
    startup_wall = min(r["wall"] for r in ones)
    out: dict[str, dict[str, float]] = {"startup": {"cpu": startup, "wall": startup_wall}}
    scenarios = [
        ("baseline", "s0.db", ["-s", "ITEM_PIPELINES={}"]),
        ("full", "full.db", []),
        ("revalidate", "full.db", []),
    ]
    for name, db, extra in scenarios:
        r = run_crawl(site.url, tmp / db, pid, extra, prog="bench_capacity")
        c = r["counters"]
        responses = max(1, int(c.get("downloader/response_count", 0)))
        out[name] = {
            "pages": responses,
            "wall": max(0.001, r["wall"] - startup_wall),
            "cpu_ms": 1000 * max(0.0, r["cpu"] - startup) / responses,
            "bytes": int(c.get("downloader/response_bytes", 0)) / responses,
            "rss_mib": r["rss_kib"] / 1024,
            "status_304": int(c.get("responses_304", 0)),
        }
    return out


# ----------------------------------------------------------------------------- 2. stages


def fetch_articles(site: Any, n: int) -> list[tuple[str, bytes, str]]:
    pages = []
    for article in site.manifest()["articles"][:n]:
        with urllib.request.urlopen(article["url"], timeout=30) as response:
            pages.append((article["url"], response.read(), response.headers["Content-Type"]))
    return pages


def timed(label: str, results: dict[str, float], n: int, fn: Callable[[], Any]) -> Any:
    gc.collect()
    start = cpu_now()
    value = fn()
    results[label] = 1000 * (cpu_now() - start) / n
    return value


def stages(pages: list[tuple[str, bytes, str]], tmp: Path) -> tuple[dict[str, float], list[Any]]:
    """CPU ms per page of each stage, and the page records (for the storage measurements)."""
    from scrapy.http import HtmlResponse

    from knowledge_crawler.archive.warc import WarcWriter
    from knowledge_crawler.items import PageItem
    from knowledge_crawler.pipelines.store import to_record
    from knowledge_crawler.spiders.knowledge import page_links
    from knowledge_crawler.sync.dedupe import DedupePolicy
    from knowledge_crawler.transform.canonical import canonical_url
    from knowledge_crawler.transform.decode import decode_html
    from knowledge_crawler.transform.extract import extract, stored_form
    from knowledge_crawler.transform.fingerprint import content_hash
    from knowledge_crawler.transform.minhash import DEFAULT, signature, to_bytes
    from knowledge_crawler.transform.passages import split_passages

    n = len(pages)
    ms: dict[str, float] = {}
    htmls = timed("decode", ms, n, lambda: [decode_html(b, ct) for _, b, ct in pages])
    responses = [HtmlResponse(url, body=body, encoding="utf-8") for url, body, _ in pages]
    timed("links (page_links)", ms, n, lambda: [page_links(r) for r in responses])
    got = timed(
        "extract",
        ms,
        n,
        lambda: [extract(h, url=u) for h, (u, _, _) in zip(htmls, pages, strict=True)],
    )
    cleaned = timed("clean", ms, n, lambda: [stored_form(e.markdown, e.headings, ()) for e in got])
    keys = timed("canonical URL", ms, n, lambda: [canonical_url(u) for u, _, _ in pages])
    hashes = timed("SHA-256", ms, n, lambda: [content_hash(c[0]) for c in cleaned])
    sigs = timed("MinHash", ms, n, lambda: [to_bytes(signature(c[0])) for c in cleaned])
    passages = timed(
        "passages",
        ms,
        n,
        lambda: [
            split_passages(c[0], source_id="s", canonical_url=k)
            for c, k in zip(cleaned, keys, strict=True)
        ],
    )
    policy = DedupePolicy(DEFAULT)
    timed(
        "dedupe decision",
        ms,
        n,
        lambda: [
            policy.decide(("s", k), h, m, c[2])
            for k, h, m, c in zip(keys, hashes, sigs, cleaned, strict=True)
        ],
    )
    writer = WarcWriter(tmp / "warc", max_bytes=1 << 30, tag="bench")
    (tmp / "warc").mkdir()
    timed(
        "WARC record",
        ms,
        n,
        lambda: [writer.write_response(u, 200, [("Content-Type", ct)], b) for u, b, ct in pages],
    )
    records = []
    fingerprint = DEFAULT.fingerprint()
    for (url, _, _), e, c, k, h, m, p in zip(
        pages, got, cleaned, keys, hashes, sigs, passages, strict=True
    ):
        item = PageItem(
            source_id="s",
            url=url,
            final_url=url,
            http_status=200,
            fetched_at="2026-12-01T00:00:00Z",
            title=e.title,
            content=c[0],
            headings=list(c[1]),
            word_count=c[2],
            canonical_url=k,
            content_hash=h,
            minhash=m,
            minhash_params=fingerprint,
            passages=p,
        )
        records.append(to_record(item))
    return ms, records


def sqlite_write(records: list[Any], tmp: Path) -> dict[str, float]:
    from knowledge_crawler.store import open_store

    path = tmp / "capacity.db"
    out: dict[str, float] = {}
    with open_store(f"sqlite:///{path}") as store:
        start = cpu_now()
        for i in range(0, len(records), BATCH):
            store.write(records[i : i + BATCH])
        out["write_ms"] = 1000 * (cpu_now() - start) / len(records)
        size = path.stat().st_size + _wal(path)
        store.write([_changed(r) for r in records])
        out["page_bytes"] = size / len(records)
        out["version_bytes"] = (path.stat().st_size + _wal(path) - size) / len(records)
    return out


def _wal(path: Path) -> int:
    wal = path.with_name(path.name + "-wal")
    return wal.stat().st_size if wal.exists() else 0


def _changed(record: Any) -> Any:
    import dataclasses

    from knowledge_crawler.transform.fingerprint import content_hash

    content = record.content + "\n\nA paragraph added since the last visit, with new words."
    return dataclasses.replace(record, content=content, content_hash=content_hash(content))


def postgres_write(records: list[Any]) -> dict[str, float]:
    """Client and server CPU per page of the batch writes, and bytes per page and version."""
    import psycopg

    from knowledge_crawler.store import Touch, open_store

    schema = f"kc_capacity_{secrets.token_hex(4)}"
    with psycopg.connect(POSTGRES_URL, autocommit=True) as admin:
        admin.execute(f"CREATE SCHEMA {schema}")
    url = f"{POSTGRES_URL}?options=-csearch_path%3D{schema}"
    out: dict[str, float] = {}
    size_sql = (
        "SELECT COALESCE(SUM(pg_total_relation_size(c.oid)), 0) FROM pg_class c "
        "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = %s AND c.relkind = 'r'"
    )
    try:
        with open_store(url) as store, psycopg.connect(POSTGRES_URL, autocommit=True) as probe:
            backend = store.query("SELECT pg_backend_pid() AS pid")[0]["pid"]
            client, server = cpu_now(), proc_cpu(backend)
            for i in range(0, len(records), BATCH):
                store.write(records[i : i + BATCH])
            out["write_ms"] = 1000 * (cpu_now() - client) / len(records)
            out["server_ms"] = 1000 * (proc_cpu(backend) - server) / len(records)
            probe.execute("VACUUM")  # the sizes of what is live, not of dead tuples
            [[size]] = probe.execute(size_sql, (schema,)).fetchall()
            out["page_bytes"] = int(size) / len(records)
            touches = [
                Touch(r.source_id, r.canonical_url, checked_at="2026-12-02T00:00:00Z")
                for r in records
            ]
            client, server = cpu_now(), proc_cpu(backend)
            t0 = time.perf_counter()
            for i in range(0, len(touches), BATCH):
                store.write(touches[i : i + BATCH])
            out["touch_rows_s"] = len(touches) / (time.perf_counter() - t0)
            out["touch_ms"] = (
                1000 * (cpu_now() - client + proc_cpu(backend) - server) / len(touches)
            )
            changed = [_changed(r) for r in records]
            t0 = time.perf_counter()
            for i in range(0, len(changed), BATCH):
                store.write(changed[i : i + BATCH])
            out["changed_rows_s"] = len(changed) / (time.perf_counter() - t0)
            probe.execute("VACUUM")
            [[after]] = probe.execute(size_sql, (schema,)).fetchall()
            out["version_bytes"] = (int(after) - int(size)) / len(records)
    finally:
        with psycopg.connect(POSTGRES_URL, autocommit=True) as admin:
            admin.execute(f"DROP SCHEMA {schema} CASCADE")
    return out


# ----------------------------------------------------------------------------- 3. Redis


def redis_bytes(records: list[Any], site_url: str) -> dict[str, float]:
    import redis
    from scrapy_redis.queue import PriorityQueue

    from knowledge_crawler.crawl.dedupe_log import DedupeEntry
    from knowledge_crawler.crawl.frontier import page_fingerprint
    from knowledge_crawler.sources import Source
    from knowledge_crawler.spiders.knowledge import KnowledgeSpider

    server = redis.Redis.from_url(REDIS_URL)
    prefix = f"kc_capacity_{secrets.token_hex(4)}"
    spider = KnowledgeSpider(seeds=site_url)
    spider.crawler = SimpleNamespace(stats=SimpleNamespace(inc_value=lambda *a, **k: None))
    spider.shared_frontier = True
    source: Source = next(iter(spider.sources.values()))
    out: dict[str, float] = {}
    n = len(records)
    try:
        queue = PriorityQueue(server, spider, f"{prefix}:requests")
        for i, rec in enumerate(records):
            request = spider.request_for(source, rec.url, depth=1 + i % 5)
            if request is None:
                request = spider.request_for(source, f"{rec.url}?variant={i}", depth=1)
            queue.push(request)
        out["queued_request"] = _usage(server, f"{prefix}:requests") / n
        fingerprints = [
            page_fingerprint("s", r.canonical_url + str(i)) for i, r in enumerate(records)
        ]
        server.sadd(f"{prefix}:dupefilter", *fingerprints)
        out["seen_url"] = _usage(server, f"{prefix}:dupefilter") / n
        pipe = server.pipeline(transaction=False)
        for i, rec in enumerate(records):
            entry = DedupeEntry(
                rec.key, rec.content_hash, rec.minhash, rec.word_count, True, "host:1:ab", i + 1
            )
            pipe.xadd(f"{prefix}:dedupe", entry.fields())
        pipe.execute()
        out["dedupe_entry"] = _usage(server, f"{prefix}:dedupe") / n
    finally:
        keys = list(server.scan_iter(match=f"{prefix}:*"))
        if keys:
            server.delete(*keys)
        server.close()
    return out


def _usage(server: Any, key: str) -> int:
    return int(server.memory_usage(key, samples=0))


# ----------------------------------------------------------------------------- 5. memory


def process_memory(records: list[Any], copies: int) -> dict[str, float]:
    """Bytes a crawl process holds per stored page: known pages, dedupe state."""
    import numpy as np

    from knowledge_crawler.crawl.dedupe_scratch import ScratchDedupeState
    from knowledge_crawler.store import KnownPage
    from knowledge_crawler.sync.dedupe import DedupePolicy
    from knowledge_crawler.sync.dedupe import KnownPage as DedupeRow
    from knowledge_crawler.transform.minhash import DEFAULT

    # Enough distinct pages for the per-page figure to settle: the records, copied, each
    # copy with a URL, hash and signature of its own (as distinct pages have).
    rng = np.random.default_rng(1)
    header = records[0].minhash[:13]  # LeanMinHash bytes: seed, -num_perm, scheme; uint32s
    perms = (len(records[0].minhash) - 13) // 4
    rows = [
        (
            f"{r.canonical_url}/{c}",
            f"{c:08x}{r.content_hash[8:]}",
            header + rng.integers(0, 2**32, size=perms, dtype=np.uint32).astype("<u4").tobytes(),
            r,
        )
        for c in range(copies)
        for r in records
    ]
    out: dict[str, float] = {}
    gc.collect()
    tracemalloc.start()
    known = {
        # every string its own object, as the rows of a database driver are
        ("s", url): KnownPage(
            "s",
            url,
            f"{url}?",
            f'"{digest[:16]}"',
            f"Sun, 06 Oct 2024 04:{len(url) % 60:02d}:58 GMT",
            digest,
            2,
            86400,
            f"2026-12-01T00:00:{len(url) % 60:02d}Z",
            f"2026-12-02T00:00:{len(url) % 60:02d}Z",
            "active",
            None,
            None,
        )
        for url, digest, _, _ in rows
    }
    out["known_page"] = tracemalloc.get_traced_memory()[0] / len(rows)
    tracemalloc.stop()
    del known
    dedupe_rows = [
        DedupeRow(("s", url), digest, r.word_count, None, None, None, sig, r.minhash_params)
        for url, digest, sig, r in rows
    ]
    gc.collect()
    tracemalloc.start()
    policy = DedupePolicy(DEFAULT)
    policy.restore(dedupe_rows)
    out["dedupe_page"] = tracemalloc.get_traced_memory()[0] / len(rows)
    tracemalloc.stop()
    del policy
    # past KC_DEDUPE_MEMORY_PAGES the same state is kept in a temporary file instead
    scratch = ScratchDedupeState()
    DedupePolicy(DEFAULT, state=scratch).restore(dedupe_rows)
    out["dedupe_file_page"] = scratch.file_bytes() / len(rows)
    scratch.close()
    out["pages_measured"] = len(rows)
    return out


# ----------------------------------------------------------------------------- the model


def model(m: dict[str, Any], corpus: int, change: float, cores: int, gib: float) -> dict[str, Any]:
    day = 86400.0
    checks = corpus / day  # pages checked per second, every page once a day
    crawl = m["crawl"]
    cpu_200 = crawl["full"]["cpu_ms"]  # a changed page: fetched, parsed, every stage, stored
    cpu_304 = crawl["revalidate"]["cpu_ms"]  # an unchanged page: conditional GET, 304, touch
    pg = m["postgres"]
    server_200 = pg["server_ms"]
    server_304 = pg["touch_ms"]
    crawler_cores = checks * (change * cpu_200 + (1 - change) * cpu_304) / 1000
    db_cores = checks * (change * server_200 + (1 - change) * server_304) / 1000
    machine_ram = gib * 2**30
    # the dedupe state stays in memory up to KC_DEDUPE_MEMORY_PAGES pages, then in a file
    per_process_page = m["memory"]["known_page"]
    dedupe_memory = min(corpus, DEDUPE_MEMORY_PAGES) * m["memory"]["dedupe_page"]
    redis = m["redis"]
    bytes_200 = crawl["full"]["bytes"]
    bytes_304 = crawl["revalidate"]["bytes"]
    return {
        "checks_s": checks,
        "changed_s": checks * change,
        "crawler_cores": crawler_cores,
        "crawler_machines": crawler_cores / cores,
        "db_cores": db_cores,
        # a process's pages/s in the day's mix: its reactor thread is its limit (one core)
        "process_pps": 1
        / (
            change * crawl["full"]["wall"] / crawl["full"]["pages"]
            + (1 - change) * crawl["revalidate"]["wall"] / crawl["revalidate"]["pages"]
        ),
        "bandwidth_mbit": checks * (change * bytes_200 + (1 - change) * bytes_304) * 8 / 1e6,
        "first_crawl_days": corpus * cpu_200 / 1000 / (cores * day),
        "redis_seen": corpus * redis["seen_url"],
        "redis_queue": corpus * redis["queued_request"],
        "redis_log": corpus * change * redis["dedupe_entry"],
        "db_bytes": corpus * pg["page_bytes"],
        "db_growth_day": corpus * change * pg["version_bytes"],
        "process_bytes": corpus * per_process_page + dedupe_memory,
        "process_pages_max": (machine_ram - dedupe_memory) / per_process_page,
        "dedupe_file_bytes": corpus * m["memory"]["dedupe_file_page"],
        "write_rows_s": checks,
        "touch_rows_s": pg["touch_rows_s"],
        "changed_rows_s": pg["changed_rows_s"],
        "db_write_share": checks * (1 - change) / pg["touch_rows_s"]
        + checks * change / pg["changed_rows_s"],
    }


def gib(n: float) -> str:
    return f"{n / 2**30:,.1f} GiB"


def table(header: tuple[str, ...], rows: list[tuple[Any, ...]]) -> list[str]:
    align = ["---"] + ["---:"] * (len(header) - 1)
    out = ["| " + " | ".join(header) + " |", "| " + " | ".join(align) + " |"]
    return out + ["| " + " | ".join(str(v) for v in row) + " |" for row in rows] + [""]


CRAWLS = {
    "baseline": "no pipelines (fetch, parse, follow links)",
    "full": "every pipeline, fresh SQLite database",
    "revalidate": "unchanged site again (conditional GET, 304s)",
}


def render(m: dict[str, Any], x: dict[str, Any], args: Any, cmd: str) -> str:
    crawl, pg, sq, rd, mem = m["crawl"], m["postgres"], m["sqlite"], m["redis"], m["memory"]
    corpus, change, cores = args.corpus, args.change_rate, args.machine_cores
    ram = args.machine_gib * 2**30
    machine = f"{args.machine_gib:g} GiB"
    per_page = mem["known_page"]
    lines = [
        "# Capacity model: a large corpus refreshed daily",
        "",
        f"Generated by `{cmd}`; do not edit by hand. Every figure below was measured by that "
        "command on this machine in one run (loopback test site, local PostgreSQL and "
        "Redis), then multiplied out: the multiplication is the model, the measurements are "
        "the evidence. Reproduce with the same command.",
        "",
        f"- Date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; {os.cpu_count()} CPUs; "
        f"test site of {args.pages} articles; crawl CPU and peak RSS via {meter_name()}",
        "",
        "## Measured per-page costs",
        "",
        "### Whole crawl (`scrapy crawl knowledge`, one process)",
        "",
        f"Less the start-up and shut-down of a crawl (a crawl of one page: "
        f"{crawl['startup']['cpu']:.1f} s CPU, {crawl['startup']['wall']:.1f} s wall).",
        "",
    ]
    lines += table(
        ("crawl", "pages", "pages/s", "CPU ms/page", "bytes/response", "peak RSS MiB"),
        [
            (
                name,
                f"{c['pages']:,.0f}",
                f"{c['pages'] / c['wall']:.0f}",
                f"{c['cpu_ms']:.2f}",
                f"{c['bytes']:,.0f}",
                f"{c['rss_mib']:.0f}",
            )
            for key, name in CRAWLS.items()
            for c in [crawl[key]]
        ],
    )
    lines += ["### Each stage, in one process, on the site's article pages", ""]
    stage_rows = [(name, f"{value:.3f}") for name, value in m["stages"].items()]
    stage_rows += [
        (f"store write, SQLite (batches of {BATCH}: pages, passages, FTS5)", sq["write_ms"]),
        (f"store write, PostgreSQL client (batches of {BATCH}, COPY)", pg["write_ms"]),
        ("store write, PostgreSQL server (a tsvector per passage)", pg["server_ms"]),
        ("a 304's touch, PostgreSQL client + server", pg["touch_ms"]),
    ]
    lines += table(
        ("stage", "CPU ms/page"),
        [(n, v if isinstance(v, str) else f"{v:.3f}") for n, v in stage_rows],
    )
    lines += ["### Memory and storage", ""]
    lines += table(
        ("what", "bytes"),
        [
            (n, f"{v:,.0f}")
            for n, v in [
                (
                    "Redis: a queued request (scrapy-redis priority queue, pickled)",
                    rd["queued_request"],
                ),
                ("Redis: a seen page (dupefilter fingerprint)", rd["seen_url"]),
                ("Redis: a dedupe log entry (a page judged)", rd["dedupe_entry"]),
                ("crawl process: a known page (validators, schedule)", mem["known_page"]),
                (
                    "crawl process: a page of dedupe state (exact map, LSH, ranks), "
                    f"up to KC_DEDUPE_MEMORY_PAGES ({DEDUPE_MEMORY_PAGES:,})",
                    mem["dedupe_page"],
                ),
                (
                    "temporary file: a page of dedupe state past KC_DEDUPE_MEMORY_PAGES",
                    mem["dedupe_file_page"],
                ),
                ("SQLite: a page with its passages and FTS5 index", sq["page_bytes"]),
                (
                    "SQLite: growth per changed page (its version, new passages)",
                    sq["version_bytes"],
                ),
                ("PostgreSQL: a page (tables, indexes, TOAST, tsvectors)", pg["page_bytes"]),
                (
                    "PostgreSQL: growth per changed page (its version, new passages)",
                    pg["version_bytes"],
                ),
            ]
        ],
    )
    lines += [
        f"PostgreSQL write rates (one writer, batches of {BATCH}): {pg['touch_rows_s']:,.0f} "
        f"touches/s, {pg['changed_rows_s']:,.0f} changed pages/s.",
        "",
        f"## {corpus:,} pages, each checked once a day, {change:.0%} changed",
        "",
        f"Every page is revalidated once in 24 h: {x['checks_s']:,.0f} checks/s around the "
        f"clock, {x['changed_s']:,.0f}/s of them changed pages (a 200 through every stage), "
        f"the rest 304s (a touch). Machines of this kind: {cores} cores, {machine}.",
        "",
    ]
    units = lambda v: f"{v / ram:.1f}"  # noqa: E731
    lines += table(
        ("component", "demand", "one unit", "units"),
        [
            (
                "crawler CPU",
                f"{x['crawler_cores']:,.1f} cores",
                f"{cores} cores",
                f"{x['crawler_machines']:,.1f} machines",
            ),
            (
                "crawl processes (a reactor thread, about a core, each)",
                f"{x['checks_s']:,.0f} checks/s",
                f"{x['process_pps']:,.0f} checks/s",
                f"{x['checks_s'] / x['process_pps']:,.1f} processes",
            ),
            (
                "network (at the test site's page size)",
                f"{x['bandwidth_mbit']:,.0f} Mbit/s",
                "",
                "",
            ),
            (
                "Redis: dupefilter of a crawl of every page",
                gib(x["redis_seen"]),
                machine,
                units(x["redis_seen"]),
            ),
            (
                "Redis: queue, every page queued at once",
                gib(x["redis_queue"]),
                machine,
                units(x["redis_queue"]),
            ),
            (
                "Redis: dedupe log of a day's changed pages",
                gib(x["redis_log"]),
                machine,
                units(x["redis_log"]),
            ),
            (
                "memory of **each** crawl process",
                gib(x["process_bytes"]),
                machine,
                units(x["process_bytes"]),
            ),
            (
                "PostgreSQL writes (one primary)",
                f"{x['write_rows_s']:,.0f} rows/s",
                "one writer",
                f"{x['db_write_share']:.2f}",
            ),
            (
                "PostgreSQL server CPU",
                f"{x['db_cores']:,.1f} cores",
                f"{cores} cores",
                f"{x['db_cores'] / cores:.1f}",
            ),
            (
                "PostgreSQL storage",
                gib(x["db_bytes"]),
                f"+{gib(x['db_growth_day'])} a day of versions",
                "",
            ),
        ],
    )
    redis_verdict = (
        f", more than one {machine} machine holds: a refresh crawl of every page must be split "
        "(by source), each part with keys of its own"
        if x["redis_seen"] > ram
        else f", within one {machine} machine"
    )
    lines += [
        f"The first crawl of the corpus (every page a 200 through every stage) takes "
        f"{x['first_crawl_days']:,.0f} machine-days of crawler CPU.",
        "",
        "## What saturates first",
        "",
        f"1. **The memory of each crawl process.** A process loads the known pages of its "
        f"sources (in a shared crawl every process holds a full copy): {per_page:,.0f} bytes "
        f"a page, so a {machine} machine holds at most "
        f"{x['process_pages_max'] / 1e6:,.1f} million pages, and {corpus:,} pages need "
        f"{gib(x['process_bytes'])} in every process. The dedupe state is not part of it "
        f"past its first {DEDUPE_MEMORY_PAGES:,} pages (KC_DEDUPE_MEMORY_PAGES): it moves to "
        f"a temporary SQLite file, {mem['dedupe_file_page']:,.0f} bytes a page, "
        f"{gib(x['dedupe_file_bytes'])} of disk for the corpus. More processes do not help: "
        "this is the first limit, long before CPU. Beyond it the corpus must be split into "
        "crawls of their own (by source: duplicates are judged within a crawl), each under "
        "that size; or the known pages streamed from the database as they come due.",
        f"2. **Crawler CPU** scales out: {x['crawler_machines']:,.1f} machines of {cores} cores "
        f"at full use for the daily refresh, most of it for the {1 - change:.0%} of checks "
        f"that are 304s ({crawl['revalidate']['cpu_ms']:.2f} ms each against "
        f"{crawl['full']['cpu_ms']:.2f} ms for a changed page).",
        f"3. **Redis**: the dupefilter of a crawl that schedules every page needs "
        f"{gib(x['redis_seen'])}{redis_verdict}; a queue holding every request at once "
        f"would need {gib(x['redis_queue'])} (scrapy-redis pickles each request), so "
        "requests must enter the queue as they come due, not all at the start.",
        f"4. **PostgreSQL** takes {x['write_rows_s']:,.0f} rows/s, {x['db_write_share']:.2f} "
        f"of what one writer measured here; it stores {gib(x['db_bytes'])} and grows "
        f"{gib(x['db_growth_day'])} a day while versions are kept.",
        "",
        "What the model assumes and the measurements do not show: pages like the test "
        f"site's (about {crawl['full']['bytes'] / 1024:.0f} KB of HTML; real pages are often "
        "larger, which moves bandwidth and extraction CPU up, not the other figures); the "
        "same change rate every day; crawler CPU as measured here, with the test site on "
        "the same machine; one PostgreSQL writer measured in one process.",
        "",
    ]
    return "\n".join(lines)


def main() -> int:
    ap = doc_parser(__doc__)
    ap.add_argument("--quick", action="store_true", help="300 articles instead of 2000")
    ap.add_argument("--pages", type=int, help="test site articles (overrides --quick)")
    ap.add_argument("--corpus", type=int, default=100_000_000, help="pages in the corpus")
    ap.add_argument("--change-rate", type=float, default=0.05, help="share changed a day")
    ap.add_argument("--machine-cores", type=int, default=2, help="cores of a machine")
    ap.add_argument("--machine-gib", type=float, default=24.0, help="memory of a machine (GiB)")
    ap.add_argument("--write", action="store_true", help="also write docs/scaling.md")
    args = ap.parse_args()
    args.pages = args.pages or (300 if args.quick else 2000)

    import psycopg
    import redis

    try:
        psycopg.connect(POSTGRES_URL, connect_timeout=3).close()
        redis.Redis.from_url(REDIS_URL, socket_connect_timeout=3).ping()
    except (psycopg.Error, redis.RedisError) as exc:
        sys.exit(f"bench_capacity: needs PostgreSQL and Redis: {exc}")

    from knowledge_crawler.testsite import TestSite

    measured: dict[str, Any] = {}
    tmp = Path(tempfile.mkdtemp(prefix="kc-bench-capacity-"))
    try:
        with TestSite(pages=args.pages, warm=True) as site:
            pid = site_pid(site)
            if pid:
                wait_warm(pid)
            measured["crawl"] = crawls(site, pid, tmp)
            pages = fetch_articles(site, min(args.pages, 1000))
            measured["stages"], records = stages(pages, tmp)
            measured["sqlite"] = sqlite_write(records, tmp)
            measured["postgres"] = postgres_write(records)
            measured["redis"] = redis_bytes(records, site.url)
            measured["memory"] = process_memory(records, copies=max(1, 20_000 // len(records)))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    extrapolated = model(
        measured, args.corpus, args.change_rate, args.machine_cores, args.machine_gib
    )
    cmd = ".venv/bin/python bench/bench_capacity.py" + (" --quick" if args.quick else "")
    text = render(measured, extrapolated, args, cmd)
    print(text)
    if args.write:
        DOC.write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
