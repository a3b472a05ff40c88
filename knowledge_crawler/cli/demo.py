"""``make demo``: crawl the project's loopback test site twice and show what changed.

1. starts the test site (``python -m knowledge_crawler.testsite``) on a free port;
2. writes ``data/demo/seeds.toml``: ``seeds/demo.toml`` with the real port;
3. ``scrapy crawl knowledge -a seeds=data/demo/seeds.toml`` into the demo's own
   database, ``data/demo/knowledge.db`` (made afresh on every run; the user's
   ``KC_DATABASE_URL`` and ``data/knowledge.db`` are never touched);
4. changes some pages on the site (price, stock, rewritten text, whitespace only);
5. crawls again, then prints ``knowledge-crawler stats``;
6. stops everything it started.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

from knowledge_crawler.testsite import TestSite

PAGES = 60
#: The demo's own folder: its database and seeds file, recreated on every run.
DEMO_DIR = Path("data") / "demo"
CHANGES = {0: "price", 1: "stock", 2: "text", 3: "append", 4: "whitespace", 5: "case"}


def _say(message: str) -> None:
    print(f"[demo] {message}", flush=True)


def _crawl(seeds: Path, env: dict[str, str]) -> None:
    started = time.monotonic()
    # the source's download_delay = 0 (seeds/demo.toml: our own loopback server) is all
    # that makes it fast: the command shown is the command run
    args = ["crawl", "knowledge", "-a", f"seeds={seeds}", "-s", "LOG_LEVEL=WARNING"]
    _say("$ scrapy " + " ".join(args))
    subprocess.run([sys.executable, "-m", "scrapy", *args], check=True, env=env)
    _say(f"crawl finished in {time.monotonic() - started:.1f} s")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="make demo",
        description=(
            "Crawl the project's loopback test site twice into the demo's own database "
            f"({DEMO_DIR}/knowledge.db, made afresh each run; your KC_DATABASE_URL and "
            "data/knowledge.db are never touched), change a few pages in between, "
            "and print `knowledge-crawler stats`."
        ),
    )
    parser.parse_args(argv)
    root = Path.cwd()
    demo_dir = root / DEMO_DIR
    demo_dir.mkdir(parents=True, exist_ok=True)
    db_path = demo_dir / "knowledge.db"
    for suffix in ("", "-wal", "-shm"):  # the demo's own files: start from nothing
        Path(f"{db_path}{suffix}").unlink(missing_ok=True)
    archive = demo_dir / "archive"  # its raw archive too (never KC_ARCHIVE_DIR's)
    shutil.rmtree(archive, ignore_errors=True)
    database = f"sqlite:///{db_path}"
    env = {**os.environ, "KC_DATABASE_URL": database, "KC_ARCHIVE_DIR": str(archive)}
    with TestSite(pages=PAGES, seed=1) as site:
        _say(f"test site with {PAGES} articles at {site.url}")
        _say(f"database: {db_path} (the demo's own)")
        port = re.search(r":(\d+)/", site.url)
        assert port is not None
        template = (root / "seeds" / "demo.toml").read_text(encoding="utf-8")
        seeds = demo_dir / "seeds.toml"
        seeds.write_text(
            template.replace("localhost:8089", f"localhost:{port.group(1)}"), encoding="utf-8"
        )

        _say("first crawl: every page is new")
        _crawl(seeds, env)

        for i, kind in CHANGES.items():
            site.mutate(i, kind)
        _say(
            "changed articles on the site: "
            + ", ".join(f"#{i} {kind}" for i, kind in CHANGES.items())
            + " (whitespace and heading case must not count as changes)"
        )

        _say("second crawl: unchanged pages keep their content; real changes are versioned")
        _crawl(seeds, env)

    _say("$ knowledge-crawler stats")
    subprocess.run(
        [sys.executable, "-m", "knowledge_crawler", "stats", "--db", database], check=True
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
