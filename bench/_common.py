"""Helpers shared by the crawl benchmarks (bench_crawl.py, bench_sync.py).

:func:`run_crawl` runs the real ``scrapy crawl knowledge -a seeds=URL`` command in a
subprocess from the repository root and measures it: wall time, CPU time (user + system)
and peak RSS of the crawl process (``/usr/bin/time -f`` when it exists, else a ``python -c``
wrapper printing ``getrusage(RUSAGE_SELF)`` at exit), the test site's CPU time during the
crawl (from ``/proc``), and the run's ``crawl_runs`` row with its Scrapy stats (``counters``).
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
TIME_BIN = "/usr/bin/time"

#: the settings every benchmark crawl runs with (no politeness delay, 16 concurrent requests)
FAST_SETTINGS = {
    "LOG_LEVEL": "WARNING",
    "DOWNLOAD_DELAY": "0",
    "AUTOTHROTTLE_ENABLED": "False",
    "CONCURRENT_REQUESTS": "16",
    "CONCURRENT_REQUESTS_PER_DOMAIN": "16",
}

_WRAPPER = (
    "import atexit, resource, sys\n"
    "out = sys.argv[1]\n"
    "def _report():\n"
    "    r = resource.getrusage(resource.RUSAGE_SELF)\n"
    "    with open(out, 'w') as fh:\n"
    "        fh.write(f'{r.ru_maxrss} {r.ru_utime} {r.ru_stime}')\n"
    "atexit.register(_report)\n"
    "from scrapy.cmdline import execute\n"
    "execute(['scrapy'] + sys.argv[2:])\n"
)


_COMPILED: list[bool] = []


def precompile() -> None:
    """Write the package's bytecode (once), as a user's first run does: every measured crawl
    then starts as every later run does, also where ``PYTHONDONTWRITEBYTECODE`` is set (the
    interpreter would otherwise compile each module again in each crawl)."""
    if not _COMPILED:
        import compileall

        compileall.compile_dir(REPO / "knowledge_crawler", quiet=1)
        _COMPILED.append(True)


def cpu_seconds(pid: int) -> float:
    """utime + stime of a process, from /proc (0.0 where there is none)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def wait_warm(pid: int, timeout: float = 300.0) -> float:
    """Wait until the site's pre-rendering thread is done: CPU use below 5% for 1 s."""
    t0 = time.monotonic()
    last = cpu_seconds(pid)
    while time.monotonic() - t0 < timeout:
        time.sleep(1.0)
        now = cpu_seconds(pid)
        if now - last < 0.05:
            break
        last = now
    return time.monotonic() - t0


def site_pid(site: Any) -> int:
    """The pid of a :class:`~knowledge_crawler.testsite.TestSite`'s server process (0: none)."""
    return getattr(getattr(site, "_proc", None), "pid", 0) or 0


def scrapy_exe() -> Path:
    precompile()
    exe = Path(sys.executable).with_name("scrapy")
    return exe if exe.exists() else REPO / ".venv" / "bin" / "scrapy"


def meter_name() -> str:
    """How :func:`run_crawl` measures CPU and peak RSS, for the report."""
    meter = "/usr/bin/time -f %M" if os.access(TIME_BIN, os.X_OK) else "getrusage wrapper"
    return f"{meter} (the knowledge crawl's CPU adds its stage workers', kc/stages/worker_cpu_ms)"


