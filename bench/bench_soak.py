"""Soak: ``knowledge-crawler schedule`` refreshing the test site for hundreds of cycles.

    .venv/bin/python bench/bench_soak.py [--quick] [--cycles N] [--every SECONDS]

Starts the loopback test site (30 articles) and a seeds file with two sources: ``site``,
the whole site (links followed), and ``js``, five of its JavaScript pages rendered in
Chromium (``render = "playwright"``). Both are crawled once (``schedule --once --mode
crawl``), then the real scheduler runs as it would in production::

    knowledge-crawler schedule SEEDS --every 2s --max-parallel 2 --db sqlite:///TMP/soak.db
        -s DOWNLOAD_DELAY=0 -s AUTOTHROTTLE_ENABLED=False -s LOG_LEVEL=WARNING

Each cycle is one refresh crawl of one source (a new ``scrapy crawl`` subprocess, its stage
workers and, for ``js``, its Chromium). Meanwhile the benchmark edits one of the five
articles behind the JavaScript pages every second, so each refresh of ``js`` finds changed
pages and renders them again (an unchanged page is revalidated with a plain conditional
GET, which starts no browser).

Every second it reads, from ``/proc``: the scheduler's resident set size and open file
descriptors, the processes below it, and the Chromium processes on the machine; and from
the database, how many runs have ended and how. It stops after N runs (default 300,
``--quick`` 30), stops the scheduler with SIGTERM, and looks for what was left behind.

Reported: each figure at the start and at the end of the soak (the median of the samples
taken while no crawl was running, over the first and the last tenth of the cycles), its
maximum, and its Theil-Sen slope per 100 cycles; the runs by outcome; the processes left
after the scheduler ended. Flat means: no slope in the scheduler's memory or descriptors,
no process left between cycles, no Chromium left at the end.
"""

from __future__ import annotations

import os
import shutil
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from _common import doc_parser, process_tree, rss_kib  # noqa: E402

JS_PAGES = 5
SITE_ARTICLES = 30
CRAWL_SETTINGS = (
    "DOWNLOAD_DELAY=0",
    "AUTOTHROTTLE_ENABLED=False",
    "LOG_LEVEL=WARNING",
    "KC_PROGRESS_SECONDS=0",
)


def seeds_file(path: Path, site_url: str) -> Path:
    js = ", ".join(f'"{site_url}js/inline/{i}"' for i in range(JS_PAGES))
    path.write_text(
        "[[source]]\n"
        'id = "site"\n'
        f'start_urls = ["{site_url}"]\n'
        'allowed_domains = ["localhost"]\n'
        'min_interval = "1s"\nmax_interval = "2s"\n'
        "\n"
        "[[source]]\n"
        'id = "js"\n'
        f"start_urls = [{js}]\n"
        'allowed_domains = ["localhost"]\n'
        "follow_links = false\n"
        'render = "playwright"\n'
        'wait_for = "load"\n'
        'min_interval = "1s"\nmax_interval = "2s"\n',
        encoding="utf-8",
    )
    return path


def open_fds(pid: int) -> int:
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return 0


def program(pid: int) -> str:
    try:
        argv = (Path(f"/proc/{pid}") / "cmdline").read_bytes().split(b"\0")
    except OSError:
        return ""
    return " ".join(a.decode(errors="replace") for a in argv[:3] if a)[:120]


def soak_pids(mark: str) -> tuple[set[int], set[int]]:
    """The processes on the machine started by the soak (they inherit ``KC_SOAK_MARK``):
    all of them, and those whose program is Chromium (browser, renderers, helpers)."""
    needle = f"KC_SOAK_MARK={mark}".encode()
    marked, chromium = set(), set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if needle not in (entry / "environ").read_bytes().split(b"\0"):
                continue
            argv0 = (entry / "cmdline").read_bytes().split(b"\0", 1)[0]
        except OSError:
            continue
        marked.add(int(entry.name))
        if b"chrom" in os.path.basename(argv0):
            chromium.add(int(entry.name))
    return marked, chromium


def runs(db: Path) -> dict[str, int]:
    """Runs that have ended, by outcome."""
    if not db.exists():
        return {}
    try:
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=1)
        try:
            rows = conn.execute(
                "SELECT outcome, COUNT(*) FROM crawl_runs WHERE outcome != 'running' "
                "GROUP BY outcome"
            ).fetchall()
        finally:
            conn.close()
    except sqlite3.Error:
        return {}
    return {outcome: n for outcome, n in rows}


