"""Command line: ``python -m knowledge_crawler.testsite [--pages N] [--port 0] [--seed S]``.

Also ``--sitemap-chunk N`` (articles per child sitemap) and ``--feed-items N`` (feed length);
``--faults`` prints the catalogue of fault paths under ``/faults/`` and exits.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
from collections.abc import Sequence
from types import FrameType

from ._discovery import DEFAULT_FEED_ITEMS, DEFAULT_SITEMAP_CHUNK
from ._faults import catalogue
from ._server import TestSiteServer


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m knowledge_crawler.testsite",
        description=(
            "Serve the deterministic loopback test website (a fake magazine with articles, "
            "boilerplate, duplicates, robots.txt-protected pages and a control API) on "
            "127.0.0.1. The first line printed on stdout is the base URL, e.g. "
            "http://localhost:PORT/ ; the server runs until SIGTERM or SIGINT."
        ),
        epilog=(
            "Control API (never linked, disallowed in robots.txt): GET /__control/manifest; "
            "POST /__control/mutate?i=N&kind=price|text|stock|whitespace|case|append; "
            "POST /__control/delete?i=N[&gone=1]; POST /__control/restore?i=N; "
            "POST /__control/slow?path_prefix=/api/&seconds=0.5 (answer matching requests "
            "late; seconds=0 clears); POST /__control/reset (also clears slow rules). "
            "Discovery (not linked; robots.txt names the sitemap): /sitemap.xml, "
            "/sitemaps/articles-N.xml[.gz], /sitemaps/raw-gzip.xml, /feed.rss, /feed.atom, "
            "/feed-rss1.rdf, /api/articles?per_page=N[&page=P], "
            "/api/articles-cursor?per_page=N[&cursor=C]. "
            "Faults (not linked from the site; start a crawl at /faults/ to reach them all; "
            "see --faults): /faults/flaky-503?fails=N, /faults/timeout-then-ok?sleep=S, "
            "/faults/rate-limited[-date]?retry_after=S, /faults/slow?seconds=S[&trickle=1], "
            "/faults/huge?mb=N, /faults/gzip-bomb?mb=N, ...; "
            "POST /__control/fault?path=/faults/...&status=200|404|410|0 forces a status "
            "(status=200&answer=empty|binary|error: a junk 200 labelled text/html); "
            "/__control/reset clears fault counters and forced statuses. "
            "JavaScript pages (not linked; start a crawl at /js/): /js/inline/<i> builds the "
            "article from an inline script, /js/fetch/<i> fetches /js/data/<i>.json after "
            "load; both are empty shells over plain HTTP and load an image, a font and a "
            "video from /js/asset/ (GET /__control/hits counts those; "
            "GET /__control/js-expected?i=N tells what the scripts build)."
        ),
    )
    parser.add_argument("--pages", type=int, default=50, help="number of articles (default 50)")
    parser.add_argument("--port", type=int, default=0, help="TCP port; 0 picks a free one")
    parser.add_argument("--seed", type=int, default=1, help="content seed (default 1)")
    parser.add_argument(
        "--sitemap-chunk",
        type=int,
        default=DEFAULT_SITEMAP_CHUNK,
        help=f"articles per child sitemap (default {DEFAULT_SITEMAP_CHUNK})",
    )
    parser.add_argument(
        "--feed-items",
        type=int,
        default=DEFAULT_FEED_ITEMS,
        help=f"newest articles listed in each feed (default {DEFAULT_FEED_ITEMS})",
    )
    parser.add_argument(
        "--warm",
        action="store_true",
        help="pre-render all article pages in the background after start-up (benchmarks)",
    )
    parser.add_argument(
        "--faults",
        action="store_true",
        help="print the fault paths under /faults/ with what a correct crawler ends with, "
        "then exit",
    )
    parser.add_argument(
        "--exit-on-stdin-eof",
        action="store_true",
        help="also stop when stdin reaches EOF (used by TestSite so orphans never linger)",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.faults:
        print(catalogue())
        return 0
    for name in ("pages", "sitemap_chunk", "feed_items"):
        if getattr(args, name) < 1:
            print(f"--{name.replace('_', '-')} must be at least 1", file=sys.stderr)
            return 2
    server = TestSiteServer(
        args.port,
        args.pages,
        args.seed,
        sitemap_chunk=args.sitemap_chunk,
        feed_items=args.feed_items,
    )
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    if args.exit_on_stdin_eof:

        def watch_stdin() -> None:
            try:
                while os.read(sys.stdin.fileno(), 4096):
                    pass
            except OSError:
                pass
            stop.set()

        threading.Thread(target=watch_stdin, name="stdin-watch", daemon=True).start()

    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.1}, name="serve", daemon=True
    )
    thread.start()
    print(server.app.url, flush=True)
    if args.warm:
        threading.Thread(target=server.app.warm, name="warm", daemon=True).start()
    try:
        while not stop.wait(0.5):
            pass
    finally:
        server.shutdown()
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