def run_crawl(
    site_url: str,
    db: Path,
    site_pid: int,
    extra: list[str] | None = None,
    *,
    settings: dict[str, str] | None = None,
    prog: str = "bench",
) -> dict[str, Any]:
    """One ``scrapy crawl knowledge -a seeds=site_url`` into ``db``, measured.

    ``settings`` (default :data:`FAST_SETTINGS`) become ``-s NAME=VALUE`` in order, then
    ``-s KC_DATABASE_URL=sqlite:///db``, then ``extra`` arguments. Exits the benchmark
    (naming ``prog``) if the crawl fails. Returns ``wall``, ``cpu`` (the crawl process's
    and its stage workers'), ``crawl_cpu`` and ``workers_cpu`` (the two apart; the
    workers' is the time in their batches, ``kc/stages/worker_cpu_ms``), ``rss_kib``,
    ``site_cpu``, ``run`` (the newest ``crawl_runs`` row as a dict), ``counters`` (its Scrapy
    stats) and ``stderr``.
    """
    cmd = ["crawl", "knowledge", "-a", f"seeds={site_url}"]
    for name, value in (FAST_SETTINGS if settings is None else settings).items():
        cmd += ["-s", f"{name}={value}"]
    cmd += ["-s", f"KC_DATABASE_URL=sqlite:///{db}", *(extra or [])]
    measured = measure_scrapy(cmd, REPO, site_pid, prog=prog)
    conn = sqlite3.connect(db)
    conn.row_factory = sqlite3.Row
    try:
        run = dict(conn.execute("SELECT * FROM crawl_runs ORDER BY id DESC LIMIT 1").fetchone())
    finally:
        conn.close()
    counters = json.loads(run.get("counters") or "{}")
    # The stage workers are forked by a server that outlives the crawl process, so the
    # crawl's own rusage never includes them: their CPU comes from the run's counter.
    workers = int(counters.get("kc/stages/worker_cpu_ms", 0)) / 1000
    return measured | {
        "run": run,
        "counters": counters,
        "cpu": measured["cpu"] + workers,
        "crawl_cpu": measured["cpu"],
        "workers_cpu": workers,
    }


