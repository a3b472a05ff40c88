"""Rescue files: the operations a crawl could not store, kept beside the database and
loaded back through the store's normal batch path.

When the database stays unusable past ``KC_STORE_RETRY_SECONDS``, the store pipeline
writes what it still holds to ``<database>.unsaved-<run id>.jsonl`` in the database's
folder (a PostgreSQL database has none: ``knowledge-<its digest>.unsaved-<run
id>.jsonl`` in ``KC_RESCUE_DIR``, else the crawl's working folder, see
:func:`rescue_path`), one operation a
line (:func:`operation_dict`), the file readable by its owner only (0600). Never in a
shared temporary folder: when the file cannot be made where it belongs, the crawl says
so and names every page it lost.

:func:`load_rescue` reads a file back (:func:`read_rescue`) and writes its operations
in their order, in batches, with :meth:`Store.write`: content hashes, versions,
duplicates and checkpoints behave as they do in a crawl. Loading is idempotent: a page
whose stored fetch is as new as the file's (or newer) is left as stored, so loading a
file twice writes no page twice and an old file never reverts a page crawled since.
Once loaded, the file is renamed ``FILE.loaded``. ``knowledge-crawler rescue FILE``
loads one; a crawl loads those of its database when it starts (:func:`left_over_rescues`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from knowledge_crawler.config import display_url
from knowledge_crawler.errors import ConfigError
from knowledge_crawler.store.base import (
    CheckpointAdvance,
    DuplicateUpdate,
    FetchFailure,
    FrontierAdd,
    Operation,
    PageRecord,
    PassageRecord,
    StatusChange,
    Store,
    Touch,
    UpsertResult,
    UrlOutcome,
    record_dict,
)

__all__ = [
    "LOADED_SUFFIX",
    "RescueSummary",
    "left_over_rescues",
    "load_rescue",
    "operation_dict",
    "operation_from_dict",
    "read_rescue",
    "rescue_path",
    "rescue_sources",
    "write_rescue",
]

#: what a loaded rescue file's name gets
LOADED_SUFFIX = ".loaded"

#: ``NAME.unsaved-RUN.jsonl``: the database's file name and the run
_NAME = re.compile(r"^(?P<db>.+)\.unsaved-(?P<run>[^./]+)\.jsonl$")


def rescue_path(database_url: str, run: int | str, folder: str = "") -> Path:
    """Where a crawl of ``database_url`` keeps what run ``run`` could not store: beside a
    SQLite file; for another database (which has no folder), in ``folder``
    (``KC_RESCUE_DIR``) or else the working folder, under a name that says which database
    it is for (:func:`_stand_in`)."""
    stand_in = _stand_in(database_url, folder)
    return stand_in.with_name(f"{stand_in.name}.unsaved-{run}.jsonl")


def _stand_in(database_url: str, folder: str = "") -> Path:
    """The path rescue files of ``database_url`` are named after: the SQLite file, or for
    another database ``knowledge-<12 hex digits>`` in ``folder`` (else the working
    folder), the digits the SHA-256 of the URL as logs show it (no password): a crawl of
    the same database with the same folder finds the files, and no other database's
    crawl takes them."""
    prefix = "sqlite:///"
    if database_url.startswith(prefix) and database_url[len(prefix) :] not in ("", ":memory:"):
        return Path(database_url[len(prefix) :])
    digest = hashlib.sha256(display_url(database_url).encode("utf-8")).hexdigest()[:12]
    return (Path(folder) if folder else Path.cwd()) / f"knowledge-{digest}"


def write_rescue(path: Path, operations: Sequence[Operation]) -> None:
    """Append ``operations`` to ``path`` (made 0600 if new, kept 0600), synced to disk;
    its folder is made (0700) if it is not there yet (``KC_RESCUE_DIR``).

    Raises :class:`OSError` when the file cannot be made or written there; never
    falls back to another folder.
    """
    lines = "".join(json.dumps(operation_dict(op), default=repr) + "\n" for op in operations)
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(path, flags, 0o600)
    try:
        os.fchmod(fd, 0o600)  # an existing file too, whatever the umask made it
        with os.fdopen(fd, "a", encoding="utf-8", closefd=False) as f:
            f.write(lines)
            f.flush()
            os.fsync(f.fileno())
    finally:
        os.close(fd)


def operation_dict(op: Operation) -> dict[str, object]:
    """One operation as a line of the rescue file: ``{"page": {...}}``, ``{"touch": ...}``..."""
    if isinstance(op, PageRecord):
        return {"page": record_dict(op)}
    if isinstance(op, DuplicateUpdate):
        return {
            "duplicate_update": {
                "key": list(op.key),
                "duplicate_of": list(op.duplicate_of) if op.duplicate_of else None,
                "kind": op.kind,
                "score": op.score,
            }
        }
    if isinstance(op, Touch):
        return {"touch": dataclasses.asdict(op)}
    if isinstance(op, FrontierAdd):
        return {"frontier": dataclasses.asdict(op)}
    if isinstance(op, FetchFailure):
        return {"failure": dataclasses.asdict(op)}
    if isinstance(op, UrlOutcome):
        return {"url_outcome": dataclasses.asdict(op)}
    if isinstance(op, StatusChange):
        return {"status": dataclasses.asdict(op)}
    return {"checkpoint": dataclasses.asdict(op)}


def _pair(value: Any) -> tuple[str, str] | None:
    return None if value is None else (str(value[0]), str(value[1]))


def _page(d: dict[str, Any]) -> PageRecord:
    d = dict(d)
    if d.get("minhash") is not None:
        d["minhash"] = bytes.fromhex(d["minhash"])
    d["headings"] = tuple(d.get("headings") or ())
    d["passages"] = tuple(
        PassageRecord(
            id=p["id"],
            ord=p["ord"],
            heading_path=tuple(p["heading_path"]),
            content=p["content"],
            word_count=p["word_count"],
        )
        for p in d.get("passages") or ()
    )
    d["duplicate_of"] = _pair(d.get("duplicate_of"))
    d["read_state"] = _pair(d.get("read_state"))
    if d.get("outlinks") is not None:
        d["outlinks"] = tuple(d["outlinks"])
    return PageRecord(**d)


def operation_from_dict(line: dict[str, Any]) -> Operation:
    """The operation a line of a rescue file holds (the inverse of :func:`operation_dict`).

    :class:`ValueError` (or :class:`TypeError`, :class:`KeyError`) when it is not one.
    """
    if not isinstance(line, dict) or len(line) != 1:
        raise ValueError("not a rescued operation (one key expected)")
    [(kind, body)] = line.items()
    if not isinstance(body, dict):
        raise ValueError(f"{kind}: not an object")
    if kind == "page":
        return _page(body)
    if kind == "duplicate_update":
        key = _pair(body["key"])
        assert key is not None
        return DuplicateUpdate(
            key=key,
            duplicate_of=_pair(body.get("duplicate_of")),
            kind=body.get("kind"),
            score=body.get("score"),
        )
    kinds: dict[str, Any] = {
        "touch": Touch,
        "frontier": FrontierAdd,
        "failure": FetchFailure,
        "url_outcome": UrlOutcome,
        "status": StatusChange,
        "checkpoint": CheckpointAdvance,
    }
    if kind not in kinds:
        raise ValueError(f"unknown operation {kind!r}")
    op: Operation = kinds[kind](**body)
    return op


def read_rescue(path: Path) -> list[Operation]:
    """Every operation of the rescue file at ``path``, in order.

    :class:`ConfigError` (one line naming the file and the line) when a line is not one,
    :class:`OSError` when the file cannot be read.
    """
    operations: list[Operation] = []
    with open(path, encoding="utf-8") as f:
        for number, text in enumerate(f, 1):
            if not text.strip():
                continue
            try:
                operations.append(operation_from_dict(json.loads(text)))
            except (ValueError, TypeError, KeyError, AssertionError) as exc:
                why = " ".join(str(exc).split()) or type(exc).__name__
                raise ConfigError(
                    f"{path}: line {number}: not a rescued operation: {why}"
                ) from None
    return operations


def rescue_sources(operations: Iterable[Operation]) -> set[str]:
    """The sources ``operations`` write (what a writer must hold the lease of)."""
    return {
        op.key[0] if not isinstance(op, CheckpointAdvance) else op.source_id for op in operations
    }


@dataclass(slots=True)
class RescueSummary:
    """What loading one rescue file did."""

    path: Path
    operations: int = 0
    pages: int = 0
    #: pages left as stored: the stored page was checked at or after the record's fetch
    already_stored: int = 0
    #: other operations on a page checked at or after their time, left out
    superseded: int = 0
    result: UpsertResult = field(default_factory=UpsertResult)
    #: where the file went once loaded (None: left where it was)
    renamed_to: Path | None = None

    def line(self) -> str:
        r = self.result
        others = self.operations - self.pages
        text = (
            f"{self.pages} pages ({len(r.inserted)} new, {len(r.changed)} changed, "
            f"{len(r.unchanged)} unchanged, {self.already_stored} stored already) and "
            f"{others} other operations ({self.superseded} stored already)"
        )
        if r.quarantined:
            text += f", {len(r.quarantined)} quarantined"
        if r.dropped_updates:
            text += f", {len(r.dropped_updates)} duplicate updates not applied"
        return text


def _when(op: Operation) -> str | None:
    """When a page-keyed operation observed its page (None: it has no time of its own)."""
    if isinstance(op, PageRecord):
        return op.fetched_at
    if isinstance(op, Touch | StatusChange | UrlOutcome):
        return op.checked_at
    if isinstance(op, FetchFailure):
        return op.failed_at
    return None


def _last_checks(store: Store, keys: Sequence[tuple[str, str]]) -> dict[tuple[str, str], str]:
    """The stored ``last_checked_at`` of the pages of ``keys`` that are stored."""
    found: dict[tuple[str, str], str] = {}
    for start in range(0, len(keys), 400):
        chunk = keys[start : start + 400]
        marks = " OR ".join("(source_id = ? AND canonical_url = ?)" for _ in chunk)
        params = [v for key in chunk for v in key]
        sql = f"SELECT source_id, canonical_url, last_checked_at FROM page_meta WHERE {marks}"
        for row in store.query(sql, params):
            found[(row[0], row[1])] = row[2]
    return found


def load_rescue(
    store: Store, path: Path, operations: Sequence[Operation], *, batch_size: int = 200
) -> RescueSummary:
    """Write ``operations`` (read from ``path``) through ``store`` in order, in batches of
    ``batch_size``, then rename the file ``FILE.loaded`` (a file so named stays).

    An operation on a stored page checked at or after the operation's own time (its
    fetch, check or failure) is left out: the page holds it already (the file was
    loaded before) or something newer (a crawl since), which it must not revert. No
    run's counters move: the rows were counted by no run, and loading twice must not
    count them twice. Store errors propagate; the file then stays where it is.
    """
    summary = RescueSummary(path=path, operations=len(operations))
    summary.pages = sum(isinstance(op, PageRecord) for op in operations)
    keyed = sorted({op.key for op in operations if _when(op) is not None})  # type: ignore[union-attr]
    checked = _last_checks(store, keyed)
    kept: list[Operation] = []
    for op in operations:
        when = _when(op)
        if when is not None and checked.get(op.key, "") >= when:  # type: ignore[union-attr]
            if isinstance(op, PageRecord):
                summary.already_stored += 1
            else:
                summary.superseded += 1
            continue
        kept.append(op)
    total = summary.result
    for start in range(0, len(kept), max(1, batch_size)):
        result = store.write(kept[start : start + batch_size])
        for f in dataclasses.fields(UpsertResult):
            mine = getattr(total, f.name)
            if isinstance(mine, list):
                mine.extend(getattr(result, f.name))
            else:
                setattr(total, f.name, mine + getattr(result, f.name))
    if not path.name.endswith(LOADED_SUFFIX):
        target = path.with_name(path.name + LOADED_SUFFIX)
        try:
            os.replace(path, target)
        except FileNotFoundError:  # another process of a shared crawl loaded it too
            pass
        else:
            summary.renamed_to = target
    return summary


def left_over_rescues(database_url: str, folder: str = "") -> Iterator[Path]:
    """The rescue files of ``database_url`` not loaded yet, oldest run first: beside a
    SQLite database, or for another database those of its name in ``folder``
    (``KC_RESCUE_DIR``), else the working folder (:func:`rescue_path`). None for an
    in-memory database."""
    if database_url.rstrip("/") in ("sqlite:", "sqlite:///:memory:"):
        return iter(())
    db = _stand_in(database_url, folder)
    if not db.parent.is_dir():
        return iter(())

    def order(path: Path) -> tuple[int, str]:
        run = _NAME.match(path.name)
        text = run.group("run") if run else ""
        return (int(text), "") if text.isdigit() else (1 << 62, text)

    files = [
        p
        for p in db.parent.glob(f"{glob_escape(db.name)}.unsaved-*.jsonl")
        if p.is_file() and _NAME.match(p.name)
    ]
    return iter(sorted(files, key=order))


def glob_escape(name: str) -> str:
    """``name`` with glob's special characters matched as themselves."""
    return re.sub(r"([*?\[])", r"[\1]", name)
