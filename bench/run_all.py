"""Run every benchmark and collect their markdown into one report (``make bench``).

    .venv/bin/python bench/run_all.py [--quick] [--write] [--only NAME ...]

Runs, each as a subprocess with this interpreter from the repository root:
bench_extract.py, bench_minhash.py (always ``--quick``; skipped with a note if the file
is missing), bench_store.py, bench_dedupe_restore.py, bench_crawl.py, bench_sync.py,
bench_render.py, bench_search.py, bench_memory.py, bench_scale.py, bench_soak.py and
bench_capacity.py (which also rewrites docs/scaling.md, but for ``--quick``); the crawl
benchmark runs each scenario twice and keeps the faster. ``--quick`` passes ``--quick``
to the store, restore, crawl, sync, render, search, memory, scale, soak and capacity
benchmarks and
``--repeat 1`` to the extraction benchmark. Each script's markdown output is printed
under a heading with the exact command and its duration; a script that fails is reported
with its exit status and the tail of its stderr, and the others still run (exit status 1
at the end). ``--write`` also rewrites docs/benchmarks.md with a header (how to
reproduce, machine, versions, date) followed by the sections; with ``--only`` it replaces
just those sections of the existing record, each marked with the date it was run.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import re
import shlex
import sqlite3
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BENCH = REPO / "bench"
DOC = REPO / "docs" / "benchmarks.md"
PACKAGES = ("scrapy", "twisted", "lxml", "trafilatura", "datasketch", "numpy")

#: (name, title, script, full-size args, --quick args)
BENCHMARKS: list[tuple[str, str, str, list[str], list[str]]] = [
    ("extract", "Extraction speed", "bench_extract.py", [], ["--repeat", "1"]),
    ("minhash", "MinHash signatures and near-duplicates", "bench_minhash.py", ["--quick"], []),
    ("store", "Store load speed (SQLite, PostgreSQL)", "bench_store.py", [], ["--quick"]),
    ("restore", "Dedupe state restore at spider start", "bench_dedupe_restore.py", [], ["--quick"]),
    ("crawl", "Whole-crawl throughput", "bench_crawl.py", ["--repeat", "2"], ["--quick"]),
    ("sync", "Incremental re-crawl (conditional GET)", "bench_sync.py", [], ["--quick"]),
    ("render", "Rendered crawl (Playwright, Chromium)", "bench_render.py", [], ["--quick"]),
    ("search", "Full-text search latency", "bench_search.py", [], ["--quick"]),
    ("memory", "Memory of a long crawl", "bench_memory.py", [], ["--quick"]),
    (
        "scale",
        "A crawl whose database knows 1,000,000 URLs",
        "bench_scale.py",
        ["--seconds", "60"],
        ["--quick"],
    ),
    ("soak", "Soak: the scheduler refreshing for 300 runs", "bench_soak.py", [], ["--quick"]),
    # the measured per-page costs and the capacity model built on them: docs/scaling.md
    ("capacity", "Per-page costs for capacity", "bench_capacity.py", ["--write"], ["--quick"]),
]


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _machine() -> list[str]:
    versions = []
    for name in PACKAGES:
        try:
            versions.append(f"{name} {metadata.version(name)}")
        except metadata.PackageNotFoundError:
            continue
    mem = ""
    try:
        kib = int(Path("/proc/meminfo").read_text().split()[1])
        mem = f", {kib / 2**20:.1f} GiB RAM"
    except (OSError, ValueError, IndexError):
        pass
    load = ""
    if hasattr(os, "getloadavg"):
        load = ", load average at start {:.2f} {:.2f} {:.2f}".format(*os.getloadavg())
    return [
        f"- Machine: {os.cpu_count()} CPUs (nproc), {_cpu_model()}{mem}{load}",
        f"- OS: {platform.system()} {platform.release()}",
        f"- Python {platform.python_version()} ({platform.python_implementation()}), "
        f"SQLite {sqlite3.sqlite_version}",
        f"- Packages: {', '.join(versions)}",
    ]


def _display(argv: list[str]) -> str:
    rel = [os.path.relpath(a, REPO) if a.startswith(str(REPO)) else a for a in argv]
    return shlex.join([".venv/bin/python", *rel[1:]])


def run(name: str, title: str, script: str, args: list[str]) -> tuple[str, bool]:
    """One benchmark as a markdown section, and whether it succeeded."""
    path = BENCH / script
    argv = [sys.executable, str(path), *args]
    head = f"## {title}\n\nCommand: `{_display(argv)}`"
    if not path.exists():
        return f"{head}\n\n_Not run: {path.relative_to(REPO)} does not exist._\n", name == "minhash"
    print(f"[run_all] {_display(argv)}", file=sys.stderr, flush=True)
    t0 = time.perf_counter()
    proc = subprocess.run(argv, cwd=REPO, capture_output=True, text=True)
    took = time.perf_counter() - t0
    if proc.returncode != 0:
        tail = "\n".join(proc.stderr.strip().splitlines()[-15:])
        body = (
            f"_Failed with exit status {proc.returncode} after {took:.0f} s:_\n\n```\n{tail}\n```"
        )
        return f"{head} (failed)\n\n{body}\n", False
    return f"{head} ({took:.0f} s)\n\n{proc.stdout.strip()}\n", True


#: where a benchmark's section starts in the record: its title, a blank line, its command
_SECTION = re.compile(r"^## [^\n]*\n\n(?:Run [^\n]* alone\. )?Command: ", re.MULTILINE)


def _replace_section(doc: str, section: str) -> str:
    """``doc`` with the section of the same title replaced by ``section`` (appended if
    ``doc`` has none)."""
    title = section.split("\n", 1)[0].removesuffix(" (failed)")
    starts = [m.start() for m in _SECTION.finditer(doc)]
    for i, start in enumerate(starts):
        line = doc[start:].split("\n", 1)[0]
        if line == title or line.startswith(title + " ("):
            end = starts[i + 1] if i + 1 < len(starts) else len(doc)
            return doc[:start] + section + ("\n" if end < len(doc) else "") + doc[end:]
    return doc.rstrip("\n") + "\n\n" + section


def main() -> int:
    ap = argparse.ArgumentParser(
        description=(__doc__ or "").split("\n\n")[0],
        epilog="\n\n".join((__doc__ or "").split("\n\n")[2:]),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument("--quick", action="store_true", help="smaller sizes (about 2 minutes)")
    ap.add_argument("--write", action="store_true", help=f"rewrite {DOC.relative_to(REPO)}")
    names = [b[0] for b in BENCHMARKS]
    ap.add_argument("--only", nargs="+", choices=names, help="run only these benchmarks")
    args = ap.parse_args()

    started = dt.datetime.now().astimezone()
    header = _machine()
    t0 = time.perf_counter()
    sections, ok = [], True
    for name, title, script, full, quick in BENCHMARKS:
        if args.only and name not in args.only:
            continue
        section, good = run(name, title, script, full + (quick if args.quick else []))
        ok = ok and good
        sections.append(section)
        print(section, flush=True)
    total = time.perf_counter() - t0

    if args.write and args.only and DOC.exists():
        # a part of the benchmarks: their sections replace theirs, the rest of the record stays
        when = f"{started:%Y-%m-%d %H:%M %Z}"
        text = DOC.read_text()
        for section in sections:
            text = _replace_section(
                text, section.replace("\n\nCommand: ", f"\n\nRun {when} alone. Command: ", 1)
            )
        DOC.write_text(text)
        print(
            f"[run_all] updated {', '.join(args.only)} in {DOC.relative_to(REPO)}", file=sys.stderr
        )
    elif args.write:
        cmd = ".venv/bin/python bench/run_all.py --write" + (" --quick" if args.quick else "")
        intro = [
            "# Benchmarks",
            "",
            "Generated by `bench/run_all.py`; do not edit by hand. Reproduce with `make bench` "
            "or `.venv/bin/python bench/run_all.py --write` (`--write` rewrites this file; "
            "`--quick` runs smaller sizes in about two minutes; with `--only NAME` it "
            "replaces those sections alone, each marked with its own date). Every ratio is "
            "against a baseline measured in the same run; each section names the command "
            "that produced it.",
            "",
            f"- Date: {started:%Y-%m-%d %H:%M %Z}; produced by `{cmd}` in {total / 60:.1f} min",
            *header,
            "",
        ]
        DOC.parent.mkdir(parents=True, exist_ok=True)
        DOC.write_text("\n".join(intro) + "\n" + "\n".join(sections))
        print(f"[run_all] wrote {DOC.relative_to(REPO)}", file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
