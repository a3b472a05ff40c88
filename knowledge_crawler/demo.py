"""``make demo``: crawl the project's loopback test site twice and show what changed.

1. starts the test site (``python -m knowledge_crawler.testsite``) on a free port;
2. writes ``data/demo-seeds.toml``: ``seeds/demo.toml`` with the real port;
3. ``scrapy crawl knowledge -a seeds=data/demo-seeds.toml`` into ``KC_DATABASE_URL``
   (default ``data/knowledge.db``; an existing file is kept aside, never deleted);
4. changes some pages on the site (price, stock, rewritten text, whitespace only);
5. crawls again, then prints ``knowledge-crawler stats``;
6. stops everything it started.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

from knowledge_crawler.testsite import TestSite

PAGES = 60
CHANGES = {0: "price", 1: "stock", 2: "text", 3: "append", 4: "whitespace", 5: "case"}


def _say(message: str) -> None:
    print(f"[demo] {message}", flush=True)


def _crawl(seeds: Path, env: dict[str, str]) -> None:
    started = time.monotonic()
    cmd = [
        sys.executable,
        "-m",
        "scrapy",
        "crawl",
        "knowledge",
        "-a",
        f"seeds={seeds}",
        "-s",
        "LOG_LEVEL=WARNING",
        "-s",
        "DOWNLOAD_DELAY=0",
        "-s",
        "AUTOTHROTTLE_ENABLED=False",
    ]
    _say("$ scrapy crawl knowledge -a seeds=" + str(seeds))
    subprocess.run(cmd, check=True, env=env)
    _say(f"crawl finished in {time.monotonic() - started:.1f} s")


def main() -> int:
    root = Path.cwd()
    database = os.environ.get("KC_DATABASE_URL", "sqlite:///data/knowledge.db")
    env = {**os.environ, "KC_DATABASE_URL": database}
    db_path = (
        Path(database.removeprefix("sqlite:///")) if database.startswith("sqlite:///") else None
    )
    if db_path is not None and db_path.exists():
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
        aside = db_path.with_name(f"{db_path.name}.before-demo-{stamp}")
        for suffix in ("", "-wal", "-shm"):
            src = Path(f"{db_path}{suffix}")
            if src.exists():
                shutil.move(src, f"{aside}{suffix}")
        _say(f"kept the existing database aside as {aside}")
    with TestSite(pages=PAGES, seed=1) as site:
        _say(f"test site with {PAGES} articles at {site.url}")
        port = re.search(r":(\d+)/", site.url)
        assert port is not None
        template = (root / "seeds" / "demo.toml").read_text(encoding="utf-8")
        seeds = root / "data" / "demo-seeds.toml"
        seeds.parent.mkdir(parents=True, exist_ok=True)
        seeds.write_text(template.replace("8089", port.group(1)), encoding="utf-8")

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
