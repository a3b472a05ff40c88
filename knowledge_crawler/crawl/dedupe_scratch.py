"""A crawl's dedupe state outside its memory: a private temporary SQLite database.

:class:`ScratchDedupeState` is a :class:`knowledge_crawler.sync.dedupe.DedupeState`
whose maps and near-duplicate indexes are tables of a temporary database that
SQLite creates for this connection alone (``sqlite3.connect("")``) and deletes
when it is closed, or with the process. Its pages live in SQLite's page cache,
bounded by ``cache_kib``; the rest is in a file in SQLite's temporary directory
(``SQLITE_TMPDIR``, else ``TMPDIR``, else ``/var/tmp``, ``/usr/tmp``, ``/tmp``).
So the memory a crawl's dedupe needs stays the same however many pages it has
seen: about 1.2 KB a page goes to that file instead (signature, band entries,
content hash, decision).

Nothing here is the crawl's data: the state is rebuilt from the store by every
crawl (``DedupePolicy.restore``), so the file has no journal and is never synced.
One thread at a time uses it (the dedupe pipeline's thread).
"""

from __future__ import annotations

import pickle
from collections.abc import Callable, Iterable, Iterator, MutableMapping
from typing import Any, Generic, TypeVar

import numpy as np

from knowledge_crawler.crawl.scratch import Writes, connect_scratch
from knowledge_crawler.sync.dedupe import DuplicateState, Key
from knowledge_crawler.transform.minhash import (
    MinHashParams,
    Signature,
    SignatureLike,
    band_keys,
    check_signature,
    decode,
    is_empty,
    min_equal,
)

__all__ = ["ScratchDedupeState", "ScratchNearDuplicateIndex"]

K = TypeVar("K")
V = TypeVar("V")

#: SQLite's page cache for the scratch database, KiB (its memory, whatever the pages)
CACHE_KIB = 16 * 1024
#: signatures decoded and banded together while an index is restored
_RESTORE_CHUNK = 4096
_MISSING: Any = object()


def _key_text(key: Key) -> str:
    return f"{key[0]}\x00{key[1]}"


def _text_key(text: str) -> Key:
    source, _, url = text.partition("\x00")
    return (source, url)


def _same(value: Any) -> Any:
    return value


def _dup_blob(dup: DuplicateState) -> bytes:
    return pickle.dumps(
        (dup.content_hash, dup.minhash, dup.words, dup.rep, dup.kind, dup.score), protocol=5
    )


def _blob_dup(blob: bytes) -> DuplicateState:
    return DuplicateState(*pickle.loads(blob))


class ScratchMap(MutableMapping[K, V], Generic[K, V]):
    """A dict in a table ``(k TEXT PRIMARY KEY, v)``, keys and values through codecs.

    ``len`` is counted as entries come and go (no table scan)."""

    def __init__(
        self,
        writes: Writes,
        table: str,
        key: tuple[Callable[[K], str], Callable[[str], K]],
        value: tuple[Callable[[V], Any], Callable[[Any], V]],
    ) -> None:
        self._con = con = writes.con
        self._writes = writes
        self._kenc, self._kdec = key
        self._venc, self._vdec = value
        con.execute(f"CREATE TABLE {table} (k TEXT PRIMARY KEY, v NOT NULL) WITHOUT ROWID")
        self._select = f"SELECT v FROM {table} WHERE k = ?"
        self._update = f"UPDATE {table} SET v = ? WHERE k = ?"
        self._insert = f"INSERT INTO {table} (k, v) VALUES (?, ?)"
        self._insert_new = f"INSERT OR IGNORE INTO {table} (k, v) VALUES (?, ?)"
        self._delete = f"DELETE FROM {table} WHERE k = ? RETURNING v"
        self._keys = f"SELECT k FROM {table}"
        self._len = 0

    def get(self, key: K, default: Any = None) -> Any:
        row = self._con.execute(self._select, (self._kenc(key),)).fetchone()
        return default if row is None else self._vdec(row[0])

    def __getitem__(self, key: K) -> V:
        row = self._con.execute(self._select, (self._kenc(key),)).fetchone()
        if row is None:
            raise KeyError(key)
        return self._vdec(row[0])

    def __contains__(self, key: object) -> bool:
        try:
            text = self._kenc(key)  # type: ignore[arg-type]
        except (TypeError, IndexError):
            return False
        return self._con.execute(self._select, (text,)).fetchone() is not None

    def __setitem__(self, key: K, value: V) -> None:
        text, stored = self._kenc(key), self._venc(value)
        if self._con.execute(self._update, (stored, text)).rowcount == 0:
            self._con.execute(self._insert, (text, stored))
            self._len += 1
        self._writes.done()

    def setdefault(self, key: K, default: Any = None) -> Any:
        text = self._kenc(key)
        if self._con.execute(self._insert_new, (text, self._venc(default))).rowcount:
            self._len += 1
            self._writes.done()
            return default
        return self[key]

    def __delitem__(self, key: K) -> None:
        self.pop(key)

    def pop(self, key: K, default: Any = _MISSING) -> Any:
        rows = self._con.execute(self._delete, (self._kenc(key),)).fetchall()
        if not rows:
            if default is _MISSING:
                raise KeyError(key)
            return default
        self._len -= 1
        self._writes.done()
        return self._vdec(rows[0][0])

    def __iter__(self) -> Iterator[K]:
        for (text,) in self._con.execute(self._keys).fetchall():
            yield self._kdec(text)

    def __len__(self) -> int:
        return self._len


