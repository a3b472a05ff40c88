"""Profile: where the CPU of a full ``knowledge`` crawl goes, thread by thread.

    .venv/bin/python bench/profile_crawl.py [--quick] [--pages N] [--py-spy] [--top K]

Starts the loopback test site (``TestSite(pages=N, warm=True)``, default N=5000, ``--quick``
500), waits until its pre-rendering is done, then runs the crawl that bench_crawl.py calls
(b): ``scrapy crawl knowledge`` with every pipeline into a fresh SQLite database, 16
requests at once, no delay. While it runs, the CPU time of each thread of the crawl
process is read from ``/proc`` every 0.2 s; the stage workers' CPU time comes from the
run's own counter (``kc/stages/worker_cpu_ms``), the test site's from ``/proc``.

``--py-spy`` runs the crawl under ``py-spy record --threads --subprocesses`` (100 samples
a second; ``pip install py-spy``) and adds, for the reactor thread, the crawl process's
other threads and the stage worker, the ``--top`` functions with the most samples of
their own ("self"), then the ``--top`` functions of the project that cost the most with
what they call ("total"). Sampling slows the crawl down a
little; the per-thread CPU table is from the same run. Prints markdown.
"""

from __future__ import annotations

import collections
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from _common import (  # noqa: E402
    cpu_seconds,
    crawl_argv,
    doc_parser,
    run_sampled,
    site_pid,
    wait_warm,
)

TICK = os.sysconf("SC_CLK_TCK")
#: path prefixes left out of function names in the report
_PREFIX = re.compile(
    r" \((?:/[^ ]*?site-packages/|" + re.escape(str(REPO)) + r"/|/[^ ]*?/python3\.\d+/)"
)