def tracebacks(text: str) -> Counter[str]:
    """The exception line ending each traceback in ``text``, counted."""
    found: Counter[str] = Counter()
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if not line.startswith("Traceback (most recent call last)"):
            continue
        for after in lines[i + 1 :]:
            if after and not after.startswith((" ", "\t", "Traceback")):
                found[after.strip()[:160]] += 1
                break
    return found


def theil_sen_per_100(points: list[tuple[float, float]]) -> float:
    slopes = sorted(
        (y2 - y1) / (x2 - x1)
        for i, (x1, y1) in enumerate(points)
        for x2, y2 in points[i + 1 :]
        if x2 != x1
    )
    return statistics.median(slopes) * 100 if slopes else 0.0


def knowledge_crawler_exe() -> str:
    exe = Path(sys.executable).with_name("knowledge-crawler")
    return str(exe) if exe.exists() else "knowledge-crawler"


def main() -> int:
    ap = doc_parser(__doc__)
    ap.add_argument("--quick", action="store_true", help="30 runs instead of 300")
    ap.add_argument("--cycles", type=int, help="runs to soak for (overrides --quick)")
    ap.add_argument("--every", type=float, default=2.0, help="seconds between runs of a source")
    ap.add_argument("--keep", action="store_true", help="keep the database and the logs")
    args = ap.parse_args()
    cycles = args.cycles or (30 if args.quick else 300)

    from knowledge_crawler.crawl.chromium import find_chromium
    from knowledge_crawler.testsite import TestSite

    if find_chromium() is None:
        sys.exit("bench_soak: no Chromium on this machine (make install puts it in place)")
    tmp = Path(tempfile.mkdtemp(prefix="kc-bench-soak-"))
    db = tmp / "soak.db"
    mark = uuid.uuid4().hex
    env = {**os.environ, "KC_SOAK_MARK": mark}
    samples: list[dict[str, Any]] = []
    outside: set[str] = set()  # the programs of soak processes seen outside the tree
    left: dict[str, Any] = {}
    edits = 0
    started = time.monotonic()
    try:
        with TestSite(pages=SITE_ARTICLES) as site:
            seeds = seeds_file(tmp / "soak.toml", site.url)
            base = [knowledge_crawler_exe(), "schedule", str(seeds), "--db", f"sqlite:///{db}"]
            for setting in CRAWL_SETTINGS:
                base += ["-s", setting]
            first = subprocess.run(
                [*base, "--once", "--mode", "crawl"],
                cwd=REPO,
                env=env,
                capture_output=True,
                text=True,
                check=False,
            )
            if first.returncode != 0:
                sys.exit(f"bench_soak: the first crawls failed:\n{first.stderr[-3000:]}")
            done_before = sum(runs(db).values())

            stop = threading.Event()

            def edit() -> None:
                nonlocal edits
                kinds = ("text", "price", "stock")
                while not stop.wait(1.0):
                    site.mutate(edits % JS_PAGES, kinds[(edits // JS_PAGES) % len(kinds)])
                    edits += 1

            editor = threading.Thread(target=edit, daemon=True)
            editor.start()
            logs = str(tmp / "logs")  # each crawl's output
            log = tmp / "schedule.log"  # a file: a pipe nobody reads would stop the scheduler
            with log.open("w") as log_file:
                scheduler = subprocess.Popen(
                    [
                        *base,
                        "--every",
                        f"{args.every:g}s",
                        "--max-parallel",
                        "2",
                        "--log-dir",
                        logs,
                    ],
                    cwd=REPO,
                    env=env,
                    stdout=subprocess.DEVNULL,
                    stderr=log_file,
                    start_new_session=True,
                )
            try:
                while scheduler.poll() is None:
                    ended = runs(db)
                    done = sum(ended.values()) - done_before
                    marked, chromium = soak_pids(mark)
                    tree = set(process_tree(scheduler.pid))
                    # a process that ended between the two reads is not outside; Chromium's
                    # crash reporter leaves its parent by design (and ends with the browser)
                    away = {p for p in marked - tree if "crashpad" not in program(p)}
                    away = {p for p in away if Path(f"/proc/{p}").exists()}
                    samples.append(
                        {
                            "runs": done,
                            "rss": rss_kib(scheduler.pid),
                            "fds": open_fds(scheduler.pid),
                            "below": len(tree) - 1,
                            "chromium": len(chromium),
                            "outside": len(away),
                        }
                    )
                    outside.update(filter(None, (program(pid) for pid in away)))
                    if done >= cycles:
                        break
                    if len(samples) % 60 == 0:
                        print(f"bench_soak: {done}/{cycles} runs", file=sys.stderr, flush=True)
                    time.sleep(1.0)
            finally:
                stop.set()
                if scheduler.poll() is None:
                    scheduler.send_signal(signal.SIGTERM)
                try:
                    scheduler.wait(timeout=120)
                except subprocess.TimeoutExpired:
                    os.killpg(scheduler.pid, signal.SIGKILL)
                    scheduler.wait()
            time.sleep(2.0)  # what a stopped crawl still had to reap
            marked, chromium = soak_pids(mark)
            output = log.read_text(errors="replace") + "".join(
                path.read_text(errors="replace") for path in (tmp / "logs").glob("*.log")
            )
            left = {
                "exit": scheduler.returncode,
                "processes": sorted(marked),
                "chromium": sorted(chromium),
                "tracebacks": tracebacks(output),
                "outcomes": runs(db),
            }
    finally:
        if args.keep:
            print(f"bench_soak: kept {tmp}", file=sys.stderr)
        else:
            shutil.rmtree(tmp, ignore_errors=True)

    report(samples, left, cycles, edits, time.monotonic() - started, args.every)
    if outside:
        print(f"- Programs of soak processes seen outside the scheduler's tree: {sorted(outside)}")
    return 0


def report(
    samples: list[dict[str, Any]],
    left: dict[str, Any],
    cycles: int,
    edits: int,
    wall: float,
    every: float,
) -> None:
    # from the end of the first run: before it, the scheduler is still importing
    samples = [s for s in samples if s["runs"] >= 1]
    idle = [s for s in samples if s["below"] == 0]
    done = samples[-1]["runs"] if samples else 0
    tenth = max(1, done // 10)

    def med(rows: list[dict[str, Any]], key: str) -> float:
        return statistics.median(r[key] for r in rows) if rows else float("nan")

    print(
        f"Soak: `knowledge-crawler schedule` (--every {every:g}s, --max-parallel 2) refreshing "
        f"the test site's two sources (the whole {SITE_ARTICLES}-article site, and {JS_PAGES} "
        f"JavaScript pages rendered in Chromium) for {done} runs in {wall / 60:.1f} min, "
        f"with {edits} article edits meanwhile; {len(samples)} samples, {len(idle)} of "
        "them between runs.\n"
    )
    print("| figure | first tenth of runs | last tenth of runs | max | slope per 100 runs |")
    print("|---|---:|---:|---:|---:|")
    rows = (
        ("scheduler RSS MiB", "rss", 1 / 1024, samples),
        ("scheduler open file descriptors", "fds", 1, samples),
        ("processes below the scheduler, between runs", "below", 1, idle),
        ("Chromium processes, between runs", "chromium", 1, idle),
        ("processes below the scheduler, during runs", "below", 1, samples),
        ("Chromium processes, during runs", "chromium", 1, samples),
        ("processes of the soak outside the scheduler's tree", "outside", 1, samples),
    )
    for name, key, scale, rows_of in rows:
        first = [s for s in rows_of if s["runs"] <= tenth]  # runs >= 1: see above
        last = [s for s in rows_of if s["runs"] >= done - tenth]
        top = max((s[key] for s in rows_of), default=0) * scale
        thinned = rows_of[:: max(1, len(rows_of) // 400)]  # the slope's pairs grow as n²
        slope = theil_sen_per_100([(s["runs"], s[key] * scale) for s in thinned])
        print(
            f"| {name} | {med(first, key) * scale:.1f} | {med(last, key) * scale:.1f} "
            f"| {top:.1f} | {slope:+.2f} |"
        )
    outcomes = ", ".join(f"{k} {v}" for k, v in sorted(left.get("outcomes", {}).items()))
    print(
        f"\n- Runs by outcome (the two first crawls included): {outcomes}.\n"
        f"- After SIGTERM the scheduler exited {left.get('exit')}; processes of the soak "
        f"left on the machine: {len(left.get('processes', []))}, of them Chromium: "
        f"{len(left.get('chromium', []))}.\n"
        f"- Tracebacks in the output of the scheduler and its crawls: "
        f"{sum(left.get('tracebacks', Counter()).values())}."
    )
    for line, n in left.get("tracebacks", Counter()).most_common():
        print(f"  - {n} x `{line}`")
    if done < cycles:
        print(f"- The soak ended early: {done} of {cycles} runs (the scheduler exited).")


if __name__ == "__main__":
    sys.exit(main())
