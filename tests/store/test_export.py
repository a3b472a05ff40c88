"""`Store.export_pages` and `knowledge-crawler export`: pages with provenance, streamed."""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from knowledge_crawler.cli import export as export_module
from knowledge_crawler.cli.main import cli
from knowledge_crawler.store import PageRecord, StatusChange, Store, open_store
from tests.store.test_contract import T0, T1, rec

T2 = "2026-01-03T00:00:00.000000Z"
DUP = ("s", "https://example.com/p1")


def dataset(store: Store) -> None:
    """p1 (changed at T1: version 2), p2 a duplicate of p1, p3 tombstoned at T2, p4 new at T1."""
    store.write(
        [
            rec(1, "original words", headings=("Intro", "More")),
            rec(2, "original words", duplicate_of=DUP, duplicate_kind="exact", duplicate_score=1.0),
            rec(3, "page three"),
        ]
    )
    store.write([rec(1, "edited words", at=T1, language="en", extra={"price": 9.5}), rec(4, at=T1)])
    store.write([StatusChange("s", "https://example.com/p3", "tombstoned", T2, "gone (410)")])


def urls(pages: list[dict[str, Any]]) -> list[str]:
    return [p["canonical_url"].rsplit("/", 1)[1] for p in pages]


def test_pages_with_provenance(store: Store) -> None:
    dataset(store)
    pages = list(store.export_pages())
    assert urls(pages) == ["p1", "p4"]
    p1 = pages[0]
    assert p1 == {
        "source_id": "s",
        "canonical_url": "https://example.com/p1",
        "url": "http://example.com/p1?utm_source=x",
        "final_url": "http://example.com/p1",
        "title": "Page 1",
        "content": "edited words",
        "content_hash": rec(1, "edited words").content_hash,
        "language": "en",
        "word_count": 2,
        "headings": ["Intro"],
        "fetched_at": T1,
        "last_changed_at": T1,
        "version": 2,
        "status": "active",
        "duplicate_of": None,
        "extra": {"price": 9.5},
    }
    assert pages[1]["version"] == 1
    assert pages[1]["extra"] == {}


def test_duplicates_and_tombstones_on_request(store: Store) -> None:
    dataset(store)
    assert urls(list(store.export_pages(include_duplicates=True))) == ["p1", "p2", "p4"]
    assert urls(list(store.export_pages(include_tombstoned=True))) == ["p1", "p3", "p4"]
    every = list(store.export_pages(include_duplicates=True, include_tombstoned=True))
    assert urls(every) == ["p1", "p2", "p3", "p4"]
    assert every[1]["duplicate_of"] == "https://example.com/p1"
    assert every[2]["status"] == "tombstoned"


def test_since_picks_what_moved(store: Store) -> None:
    dataset(store)
    assert urls(list(store.export_pages(since=T1))) == ["p1", "p4"]
    # a tombstone is a move too (for a consumer that deletes what is gone)
    assert urls(list(store.export_pages(since=T2, include_tombstoned=True))) == ["p3"]
    assert list(store.export_pages(since=T2)) == []
    assert urls(list(store.export_pages(source_id="s", since=T0))) == ["p1", "p4"]
    assert list(store.export_pages(source_id="other")) == []


# -- the command -------------------------------------------------------------------------


@pytest.fixture
def db(tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path}/k.db"
    with open_store(url) as store:
        dataset(store)
    return url


def export(db: str, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["export", "--db", db, *args])
    return result.exit_code, result.stdout, result.stderr


def lines(out: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in out.splitlines()]


def test_jsonl_to_stdout(db: str) -> None:
    code, out, err = export(db)
    assert (code, err) == (0, "")
    assert out.endswith("\n") and urls(lines(out)) == ["p1", "p4"]
    code, out, _ = export(db, "--format", "jsonl", "--include-duplicates", "--include-tombstoned")
    assert urls(lines(out)) == ["p1", "p2", "p3", "p4"]
    assert lines(out)[1]["duplicate_of"] == "https://example.com/p1"


def test_since_exports_only_what_changed(db: str) -> None:
    assert urls(lines(export(db, "--since", "2026-01-02")[1])) == ["p1", "p4"]
    assert urls(lines(export(db, "--since", "2026-01-02T00:00:00.000001Z")[1])) == []
    code, out, err = export(db, "--since", "sometime")
    assert code == 2 and out == "" and err.startswith("knowledge-crawler: error: --since: ")


