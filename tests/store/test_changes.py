"""`Store.changes` and `knowledge-crawler changes`: new, changed, tombstoned and restored pages."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from knowledge_crawler.cli.main import cli
from knowledge_crawler.store import StatusChange, Store, open_store
from knowledge_crawler.store import core as store_core
from tests.store.test_contract import T0, T1, rec

T2 = "2026-01-03T00:00:00.000000Z"
T3 = "2026-01-04T00:00:00.000000Z"
T4 = "2026-01-05T00:00:00.000000Z"
P1 = "https://example.com/p1"
U1 = "http://example.com/p1"  # where it was fetched

TEXT_1 = "# One\n\nalpha words\n\nbeta words\n\ngamma words"
TEXT_2 = "# One\n\nalpha words\n\nBETA TWO words\n\ngamma words"
TEXT_3 = "# One\n\nalpha words\n\nBETA TWO words\n\ndelta words"

Clock = Callable[[str], None]


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    """Set the time the store stamps on what it writes itself (a version's ``replaced_at``)."""

    def set_now(at: str) -> None:
        monkeypatch.setattr(store_core, "utc_now", lambda: at)

    return set_now


def history_of_edits(store: Store, clock: Clock) -> None:
    """p1..p3 new at T0, p1 changed at T1 and at T2, p3 tombstoned at T3, p4 new at T4.

    Also: a page of another source, new at T0; p2 suspected missing at T3 (not listed).
    """
    clock(T0)
    store.write([rec(1, TEXT_1), rec(2), rec(3), rec(9, source_id="other")])
    clock(T1)
    store.write([rec(1, TEXT_2, at=T1)])
    clock(T2)
    store.write([rec(1, TEXT_3, at=T2)])
    store.write(
        [
            StatusChange("s", "https://example.com/p3", "tombstoned", T3, "gone (410)"),
            StatusChange("s", "https://example.com/p2", "suspected_missing", T3, "404 once"),
        ]
    )
    clock(T4)
    store.write([rec(4, at=T4)])


def kinds(entries: list[dict[str, object]]) -> list[tuple[object, object, object]]:
    return [(e["kind"], e["time"], str(e["canonical_url"]).rsplit("/", 1)[1]) for e in entries]


def test_every_kind_oldest_first(store: Store, clock: Clock) -> None:
    history_of_edits(store, clock)
    entries = list(store.changes(T0))
    assert kinds(entries) == [
        ("new", T0, "p1"),
        ("new", T0, "p2"),
        ("new", T0, "p3"),
        ("new", T0, "p9"),
        ("changed", T1, "p1"),
        ("changed", T2, "p1"),
        ("tombstoned", T3, "p3"),
        ("new", T4, "p4"),
    ]
    first, second = (e for e in entries if e["kind"] == "changed")
    # one entry per change, each with the texts on either side of it
    assert (first["previous_content"], first["content"]) == (TEXT_1, TEXT_2)
    assert (second["previous_content"], second["content"]) == (TEXT_2, TEXT_3)
    assert (first["previous_fetched_at"], first["fetched_at"]) == (T0, T1)
    assert (second["previous_fetched_at"], second["fetched_at"]) == (T1, T2)
    assert first["content_hash"] == second["previous_content_hash"]
    assert first["previous_content_hash"] != first["content_hash"]
    assert first["source_id"] == "s" and first["title"] == "Page 1"
    [tomb] = (e for e in entries if e["kind"] == "tombstoned")
    assert tomb["reason"] == "gone (410)" and tomb["previous_content_hash"] is None
    assert all(e["reason"] is None for e in entries if e["kind"] != "tombstoned")


def test_window_since_included_until_excluded(store: Store, clock: Clock) -> None:
    history_of_edits(store, clock)
    assert kinds(list(store.changes(T1, T3))) == [("changed", T1, "p1"), ("changed", T2, "p1")]
    just_after = "2026-01-02T00:00:00.000001Z"
    assert kinds(list(store.changes(just_after, T4))) == [
        ("changed", T2, "p1"),
        ("tombstoned", T3, "p3"),
    ]
    assert list(store.changes("2027-01-01T00:00:00.000000Z")) == []


def test_source_filter_and_no_contents(store: Store, clock: Clock) -> None:
    history_of_edits(store, clock)
    assert kinds(list(store.changes(T0, source_id="other"))) == [("new", T0, "p9")]
    assert list(store.changes(T0, source_id="nope")) == []
    entries = list(store.changes(T1, T3, contents=False))
    assert [e["kind"] for e in entries] == ["changed", "changed"]
    for entry in entries:
        assert "content" not in entry and "previous_content" not in entry
        assert entry["previous_content_hash"] and entry["previous_fetched_at"]


def test_a_tombstoned_page_that_answers_again_is_restored(store: Store, clock: Clock) -> None:
    history_of_edits(store, clock)
    store.write([rec(3, at="2026-01-06T00:00:00.000000Z")])  # the same content, back
    tail = kinds(list(store.changes(T3)))
    # the tombstone stays listed once the page is back
    assert tail == [
        ("tombstoned", T3, "p3"),
        ("new", T4, "p4"),
        ("restored", "2026-01-06T00:00:00.000000Z", "p3"),
    ]


def test_a_page_changing_twice_in_one_batch_gives_two_entries(store: Store, clock: Clock) -> None:
    clock(T0)
    store.write([rec(1, "first")])
    clock(T1)
    store.write([rec(1, "second", at=T1), rec(1, "third", at=T1)])
    changed = [e for e in store.changes(T1) if e["kind"] == "changed"]
    assert [(e["previous_content"], e["content"]) for e in changed] == [
        ("first", "second"),
        ("second", "third"),
    ]


def test_a_consumer_stopping_early_leaves_the_store_usable(store: Store, clock: Clock) -> None:
    history_of_edits(store, clock)
    stream = store.changes(T0)
    next(stream)
    stream.close()
    clock(T4)
    store.write([rec(5, at=T4)])  # no open read in the way
    assert kinds(list(store.changes(T4))) == [("new", T4, "p4"), ("new", T4, "p5")]


# -- the command -------------------------------------------------------------------------


@pytest.fixture
def db(tmp_path: Path, clock: Clock) -> str:
    url = f"sqlite:///{tmp_path}/k.db"
    with open_store(url) as store:
        history_of_edits(store, clock)
    return url


def run(db: str, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["changes", "--db", db, *args])
    return result.exit_code, result.stdout, result.stderr


def test_human_output_headers_and_indented_diffs(db: str) -> None:
    code, out, err = run(db, "--since", "2026-01-02")
    assert code == 0, err
    lines = out.splitlines()
    headers = [line for line in lines if not line.startswith("    ")]
    # the URL each page was fetched at, to open (its key is https://, the page http://)
    assert headers == [
        f"{T1}  changed     {U1}  [s]  Page 1",
        f"{T2}  changed     {U1}  [s]  Page 1",
        f"{T3}  tombstoned  http://example.com/p3  [s]  Page 3  (gone (410))",
        f"{T4}  new         http://example.com/p4  [s]  Page 4",
        f"4 changes since {T1}: 1 new, 2 changed, 1 tombstoned",
    ]
    first_diff = lines[1 : lines.index(headers[1])]
    assert first_diff[:2] == [f"    --- {U1}\t{T0}", f"    +++ {U1}\t{T1}"]
    assert "    -beta words" in first_diff and "    +BETA TWO words" in first_diff
    assert not any("delta" in line for line in first_diff)
    second_diff = lines[lines.index(headers[1]) + 1 : lines.index(headers[2])]
    assert "    -gamma words" in second_diff and "    +delta words" in second_diff
    assert err == ""


def test_json_lines_one_object_per_entry(db: str) -> None:
    code, out, _ = run(db, "--since", "2026-01-02T00:00:00Z", "--json")
    assert code == 0
    entries = [json.loads(line) for line in out.splitlines()]
    assert [e["kind"] for e in entries] == ["changed", "changed", "tombstoned", "new"]
    first = entries[0]
    assert set(first) == {
        "kind",
        "time",
        "source_id",
        "canonical_url",
        "url",
        "title",
        "content_hash",
        "reason",
        "previous_content_hash",
        "previous_fetched_at",
        "fetched_at",
        "diff",
    }
    assert "-beta words\n+BETA TWO words" in first["diff"]
    assert first["diff"].startswith(f"--- {U1}\t{T0}\n+++ {U1}\t{T1}\n@@")
    assert entries[2]["diff"] is None and entries[2]["reason"] == "gone (410)"


def test_since_boundary_is_included(db: str) -> None:
    for same_moment in ("2026-01-02", "2026-01-02T01:00:00+01:00", "2026-01-02 00:00:00"):
        out = run(db, "--since", same_moment, "--until", T2, "--json")[1]
        assert [json.loads(line)["time"] for line in out.splitlines()] == [T1], same_moment
    out = run(db, "--since", "2026-01-02T00:00:00.000001Z", "--until", T2, "--json")[1]
    assert out == ""


def test_no_diff_and_source(db: str) -> None:
    code, out, _ = run(db, "--since", "2026-01-02", "--no-diff")
    assert code == 0 and not any(line.startswith("    ") for line in out.splitlines())
    out = run(db, "--since", "2026-01-02", "--no-diff", "--json")[1]
    assert all(json.loads(line)["diff"] is None for line in out.splitlines())
    out = run(db, "--since", "2026-01-01", "--source", "other", "--json")[1]
    assert [json.loads(line)["canonical_url"] for line in out.splitlines()] == [
        "https://example.com/p9"
    ]


def test_nothing_in_the_window_is_one_line_on_stderr(db: str) -> None:
    for extra in ([], ["--json"]):
        code, out, err = run(db, "--since", "2030-01-01", *extra)
        assert (code, out) == (0, "")
        assert err == "no changes since 2030-01-01T00:00:00.000000Z\n"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--since", "last tuesday"], "--since: expected a time such as 2026-12-01"),
        (["--since", "2026-01-02", "--until", "soon"], "--until: expected a time"),
        (["--since", "2026-01-02", "--until", "2026-01-01"], "is not after --since"),
    ],
)
def test_bad_times_exit_2_with_one_line(db: str, args: list[str], message: str) -> None:
    code, out, err = run(db, *args)
    assert code == 2 and out == ""
    assert err.startswith("knowledge-crawler: error: ") and message in err
    assert len(err.splitlines()) == 1


def test_since_is_required_and_the_database_must_exist(tmp_path: Path) -> None:
    code, _, err = run(f"sqlite:///{tmp_path}/k.db")
    assert code == 2 and "--since" in err
    code, _, err = run(f"sqlite:///{tmp_path}/none.db", "--since", "1d")
    assert code == 2 and err.startswith("knowledge-crawler: error: no database at")
