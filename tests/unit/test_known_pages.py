"""The crawl's map of stored pages answers the same in memory and in its temporary file."""

from __future__ import annotations

import dataclasses
import random

import pytest

from knowledge_crawler.crawl.known import KnownPages
from knowledge_crawler.store import KnownPage


def page(i: int, source: str = "s", **changes: object) -> KnownPage:
    known = KnownPage(
        source_id=source,
        canonical_url=f"https://example.com/p/{i}",
        final_url=f"https://example.com/p/{i}?v=1",
        etag=f'"{i}"' if i % 3 else None,
        last_modified=None if i % 2 else "Mon, 01 Jan 2024 00:00:00 GMT",
        content_hash=f"{i:064x}",
        depth=i % 4,
        check_interval=None if i % 5 == 0 else 3600 + i,
        last_changed_at="2026-01-01T00:00:00Z",
        next_check_at=None if i % 7 == 0 else f"2026-02-{1 + i % 28:02d}T00:00:00Z",
        status="tombstoned" if i % 11 == 0 else "active",
        status_reason="gone" if i % 11 == 0 else None,
        status_evidence='[{"status": 410}]' if i % 11 == 0 else "[]",
    )
    return dataclasses.replace(known, **changes)  # type: ignore[arg-type]


@pytest.mark.parametrize("memory_pages", [0, 5, 10_000])
def test_it_answers_as_a_dict_does_in_memory_and_on_disk(memory_pages: int) -> None:
    rng = random.Random(memory_pages)
    known = KnownPages(memory_pages)
    expected: dict[tuple[str, str], KnownPage] = {}
    first = [page(i) for i in range(40)] + [page(3, "other")]
    known.extend(first)
    expected.update((p.key, p) for p in first)
    for _ in range(300):
        i = rng.randrange(60)
        changed = page(i, etag=f'"v{rng.random()}"', next_check_at="2027-01-01T00:00:00Z")
        known[changed.key] = changed
        expected[changed.key] = changed
    known.extend([page(1, status="tombstoned"), page(70)])
    expected[page(1).key] = page(1, status="tombstoned")
    expected[page(70).key] = page(70)

    assert known.on_disk == (memory_pages < len(expected))
    assert len(known) == len(expected)
    for key, value in expected.items():
        assert known.get(key) == value and key in known and known[key] == value
    assert known.get(("s", "https://example.com/none")) is None
    assert ("s", "https://example.com/none") not in known and "junk" not in known
    # the order pages were first added in (the store's: most overdue first), kept
    assert list(known.values()) == list(expected.values())
    known.close()


def test_a_page_under_another_key_is_refused() -> None:
    with pytest.raises(ValueError):
        KnownPages()[("s", "https://example.com/x")] = page(1)


def test_seen_keys_are_exact_for_the_keys_added() -> None:
    from knowledge_crawler.crawl.known import SeenKeys

    seen = SeenKeys()
    keys = [f"https://example.com/p/{i}" for i in range(20_000)]
    for key in keys[::2]:
        seen.add(key)
    seen.add(keys[0])
    assert len(seen) == 10_000
    assert all(key in seen for key in keys[::2])
    assert not any(key in seen for key in keys[1::2])


def test_recent_keys_hold_at_most_their_limit_and_the_newest() -> None:
    from knowledge_crawler.crawl.known import RecentKeys

    recent = RecentKeys(limit=100)
    keys = [f"https://example.com/p/{i}" for i in range(1000)]
    for key in keys:
        recent.add(key)
    held = [key for key in keys if key in recent]
    assert 50 <= len(held) <= 100
    assert held == keys[-len(held) :]  # the newest, in one run