def test_only_jsonl_is_known(db: str) -> None:
    code, out, err = export(db, "--format", "csv")
    assert code == 2 and out == "" and "'csv' is not 'jsonl'" in err


def test_output_file_is_written_whole(db: str, tmp_path: Path) -> None:
    target = tmp_path / "pages.jsonl"
    target.write_text("previous export\n")
    code, out, err = export(db, "--output", str(target), "--force")
    assert (code, out) == (0, "")
    assert err == f"exported 2 pages to {target}\n"
    assert urls(lines(target.read_text(encoding="utf-8"))) == ["p1", "p4"]
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_a_failed_export_leaves_the_output_as_it_was(
    db: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "pages.jsonl"
    target.write_text("previous export\n")
    real = export_module.write_jsonl

    def fail_halfway(records: Any, out: Any) -> int:
        real([next(iter(records))], out)
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(export_module, "write_jsonl", fail_halfway)
    result = CliRunner().invoke(cli, ["export", "--db", db, "-o", str(target), "--force"])
    assert result.exit_code != 0
    assert target.read_text() == "previous export\n"
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


@pytest.mark.parametrize("force", [[], ["--force"]], ids=["plain", "force"])
@pytest.mark.parametrize("suffix", ["", "-wal"])
def test_export_never_writes_over_the_database_it_reads(
    db: str, suffix: str, force: list[str]
) -> None:
    # `export -o knowledge.db` replaced the dataset with its own JSON and exited 0
    path = Path(db.removeprefix("sqlite:///") + suffix)
    path.touch()
    before = path.read_bytes()
    code, out, err = export(db, "-o", str(path), *force)
    assert code == 2 and out == ""
    assert err == (
        f"knowledge-crawler: error: refusing to write {path}: it is the database being "
        f"exported, or one of its files\n"
    )
    assert path.read_bytes() == before
    assert urls(lines(export(db)[1])) == ["p1", "p4"]  # the dataset is whole


def test_an_existing_output_file_is_replaced_only_with_force(db: str, tmp_path: Path) -> None:
    target = tmp_path / "pages.jsonl"
    target.write_text("previous export\n")
    code, out, err = export(db, "-o", str(target))
    assert (code, out) == (2, "")
    assert err == f"knowledge-crawler: error: {target} exists; --force replaces it\n"
    assert target.read_text() == "previous export\n"
    assert export(db, "-o", str(target), "--force")[0] == 0
    assert urls(lines(target.read_text(encoding="utf-8"))) == ["p1", "p4"]


def test_output_into_a_missing_folder_is_bad_input(db: str, tmp_path: Path) -> None:
    code, _, err = export(db, "-o", str(tmp_path / "no" / "such" / "x.jsonl"))
    assert code == 2 and err.startswith("knowledge-crawler: error: cannot write ")
    assert len(err.splitlines()) == 1


def test_export_streams_in_flat_memory(tmp_path: Path) -> None:
    """3,000 pages of ~6 KB (18 MB of text): exporting them holds a few pages at a time."""
    url = f"sqlite:///{tmp_path}/big.db"
    n, body = 3000, "word " * 1200
    with open_store(url) as store:
        for start in range(0, n, 500):
            store.write(
                [
                    PageRecord(
                        source_id="s",
                        canonical_url=f"https://example.com/{i}",
                        url=f"https://example.com/{i}",
                        final_url=f"https://example.com/{i}",
                        fetched_at=T0,
                        http_status=200,
                        content_hash=f"{i:064x}",
                        content=f"page {i} {body}",
                        word_count=1202,
                    )
                    for i in range(start, start + 500)
                ]
            )
    total = n * len(body)
    target = tmp_path / "big.jsonl"
    tracemalloc.start()
    try:
        result = CliRunner().invoke(cli, ["export", "--db", url, "-o", str(target)])
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert result.exit_code == 0, result.output
    assert result.stderr == f"exported {n} pages to {target}\n"
    assert peak < total / 10, f"peak {peak:,} bytes for {total:,} bytes of text"
    with target.open(encoding="utf-8") as f:
        assert sum(1 for _ in f) == n
