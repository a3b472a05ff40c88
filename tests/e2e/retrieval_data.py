"""A small dataset for the agent-facing servers (`mcp`, `browse`), written through the store.

Six pages of source ``docs`` on distinct subjects, split into passages as a crawl
splits them; then the pump page edited (a changed entry with a diff), a print
copy of the valve page marked its exact duplicate, the kettle page tombstoned,
the lamp page last seen 30 days ago (stale), and one dead-lettered URL.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from knowledge_crawler.store import (
    FetchFailure,
    PageRecord,
    PassageRecord,
    StatusChange,
    open_store,
)
from knowledge_crawler.transform.fingerprint import content_hash
from knowledge_crawler.transform.passages import split_passages

SITE = "https://docs.example.com"

PUMP_V1 = """\
# Centrifugal pumps

## How the impeller works

The impeller spins and flings water outward; the volute turns that speed into pressure.
A pump that runs dry overheats its mechanical seal within minutes.

## Maintenance

Check the seal for drips every month. Price of a seal kit: $40.
"""

PUMP_V2 = PUMP_V1.replace("Price of a seal kit: $40.", "Price of a seal kit: $55.")

PAGES = {
    "/pumps": ("Centrifugal pumps", PUMP_V1),
    "/valves": (
        "Check valves",
        "# Check valves\n\n## Backflow\n\nA check valve lets water flow one way and stops "
        "backflow when the pump halts. Swing and ball check valves are the common kinds.\n",
    ),
    "/pipes": (
        "Pipe sizing",
        "# Pipe sizing\n\n## Friction loss\n\nNarrow pipes lose pressure to friction; double "
        "the diameter and the loss falls roughly thirty-fold at the same flow.\n",
    ),
    "/gauges": (
        "Pressure gauges",
        "# Pressure gauges\n\n## Reading a gauge\n\nA bourdon tube straightens as pressure "
        "rises and moves the needle. Glycerine filling damps needle flutter.\n",
    ),
    "/kettles": (
        "Kettles",
        "# Kettles\n\n## Scale\n\nLimescale builds up on the heating element in hard water; "
        "descale with citric acid.\n",
    ),
    "/lamps": (
        "Lamps",
        "# Lamps\n\n## Bulbs\n\nAn LED bulb draws a tenth of the power of an incandescent "
        "one for the same light.\n",
    ),
}


@dataclass(frozen=True)
class Dataset:
    db_url: str
    pump: str  # canonical URLs
    valve: str
    valve_print: str
    kettle: str
    lamp: str
    dead: str


def _stamp(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def record(
    path: str, title: str, content: str, at: str, source_id: str = "docs", **kw: object
) -> PageRecord:
    url = SITE + path
    passages = [
        PassageRecord(p.id, p.ord, p.heading_path, p.text, p.word_count)
        for p in split_passages(content, source_id=source_id, canonical_url=url, max_words=60)
    ]
    return PageRecord(
        source_id=source_id,
        canonical_url=url,
        url=url,
        final_url=url,
        fetched_at=at,
        http_status=200,
        content_hash=content_hash(content),
        content=content,
        title=title,
        word_count=len(content.split()),
        passages=passages,
        **kw,  # type: ignore[arg-type]
    )


def build_dataset(db_url: str) -> Dataset:
    now = datetime.now(UTC)
    earlier, latest = _stamp(now - timedelta(hours=2)), _stamp(now - timedelta(hours=1))
    month_ago = _stamp(now - timedelta(days=30))
    with open_store(db_url) as store:
        store.write(
            [
                record(path, title, content, month_ago if path == "/lamps" else earlier)
                for path, (title, content) in PAGES.items()
            ]
        )
        valve_title, valve_text = PAGES["/valves"]
        store.write(
            [
                record("/pumps", "Centrifugal pumps", PUMP_V2, latest),
                record(
                    "/print/valves",
                    valve_title,
                    valve_text,
                    latest,
                    duplicate_of=("docs", SITE + "/valves"),
                    duplicate_kind="exact",
                    duplicate_score=1.0,
                ),
                StatusChange("docs", SITE + "/kettles", "tombstoned", latest, "gone (410)"),
                FetchFailure(
                    source_id="docs",
                    canonical_url=SITE + "/broken",
                    url=SITE + "/broken",
                    failed_at=latest,
                    attempts=6,
                    first_failed_at=earlier,
                    last_error="http_503",
                    last_status=503,
                    dead_lettered_at=latest,
                    settled=True,
                ),
            ]
        )
    return Dataset(
        db_url=db_url,
        pump=SITE + "/pumps",
        valve=SITE + "/valves",
        valve_print=SITE + "/print/valves",
        kettle=SITE + "/kettles",
        lamp=SITE + "/lamps",
        dead=SITE + "/broken",
    )