def thread_cpu(pid: int) -> dict[int, float]:
    """CPU seconds (user + system) of each thread of ``pid``, by thread id."""
    out: dict[int, float] = {}
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tids:
        try:
            fields = Path(f"/proc/{pid}/task/{tid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        out[int(tid)] = (int(fields[11]) + int(fields[12])) / TICK
    return out


def crawl_pid(proc: subprocess.Popen[str], spied: bool) -> int:
    """The crawl's pid: the process itself, or under py-spy its child running scrapy."""
    if not spied:
        return proc.pid
    for _ in range(200):
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                stat = (entry / "stat").read_text()
                cmdline = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == proc.pid and b"crawl" in cmdline:
                return int(entry.name)
        time.sleep(0.05)
    sys.exit("profile_crawl: the crawl process under py-spy was not found")


def run(site_url: str, site: int, db: Path, raw: Path | None) -> dict[str, Any]:
    argv = crawl_argv(site_url, db)
    if raw is not None:
        spy = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
        if not os.access(spy, os.X_OK):
            sys.exit("profile_crawl: --py-spy needs py-spy (pip install py-spy)")
        argv = [spy, "record", "-r", "100", "--threads", "--subprocesses", "--format", "raw",
                "-o", str(raw), "--", *argv]  # fmt: skip
    threads: dict[int, float] = {}
    pids: list[int] = []

    def sample(proc: subprocess.Popen[str]) -> None:
        if not pids:
            pids.append(crawl_pid(proc, raw is not None))
        threads.update(thread_cpu(pids[0]))

    site_cpu0 = cpu_seconds(site)
    wall, _ = run_sampled(argv, sample, every=0.2, prog="profile_crawl")
    pid = pids[0] if pids else 0
    conn = sqlite3.connect(db)
    try:
        counters = json.loads(
            conn.execute("SELECT counters FROM crawl_runs ORDER BY id DESC LIMIT 1").fetchone()[0]
        )
    finally:
        conn.close()
    return {
        "wall": wall,
        "pid": pid,
        "threads": threads,
        "site_cpu": cpu_seconds(site) - site_cpu0,
        "counters": counters,
    }


def hot_spots(raw: Path, top: int) -> dict[str, tuple[int, list[tuple[str, int, int]]]]:
    """py-spy's raw stacks summed by part (reactor thread, other threads of the crawl
    process, stage workers): each part's samples and its ``top`` functions as (name,
    self samples, total samples), by total."""
    own: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    total: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    samples: collections.Counter[str] = collections.Counter()
    for line in raw.read_text(encoding="utf-8", errors="replace").splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        frames = stack.split(";")
        procs = [f for f in frames if f.startswith("process ")]
        rest = [f for f in frames if not f.startswith(("process ", "thread "))]
        thread = next((f for f in frames if f.startswith("thread ")), "")
        if len(procs) > 1:
            part = "stage worker (and its forkserver)"
        elif "MainThread" in thread:
            part = "reactor thread (MainThread)"
        else:
            part = "other threads of the crawl process"
        n = int(count)
        samples[part] += n
        names = [_PREFIX.sub(" (", f) for f in rest]
        if names:
            own[part][names[-1]] += n
        for name in set(names):
            total[part][name] += n
    out: dict[str, tuple[int, list[tuple[str, int, int]]]] = {}
    for part in sorted(samples, key=samples.__getitem__, reverse=True):
        hot = [name for name, _ in own[part].most_common(top)]  # where the samples land
        ours = [  # and the project's own functions, by what they cost with their callees
            name
            for name, _ in total[part].most_common()
            if "(knowledge_crawler/" in name and name not in hot
        ][:top]
        out[part] = (
            samples[part],
            [(name[:120], own[part][name], total[part][name]) for name in hot + ours],
        )
    return out


def main() -> int:
    ap = doc_parser(__doc__)
    ap.add_argument("--quick", action="store_true", help="500 articles instead of 5000")
    ap.add_argument("--pages", type=int, help="test site articles (overrides --quick)")
    ap.add_argument("--py-spy", action="store_true", help="sample the crawl with py-spy")
    ap.add_argument("--top", type=int, default=25, help="functions listed per part (--py-spy)")
    args = ap.parse_args()
    n = args.pages or (500 if args.quick else 5000)

    from knowledge_crawler.testsite import TestSite

    tmp = Path(tempfile.mkdtemp(prefix="kc-profile-"))
    raw = tmp / "py-spy.txt" if args.py_spy else None
    try:
        with TestSite(pages=n, warm=True) as site:
            pid = site_pid(site)
            warm_s = wait_warm(pid) if pid else 0.0
            r = run(site.url, pid, tmp / "profile.db", raw)
        spots = hot_spots(raw, args.top) if raw is not None and raw.exists() else {}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    c = r["counters"]
    responses = int(c.get("downloader/response_count", 0))
    pages = int(c.get("kc/stages/pages", 0))
    main_cpu = r["threads"].get(r["pid"], 0.0)
    others = sorted((v for t, v in r["threads"].items() if t != r["pid"]), reverse=True)
    workers = int(c.get("kc/stages/worker_cpu_ms", 0)) / 1000
    print(
        f"Profile of the full crawl (b): the loopback test site, {n} articles (warmed in "
        f"{warm_s:.0f} s), {responses} responses and {pages} pages through the stage "
        f"workers in {r['wall']:.1f} s ({responses / r['wall']:.0f} responses/s)"
        + (", sampled by py-spy at 100 Hz" if raw is not None else "")
        + "\n"
    )
    print("| where | CPU s | ms/response | share of the wall time |")
    print("|---|---:|---:|---:|")
    rows = [("crawl process: reactor thread", main_cpu)]
    rows += [(f"crawl process: thread {i + 1} of the others", v) for i, v in enumerate(others[:4])]
    rows += [("crawl process: the rest of its threads", sum(others[4:]))]
    rows += [(f"stage workers ({c.get('kc/stages/workers', 0)}), in their batches", workers)]
    rows += [("test site", r["site_cpu"])]
    for name, cpu in rows:
        print(
            f"| {name} | {cpu:.1f} | {1000 * cpu / max(1, responses):.2f} "
            f"| {100 * cpu / r['wall']:.0f}% |"
        )
    total = main_cpu + sum(others) + workers + r["site_cpu"]
    print(
        f"\n- all of it: {total:.1f} CPU s in {r['wall']:.1f} s on {os.cpu_count()} CPUs "
        f"({100 * total / (r['wall'] * (os.cpu_count() or 1)):.0f}% of them)."
        " The crawl process's other threads are, by CPU, usually the store's writer "
        "(SQLite), the archive's writer (WARC) and the stage pool's result reader; "
        "Python does not name them to the system, py-spy does."
    )
    for part, (count, funcs) in spots.items():
        print(f"\n### {part}: {count} samples\n")
        print("| function | self | total |")  # hot spots first, then the project's own
        print("|---|---:|---:|")
        for name, own_n, total_n in funcs:
            cell = name.replace("|", "\\|")
            print(f"| `{cell}` | {100 * own_n / count:.1f}% | {100 * total_n / count:.1f}% |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