def measure_scrapy(cmd: list[str], cwd: Path, site_pid: int, *, prog: str) -> dict[str, Any]:
    """``scrapy CMD...`` in ``cwd``, measured: ``wall``, ``cpu`` (user + system), ``rss_kib``
    (peak), ``site_cpu`` (the test site's CPU meanwhile) and ``stderr``. Exits the benchmark
    (naming ``prog``) if the command fails."""
    precompile()
    with tempfile.NamedTemporaryFile("r", suffix=".rusage") as usage:
        if os.access(TIME_BIN, os.X_OK):
            argv = [TIME_BIN, "-q", "-f", "%M %U %S", "-o", usage.name, str(scrapy_exe()), *cmd]
        else:
            argv = [sys.executable, "-c", _WRAPPER, usage.name, *cmd]
        site_cpu0 = cpu_seconds(site_pid)
        t0 = time.perf_counter()
        proc = subprocess.run(argv, cwd=cwd, capture_output=True, text=True)
        wall = time.perf_counter() - t0
        site_cpu = cpu_seconds(site_pid) - site_cpu0
        if proc.returncode != 0:
            sys.exit(f"{prog}: crawl failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
        rss_kib, utime, stime = usage.read().split()[:3]
    return {
        "wall": wall,
        "cpu": float(utime) + float(stime),
        "rss_kib": int(rss_kib),
        "site_cpu": site_cpu,
        "stderr": proc.stderr,
    }


def run_plain(site_pid: int, workdir: Path, *args: str, prog: str = "bench") -> dict[str, Any]:
    """Plain Scrapy (``bench/plain_spider.py``, see there) in ``workdir``, a folder with no
    ``scrapy.cfg``: what :func:`measure_scrapy` measures, and ``counters`` (its stats)."""
    stats = workdir / f"plain-stats-{time.monotonic_ns()}.json"
    cmd = ["runspider", str(REPO / "bench" / "plain_spider.py"), "-a", f"stats_out={stats}"]
    for arg in args:
        cmd += ["-a", arg]
    measured = measure_scrapy(cmd, workdir, site_pid, prog=prog)
    measured["counters"] = json.loads(stats.read_text(encoding="utf-8"))
    return measured


def crawl_argv(seeds: str, db: Path, settings: dict[str, str] | None = None) -> list[str]:
    """``scrapy crawl knowledge -a seeds=SEEDS`` with ``-s`` for each of ``settings``
    (default :data:`FAST_SETTINGS`) and the SQLite database ``db``, as a command line."""
    argv = [str(scrapy_exe()), "crawl", "knowledge", "-a", f"seeds={seeds}"]
    for name, value in (FAST_SETTINGS if settings is None else settings).items():
        argv += ["-s", f"{name}={value}"]
    return [*argv, "-s", f"KC_DATABASE_URL=sqlite:///{db}"]


def run_sampled(
    argv: list[str],
    sample: Callable[[subprocess.Popen[str]], None],
    *,
    every: float,
    prog: str,
) -> tuple[float, str]:
    """Run ``argv`` from the repository root, calling ``sample`` with the process every
    ``every`` seconds while it runs: its wall time and stderr. Exits the benchmark
    (naming ``prog``) if the command fails."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        argv, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    while proc.poll() is None:
        sample(proc)
        time.sleep(every)
    wall = time.perf_counter() - t0
    stderr = proc.stderr.read() if proc.stderr else ""
    if proc.returncode != 0:
        sys.exit(f"{prog}: crawl failed ({proc.returncode}):\n{stderr[-3000:]}")
    return wall, stderr


def doc_parser(doc: str | None) -> argparse.ArgumentParser:
    """An argument parser whose help is a script's docstring: its first paragraph as the
    description, the paragraphs after the usage line as the epilog."""
    paragraphs = (doc or "").split("\n\n")
    return argparse.ArgumentParser(
        description=paragraphs[0],
        epilog="\n\n".join(paragraphs[2:]),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )


def process_tree(root: int) -> list[int]:
    """``root`` and every process below it (from /proc)."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            parents[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
    found = [root]
    for pid in found:
        found.extend(child for child, parent in parents.items() if parent == pid)
    return found


def rss_kib(pid: int) -> int:
    """Resident set size of ``pid`` (KiB; 0 when it is gone)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0


def pss_kib(pid: int) -> int:
    """Proportional set size of ``pid`` (KiB; 0 when it is gone)."""
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0


def stored_pages(db: Path) -> int:
    """Rows of ``pages`` in the SQLite database ``db`` now (0 while it is not there)."""
    if not db.exists():
        return 0
    try:
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=0.2)
        try:
            return int(conn.execute("SELECT COUNT(*) FROM pages").fetchone()[0])
        finally:
            conn.close()
    except sqlite3.Error:
        return 0


def slope_per_100(points: list[tuple[int, int]]) -> float:
    """Least-squares slope of memory (KiB) against pages, in MiB per 100 pages."""
    if len(points) < 3:
        return 0.0
    n = len(points)
    mx = sum(p for p, _ in points) / n
    my = sum(m for _, m in points) / n
    sxx = sum((p - mx) ** 2 for p, _ in points)
    if sxx == 0:
        return 0.0
    sxy = sum((p - mx) * (m - my) for p, m in points)
    return sxy / sxx * 100 / 1024


def median_slope_per_100(points: list[tuple[int, int]]) -> float:
    """Theil-Sen slope of memory (KiB) against pages, in MiB per 100 pages: the median of
    the slopes between every two samples, which a passing bump of memory (a phase of the
    crawl that needs more for a while) moves far less than it moves a least-squares line,
    while memory that grows with every page moves both alike."""
    slopes = sorted(
        (m2 - m1) / (p2 - p1)
        for i, (p1, m1) in enumerate(points)
        for p2, m2 in points[i + 1 :]
        if p2 != p1
    )
    if not slopes:
        return 0.0
    mid = len(slopes) // 2
    median = slopes[mid] if len(slopes) % 2 else (slopes[mid - 1] + slopes[mid]) / 2
    return median * 100 / 1024