class _ScratchDependents:
    """Representative -> its duplicates, as ``(rep, k)`` rows."""

    def __init__(self, writes: Writes, table: str = "dependents") -> None:
        self._con = writes.con
        self._writes = writes
        self._con.execute(
            f"CREATE TABLE {table} (rep TEXT NOT NULL, k TEXT NOT NULL, PRIMARY KEY (rep, k))"
            " WITHOUT ROWID"
        )
        self._add = f"INSERT OR IGNORE INTO {table} (rep, k) VALUES (?, ?)"
        self._discard = f"DELETE FROM {table} WHERE rep = ? AND k = ?"
        self._of = f"SELECT k FROM {table} WHERE rep = ?"

    def add(self, rep: Key, key: Key) -> None:
        self._con.execute(self._add, (_key_text(rep), _key_text(key)))
        self._writes.done()

    def discard(self, rep: Key, key: Key) -> None:
        self._con.execute(self._discard, (_key_text(rep), _key_text(key)))
        self._writes.done()

    def of(self, rep: Key) -> list[Key]:
        rows = self._con.execute(self._of, (_key_text(rep),))
        return [_text_key(text) for (text,) in rows.fetchall()]


class ScratchNearDuplicateIndex:
    """Banded MinHash LSH in two tables: the signatures, and one row per band entry.

    The same candidates and answers as ``MemoryNearDuplicateIndex`` with the same
    params: a candidate shares a band key (``minhash.band_keys``) and is confirmed
    by its estimated Jaccard (``>= params.threshold``), best first, then by key.
    A signature of a text without words is kept but never matches anything.
    """

    def __init__(self, writes: Writes, name: str, params: MinHashParams) -> None:
        self.params = params
        self._con = con = writes.con
        self._writes = writes
        self._bands, self._rows = params.bands_rows
        self._min_equal = min_equal(params.threshold, params.num_perm)
        self._sig, self._band = f"{name}_sig", f"{name}_band"
        con.execute(
            f"CREATE TABLE {self._sig} (id INTEGER PRIMARY KEY, k TEXT NOT NULL UNIQUE,"
            " hv BLOB NOT NULL)"
        )
        con.execute(
            f"CREATE TABLE {self._band} (b INTEGER NOT NULL, id INTEGER NOT NULL,"
            " PRIMARY KEY (b, id)) WITHOUT ROWID"
        )
        self._len = 0
        self._last: tuple[bytes, list[int]] = (b"", [])

    def _keys(self, matrix: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
        """(n, bands) band keys as SQLite's signed 64-bit integers."""
        return band_keys(matrix, self._bands, self._rows).view(np.int64)

    def _keys_of(self, hv: np.ndarray[Any, Any]) -> list[int]:
        """One signature's band keys; the last one's are kept, as a page is looked up
        (``query``) and then indexed (``add``) with the same signature."""
        blob = hv.tobytes()
        if blob != self._last[0]:
            self._last = (blob, self._keys(hv[None, :])[0].tolist())
        return self._last[1]

    def _store(self, keys: list[Key], matrix: np.ndarray[Any, Any]) -> None:
        """Index the rows of ``matrix`` (uint32) under ``keys`` (no key indexed yet)."""
        con, sig, band = self._con, self._sig, self._band
        ids: list[int] = []
        for key, hv in zip(keys, matrix, strict=True):
            cur = con.execute(
                f"INSERT INTO {sig} (k, hv) VALUES (?, ?)", (_key_text(key), hv.tobytes())
            )
            assert cur.lastrowid is not None
            ids.append(cur.lastrowid)
        live = ~np.all(matrix == np.uint32(0xFFFFFFFF), axis=1)
        entries: list[tuple[int, int]] = []
        if len(ids) == 1:
            if live[0]:
                entries = [(b, ids[0]) for b in self._keys_of(matrix[0])]
        else:
            for row_id, row_keys in zip(
                np.asarray(ids)[live].tolist(), self._keys(matrix[live]).tolist(), strict=True
            ):
                entries.extend((b, row_id) for b in row_keys)
        con.executemany(f"INSERT OR IGNORE INTO {band} (b, id) VALUES (?, ?)", entries)
        self._len += len(keys)
        self._writes.done(len(keys) + len(entries))

    def add(self, key: Key, sig: SignatureLike) -> None:
        check_signature(sig, self.params)
        self.remove(key)
        hv = np.asarray(sig.hashvalues, dtype=np.uint32)
        self._store([key], hv[None, :])

    def remove(self, key: Key) -> None:
        row = self._con.execute(
            f"DELETE FROM {self._sig} WHERE k = ? RETURNING id, hv", (_key_text(key),)
        ).fetchall()
        if not row:
            return
        row_id, blob = row[0]
        hv = np.frombuffer(blob, dtype=np.uint32)
        self._len -= 1
        entries = 0
        if not is_empty(Signature(self.params.seed, hv)):
            keys = self._keys_of(hv)
            self._con.executemany(
                f"DELETE FROM {self._band} WHERE b = ? AND id = ?", [(b, row_id) for b in keys]
            )
            entries = len(keys)
        self._writes.done(1 + entries)

    def query(self, sig: SignatureLike) -> list[tuple[Key, float]]:
        check_signature(sig, self.params)
        hv = np.asarray(sig.hashvalues, dtype=np.uint32)
        if bool(np.all(hv == np.uint32(0xFFFFFFFF))):
            return []
        keys = self._keys_of(hv)
        marks = ",".join("?" * len(keys))
        found = self._con.execute(
            f"SELECT k, hv FROM {self._sig} WHERE id IN"
            f" (SELECT id FROM {self._band} WHERE b IN ({marks}))",
            keys,
        ).fetchall()
        if not found:
            return []
        matrix = np.frombuffer(b"".join(blob for _, blob in found), dtype=np.uint32)
        equal = np.count_nonzero(matrix.reshape(len(found), -1) == hv, axis=1)
        n = len(hv)
        result = [
            (_text_key(text), count / n)
            for (text, _), count in zip(found, equal.tolist(), strict=True)
            if count >= self._min_equal
        ]
        result.sort(key=lambda item: (-item[1], item[0]))
        return result

    def values(self, key: Key) -> Signature | None:
        row = self._con.execute(
            f"SELECT hv FROM {self._sig} WHERE k = ?", (_key_text(key),)
        ).fetchone()
        if row is None:
            return None
        return Signature(self.params.seed, np.frombuffer(row[0], dtype=np.uint32).copy())

    def __contains__(self, key: object) -> bool:
        if not isinstance(key, tuple):
            return False
        found = self._con.execute(
            f"SELECT 1 FROM {self._sig} WHERE k = ?", (_key_text(key),)
        ).fetchone()
        return found is not None

    def __len__(self) -> int:
        return self._len

    def restore(
        self, rows: Iterable[tuple[Key, bytes, str]], *, allow_rebanding: bool = True
    ) -> None:
        """Index stored ``(key, signature bytes, params fingerprint)`` rows; a key
        repeated keeps its last signature. Raises ``ParamsMismatchError`` as
        ``MemoryNearDuplicateIndex.restore`` does."""
        accepted: set[str] = set()
        keys: list[Key] = []
        sigs: list[np.ndarray[Any, Any]] = []
        for key, data, fingerprint in rows:
            if fingerprint not in accepted:
                self.params.check_fingerprint(fingerprint, allow_rebanding=allow_rebanding)
                accepted.add(fingerprint)
            sig = decode(bytes(data))
            check_signature(sig, self.params)
            keys.append(key)
            sigs.append(np.asarray(sig.hashvalues, dtype=np.uint32))
            if len(keys) == _RESTORE_CHUNK:
                self._restore_chunk(keys, sigs)
                keys, sigs = [], []
        self._restore_chunk(keys, sigs)

    def _restore_chunk(self, keys: list[Key], sigs: list[np.ndarray[Any, Any]]) -> None:
        if not keys:
            return
        if len(set(keys)) != len(keys) or any(key in self for key in keys):
            for key, hv in zip(keys, sigs, strict=True):  # repeated keys: one by one
                self.remove(key)
                self._store([key], hv[None, :])
            return
        self._store(keys, np.stack(sigs))


class ScratchDedupeState:
    """A :class:`~knowledge_crawler.sync.dedupe.DedupeState` in a temporary SQLite
    database (see the module's docstring). :meth:`close` deletes it."""

    def __init__(self, cache_kib: int = CACHE_KIB, *, max_bytes: int | None = None) -> None:
        """``max_bytes``: the largest the file may grow; past it a write fails with
        ``sqlite3.OperationalError`` ("database or disk is full"), as on a full disk."""
        con = connect_scratch(cache_kib, max_bytes=max_bytes)
        self._con = con
        self._writes = Writes(con)
        key_codec = (_key_text, _text_key)
        self.rank: ScratchMap[Key, int] = ScratchMap(
            self._writes, "rank", key_codec, (_same, _same)
        )
        self.hash_of: ScratchMap[Key, str] = ScratchMap(
            self._writes, "hash_of", key_codec, (_same, _same)
        )
        self.by_hash: ScratchMap[str, Key] = ScratchMap(
            self._writes, "by_hash", (_same, _same), (_key_text, _text_key)
        )
        self.duplicates: ScratchMap[Key, DuplicateState] = ScratchMap(
            self._writes, "duplicates", key_codec, (_dup_blob, _blob_dup)
        )
        self.dependents = _ScratchDependents(self._writes)
        self.inlinks: ScratchMap[Key, int] = ScratchMap(
            self._writes, "inlinks", key_codec, (_same, _same)
        )
        self.canonical_of: ScratchMap[Key, str] = ScratchMap(
            self._writes, "canonical_of", key_codec, (_same, _same)
        )
        self.named_by = _ScratchDependents(self._writes, "named_by")
        self._indexes = 0

    def restore_index(
        self,
        params: MinHashParams,
        rows: list[tuple[Key, bytes, str]],
        *,
        allow_rebanding: bool = True,
    ) -> ScratchNearDuplicateIndex:
        self._indexes += 1
        index = ScratchNearDuplicateIndex(self._writes, f"lsh{self._indexes}", params)
        index.restore(rows, allow_rebanding=allow_rebanding)
        return index

    def file_bytes(self) -> int:
        """The size of the database (its pages), in bytes."""
        (count,) = self._con.execute("PRAGMA page_count").fetchone()
        (size,) = self._con.execute("PRAGMA page_size").fetchone()
        return int(count) * int(size)

    def close(self) -> None:
        """Drop the database (SQLite deletes its file)."""
        self._con.close()
