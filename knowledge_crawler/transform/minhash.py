"""Near-duplicate detection core: word-shingle MinHash signatures and an LSH index.

Pure module (stdlib, numpy, datasketch): no Scrapy, no database.

Pipeline summary
----------------
* ``shingles(text, k)``: the text is lowercased and split into ``\\w+`` tokens; the
  shingles are the runs of ``k`` consecutive tokens (a text shorter than ``k`` words
  yields one shingle of all its words, a text with no word yields none). Similarity
  is the Jaccard index of the two shingle *sets*.
* ``signature`` / ``signatures``: datasketch ``affine32`` MinHash (128 permutations by
  default) of the shingle set. Hashing is vectorised: every word is hashed once
  (CRC-32 of its UTF-8 bytes), the ``k`` word hashes of a shingle are combined with
  a 64-bit mixer in numpy, and the datasketch permutations ``a * fmix32(h) + b``
  (mod 2**32) are applied to all shingles of a batch of texts at once. The result is
  bit-for-bit the signature that ``datasketch.MinHash(hashfunc=shingle_hash)`` fed
  with ``shingles(text, k)`` would produce (see ``shingle_hash`` and the tests).
* ``to_bytes`` / ``from_bytes``: the datasketch ``LeanMinHash`` byte format in little
  endian (8-byte seed, 4-byte negated count, 1-byte scheme code, uint32 values):
  525 bytes for 128 permutations.
* ``MemoryNearDuplicateIndex``: banded LSH with datasketch ``MinHashLSH``'s candidate
  rule and banding, stored compactly (one uint32 matrix + one dict per band), plus
  confirmation of candidates by their estimated Jaccard.
  ``NearDuplicateIndex`` is the interface an index implements (the processes of a
  shared crawl keep their copies in step through ``knowledge_crawler.crawl.dedupe_log``).

Signatures depend on ``(algorithm version, num_perm, seed, shingle_size)``; the LSH
banding only on ``(threshold, num_perm, weights)``. ``MinHashParams.fingerprint()``
records both and is stored next to each signature.
"""

from __future__ import annotations

import functools
import re
import struct
import sys
import zlib
from collections.abc import Iterable, Iterator, Sequence, Sized
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, NamedTuple, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:  # datasketch (and the SciPy it imports) loads only where signatures are made
    from datasketch import LeanMinHash

__all__ = [
    "DEFAULT",
    "FINGERPRINT_VERSION",
    "IndexKey",
    "MemoryNearDuplicateIndex",
    "MinHashParams",
    "NearDuplicateIndex",
    "ParamsMismatchError",
    "Signature",
    "SignatureLike",
    "band_keys",
    "check_signature",
    "decode",
    "from_bytes",
    "is_empty",
    "jaccard",
    "min_equal",
    "shingle_hash",
    "shingles",
    "signature",
    "signatures",
    "to_bytes",
    "tokens",
]

#: Version of the shingling + hashing algorithm; bump on any change that alters
#: signature values so stored signatures are refused instead of silently mixed.
FINGERPRINT_VERSION: Final = "mh1"

_SCHEME: Final = "affine32"
_SCHEME_CODE: Final = 1  # datasketch's LeanMinHash byte-format code for affine32
_HEADER: Final = struct.Struct("<qiB")  # seed, -num_perm, scheme code
_U32_MAX: Final = np.uint32(0xFFFFFFFF)
_TOKEN_RE: Final = re.compile(r"\w+")

# 64-bit mixing constants (splitmix64 / MurmurHash3 fmix64) for combining word hashes.
_MIX_SEED: Final = np.uint64(0x9E3779B97F4A7C15)
_MIX_MUL: Final = np.uint64(0xBF58476D1CE4E5B9)
_FMIX64: Final = (np.uint64(33), np.uint64(0xFF51AFD7ED558CCD), np.uint64(0xC4CEB9FE1A85EC53))
_FMIX32: Final = (np.uint32(16), np.uint32(0x85EBCA6B), np.uint32(13), np.uint32(0xC2B2AE35))
# Rows of the (shingles x permutations) matrix computed at once by ``signatures``.
_CHUNK_ROWS: Final = 4096
#: band entries the index lets wait in its dict (or stay stale) before it sorts them in
_MIN_REBUILD: Final = 4096
# Stored signatures decoded / band-hashed at once by ``MemoryNearDuplicateIndex.restore``.
_RESTORE_CHUNK: Final = 16384

U32Array = npt.NDArray[np.uint32]
#: what an index files a signature under (a string, or a page's (source, URL) tuple)
IndexKey = str | tuple[str, str]
U64Array = npt.NDArray[np.uint64]


class SignatureLike(Protocol):
    """What the index and the byte form read of a signature: a ``LeanMinHash`` is one."""

    @property
    def seed(self) -> int: ...
    @property
    def hashvalues(self) -> npt.NDArray[np.uint32] | npt.NDArray[np.uint64]: ...
    @property
    def scheme(self) -> str: ...


class Signature(NamedTuple):
    """A stored signature's values without datasketch (:func:`decode`): what the dedupe
    decisions of a crawl need, so the crawl process never imports datasketch and SciPy."""

    seed: int
    hashvalues: npt.NDArray[np.uint32]
    scheme: str = "affine32"


class ParamsMismatchError(ValueError):
    """Stored signatures were made with other MinHash parameters than the current ones."""


# --------------------------------------------------------------------------- params


@functools.lru_cache(maxsize=64)
def _optimal_banding(
    threshold: float, num_perm: int, weights: tuple[float, float]
) -> tuple[int, int]:
    """datasketch's ``_optimal_param`` criterion, restricted to ``b >= 2`` bands.

    Minimises ``fp_weight * FP + fn_weight * FN`` where FP is the area under the
    candidate probability ``1 - (1 - s**r)**b`` below ``threshold`` and FN the area
    above ``threshold`` under its complement (numpy trapezoid integration).
    """
    fp_w, fn_w = weights
    below = np.linspace(0.0, threshold, 1001)
    above = np.linspace(threshold, 1.0, 1001)
    best, best_err = (2, max(1, num_perm // 2)), float("inf")
    for b in range(2, num_perm + 1):
        for r in range(1, num_perm // b + 1):
            fp = float(np.trapezoid(1.0 - (1.0 - below**r) ** b, below))
            fn = float(np.trapezoid((1.0 - above**r) ** b, above))
            err = fp * fp_w + fn * fn_w
            if err < best_err - 1e-15:
                best, best_err = (b, r), err
    return best


@dataclass(frozen=True, slots=True)
class MinHashParams:
    """MinHash + LSH parameters. Validated at construction.

    ``weights`` are datasketch's ``(false_positive_weight, false_negative_weight)`` used
    to pick the LSH banding for ``threshold``. The default strongly favours recall:
    every LSH candidate is confirmed by its estimated Jaccard afterwards, so extra
    candidates only cost a vector comparison, while a missed candidate is lost.
    ``banding`` pins ``(bands, rows)`` explicitly instead.
    """

    num_perm: int = 128
    seed: int = 1
    shingle_size: int = 3
    threshold: float = 0.85
    weights: tuple[float, float] = (0.05, 0.95)
    banding: tuple[int, int] | None = None

    def __post_init__(self) -> None:
        if isinstance(self.num_perm, bool) or not isinstance(self.num_perm, int):
            raise TypeError("num_perm must be an int")
        if self.num_perm < 2:
            raise ValueError(f"num_perm must be >= 2, got {self.num_perm}")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int):
            raise TypeError("seed must be an int")
        if not 0 <= self.seed < 2**32:
            raise ValueError(f"seed must be in [0, 2**32), got {self.seed}")
        if isinstance(self.shingle_size, bool) or not isinstance(self.shingle_size, int):
            raise TypeError("shingle_size must be an int")
        if self.shingle_size < 1:
            raise ValueError(f"shingle_size must be >= 1, got {self.shingle_size}")
        if not isinstance(self.threshold, int | float) or not 0.0 < self.threshold <= 1.0:
            raise ValueError(f"threshold must be in (0, 1], got {self.threshold!r}")
        fp_w, fn_w = self.weights
        if not (0.0 <= fp_w <= 1.0 and 0.0 <= fn_w <= 1.0) or abs(fp_w + fn_w - 1.0) > 1e-9:
            raise ValueError(f"weights must be in [0, 1] and sum to 1, got {self.weights!r}")
        b, r = self.bands_rows
        if b < 2 or r < 1 or b * r > self.num_perm:
            raise ValueError(
                f"LSH banding (b={b}, r={r}) invalid for num_perm={self.num_perm}: "
                "need b >= 2, r >= 1 and b * r <= num_perm"
            )

    @property
    def bands_rows(self) -> tuple[int, int]:
        if self.banding is not None:
            return (int(self.banding[0]), int(self.banding[1]))
        return _optimal_banding(float(self.threshold), self.num_perm, tuple(self.weights))

    @property
    def bands(self) -> int:
        return self.bands_rows[0]

    @property
    def rows(self) -> int:
        return self.bands_rows[1]

    def signature_fingerprint(self) -> str:
        """What the signature values depend on: ``"mh1:p128:s1:k3"``."""
        return f"{FINGERPRINT_VERSION}:p{self.num_perm}:s{self.seed}:k{self.shingle_size}"

    def fingerprint(self) -> str:
        """Stable string stored with each signature: ``"mh1:p128:s1:k3:b12:r10"``."""
        return f"{self.signature_fingerprint()}:b{self.bands}:r{self.rows}"

    def check_fingerprint(self, fingerprint: str, *, allow_rebanding: bool = True) -> None:
        """Raise ``ParamsMismatchError`` if signatures stamped ``fingerprint`` can't be used.

        With ``allow_rebanding`` (default) only the signature part must match: an
        in-memory index is rebuilt from the signatures, so a changed threshold or
        banding needs no recomputation. Otherwise the whole fingerprint must match.
        """
        expected = self.fingerprint() if not allow_rebanding else self.signature_fingerprint()
        got = fingerprint if not allow_rebanding else _signature_part(fingerprint)
        if got != expected:
            raise ParamsMismatchError(
                f"signature made with MinHash params {fingerprint!r}, "
                f"current params are {self.fingerprint()!r}"
            )


def _signature_part(fingerprint: str) -> str:
    return ":".join(fingerprint.split(":")[:4])


DEFAULT: Final = MinHashParams()


# --------------------------------------------------------------------------- shingles


def tokens(text: str) -> list[str]:
    """Normalised words: ``\\w+`` runs of the lowercased text."""
    return _TOKEN_RE.findall(text.lower())


def shingles(text: str, k: int) -> list[bytes]:
    """Word ``k``-shingles (UTF-8, words joined by one space) in text order, repeats kept.

    A text with fewer than ``k`` words gives one shingle of all its words; a text
    without words gives ``[]``.
    """
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    words = tokens(text)
    if not words:
        return []
    if len(words) <= k:
        return [" ".join(words).encode()]
    return [" ".join(words[i : i + k]).encode() for i in range(len(words) - k + 1)]


def _word_hashes(words: Sequence[str]) -> U64Array:
    return np.fromiter(map(zlib.crc32, map(str.encode, words)), dtype=np.uint64, count=len(words))


def _fmix64(h: U64Array) -> U64Array:
    s, m1, m2 = _FMIX64
    h = h ^ (h >> s)
    h = h * m1
    h = h ^ (h >> s)
    h = h * m2
    return h ^ (h >> s)


def _combine(word_hashes: U64Array, k: int) -> U32Array:
    """32-bit hash of each run of ``k`` word hashes (one run if fewer than ``k``)."""
    n = len(word_hashes)
    k = min(k, n)
    m = n - k + 1
    h: U64Array = np.full(m, _MIX_SEED, dtype=np.uint64)
    for j in range(k):
        h = _fmix64((h ^ word_hashes[j : j + m]) * _MIX_MUL)
    return (h >> np.uint64(32)).astype(np.uint32)


def shingle_hash(shingle: bytes) -> int:
    """Reference (scalar) hash of one shingle as produced by ``shingles``.

    ``datasketch.MinHash(num_perm, seed, hashfunc=shingle_hash)`` updated with
    ``shingles(text, k)`` gives the same hash values as ``signature(text)``.
    """
    words = shingle.split(b" ")
    wh = np.array([zlib.crc32(w) for w in words], dtype=np.uint64)
    return int(_combine(wh, len(words))[0])


def _fmix32(h: U32Array) -> U32Array:
    s1, m1, s2, m2 = _FMIX32
    h = h ^ (h >> s1)
    h = h * m1
    h = h ^ (h >> s2)
    h = h * m2
    return h ^ (h >> s1)


@functools.lru_cache(maxsize=16)
def _permutations(num_perm: int, seed: int) -> tuple[U32Array, U32Array]:
    from datasketch import MinHash

    perm = MinHash(num_perm=num_perm, seed=seed, scheme=_SCHEME).permutations
    a = np.ascontiguousarray(perm[0], dtype=np.uint32)
    b = np.ascontiguousarray(perm[1], dtype=np.uint32)
    a.setflags(write=False)
    b.setflags(write=False)
    return a, b


def _lean(seed: int, hashvalues: U32Array) -> LeanMinHash:
    # Equivalent to LeanMinHash(seed=..., hashvalues=..., scheme="affine32") minus its
    # per-call validation (~9 us), which matters when restoring 100k signatures.
    from datasketch import LeanMinHash

    lean = object.__new__(LeanMinHash)
    lean.seed = seed
    lean.scheme = _SCHEME
    lean.hashvalues = hashvalues
    return lean


def _text_shingle_hashes(text: str, k: int) -> U32Array:
    words = tokens(text)
    if not words:
        return np.empty(0, dtype=np.uint32)
    return _combine(_word_hashes(words), k)


def _minhash_rows(hashes: U32Array, a: U32Array, b: U32Array) -> U32Array:
    """(len(hashes), num_perm) matrix of permuted hash values."""
    out: U32Array = np.multiply.outer(_fmix32(hashes), a)
    out += b
    return out


def signature(text: str, params: MinHashParams = DEFAULT) -> LeanMinHash:
    """MinHash signature of the word shingles of ``text``."""
    return signatures([text], params)[0]


def signatures(texts: Sequence[str], params: MinHashParams = DEFAULT) -> list[LeanMinHash]:
    """Signatures of many texts, computed in numpy batches of shingles."""
    a, b = _permutations(params.num_perm, params.seed)
    per_text = [_text_shingle_hashes(t, params.shingle_size) for t in texts]
    out: list[LeanMinHash] = []
    for chunk in _chunks(per_text):
        out.extend(_lean(params.seed, hv) for hv in _chunk_signatures(chunk, a, b))
    return out


def _chunks(per_text: list[U32Array]) -> Iterator[list[U32Array]]:
    chunk: list[U32Array] = []
    rows = 0
    for hashes in per_text:
        if chunk and rows + len(hashes) > _CHUNK_ROWS:
            yield chunk
            chunk, rows = [], 0
        chunk.append(hashes)
        rows += len(hashes)
    if chunk:
        yield chunk


def _chunk_signatures(chunk: list[U32Array], a: U32Array, b: U32Array) -> list[U32Array]:
    num_perm = len(a)
    lengths = np.fromiter((len(h) for h in chunk), dtype=np.int64, count=len(chunk))
    result: U32Array = np.full((len(chunk), num_perm), _U32_MAX, dtype=np.uint32)
    nonempty = lengths > 0
    if nonempty.any():
        matrix = _minhash_rows(np.concatenate(chunk), a, b)
        ends = np.cumsum(lengths)
        for i in np.flatnonzero(nonempty):
            matrix[ends[i] - lengths[i] : ends[i]].min(axis=0, out=result[i])
    return list(result)


def is_empty(sig: SignatureLike) -> bool:
    """True for the signature of a text without words (all values at the maximum)."""
    return bool(np.all(sig.hashvalues == _U32_MAX))


def jaccard(a: SignatureLike, b: SignatureLike) -> float:
    """Estimated Jaccard similarity (fraction of equal hash values)."""
    if len(a.hashvalues) != len(b.hashvalues) or a.seed != b.seed:
        raise ValueError("cannot compare signatures with different num_perm or seed")
    return float(np.count_nonzero(a.hashvalues == b.hashvalues)) / len(a.hashvalues)


# --------------------------------------------------------------------------- bytes


def to_bytes(sig: SignatureLike) -> bytes:
    """Compact little-endian bytes (datasketch LeanMinHash format, 13 + 4 * num_perm)."""
    if getattr(sig, "scheme", None) != _SCHEME:
        raise ValueError(f"only {_SCHEME} signatures are supported, got {sig.scheme!r}")
    hv = np.asarray(sig.hashvalues, dtype="<u4")
    return _HEADER.pack(int(sig.seed), -len(hv), _SCHEME_CODE) + hv.tobytes()


def from_bytes(data: bytes) -> LeanMinHash:
    """Inverse of ``to_bytes``; raises ``ValueError`` on a malformed buffer."""
    sig = decode(data)
    return _lean(sig.seed, sig.hashvalues)


def decode(data: bytes) -> Signature:
    """:func:`from_bytes` as a :class:`Signature`, without datasketch; ``ValueError`` likewise."""
    if len(data) < _HEADER.size:
        raise ValueError(f"signature too short: {len(data)} bytes")
    seed, neg_count, code = _HEADER.unpack_from(data)
    if neg_count >= 0 or code != _SCHEME_CODE:
        raise ValueError("not an affine32 LeanMinHash signature")
    num_perm = -neg_count
    if len(data) != _HEADER.size + 4 * num_perm:
        raise ValueError(
            f"signature length {len(data)} does not match {num_perm} hash values "
            f"({_HEADER.size + 4 * num_perm} bytes expected)"
        )
    hv = np.frombuffer(data, dtype="<u4", offset=_HEADER.size).astype(np.uint32)
    return Signature(int(seed), hv)


# --------------------------------------------------------------------------- index


@runtime_checkable
class NearDuplicateIndex(Protocol):
    """A near-duplicate index (:class:`MemoryNearDuplicateIndex` is one)."""

    params: MinHashParams

    def add(self, key: IndexKey, sig: SignatureLike) -> None:
        """Index ``sig`` under ``key``, replacing any signature already stored for it."""
        ...

    def remove(self, key: IndexKey) -> None:
        """Forget ``key``; a no-op if it is unknown."""
        ...

    def query(self, sig: SignatureLike) -> list[tuple[IndexKey, float]]:
        """Keys whose estimated Jaccard with ``sig`` is >= threshold, best first.

        Does not exclude anything: a key indexed with ``sig`` itself is returned.
        """
        ...

    def __contains__(self, key: object) -> bool: ...

    def __len__(self) -> int: ...


class MemoryNearDuplicateIndex:
    """In-memory banded MinHash LSH with the params' ``(bands, rows)``, plus the signatures.

    Same candidate rule as ``datasketch.MinHashLSH(params=(b, r))`` (two signatures
    are candidates when all ``r`` values of one of the first ``b`` bands are equal),
    but stored compactly: signatures in one ``uint32`` matrix (``4 * num_perm`` bytes
    a row), and the bands as one sorted array of 64-bit keys (a hash of a band's
    values and its number) beside the rows they come from, 12 bytes an entry; the
    entries added since the array was last built wait in a dict, and a removed row's
    entries stay until then. Every candidate is confirmed by its estimated Jaccard
    (>= ``params.threshold``) on the matrix as it is now, so a stale entry can only
    propose a row, never decide. The array is built again (from the matrix) once the
    dict or the stale entries grow past an eighth of it: what a signature costs stays
    near ``4 * num_perm + 12 * bands`` bytes, not a dict entry a band.
    The signature of a text without words is remembered but never matches anything.
    Keys are any hashable, ordered values (strings, tuples of strings), one kind an index.
    """

    def __init__(self, params: MinHashParams = DEFAULT, *, capacity: int = 1024) -> None:
        self.params = params
        self._bands, self._rows = params.bands_rows
        self._matrix: U32Array = np.empty((max(capacity, 16), params.num_perm), dtype=np.uint32)
        self._used = 0  # rows of _matrix handed out so far
        self._row_of: dict[IndexKey, int] = {}
        self._key_of: list[IndexKey | None] = []
        self._free: list[int] = []
        #: the band entries as built last: sorted keys, and the row of each
        self._skeys: U64Array = np.empty(0, dtype=np.uint64)
        self._srows: npt.NDArray[np.int32] = np.empty(0, dtype=np.int32)
        #: band entries added since: key -> row(s)
        self._recent: dict[int, int | list[int]] = {}
        #: entries of the sorted array whose row was removed since it was built
        self._stale = 0
        # minimum number of equal hash values for estimated Jaccard >= threshold
        self._min_equal = min_equal(params.threshold, params.num_perm)

    # -- construction from storage

    @classmethod
    def restore(
        cls,
        params: MinHashParams,
        rows: Iterable[tuple[IndexKey, bytes, str]],
        *,
        allow_rebanding: bool = True,
    ) -> MemoryNearDuplicateIndex:
        """Build an index from stored ``(key, signature bytes, params fingerprint)`` rows.

        Raises ``ParamsMismatchError`` if a row's fingerprint (or its decoded signature)
        does not match ``params``; see ``MinHashParams.check_fingerprint`` for
        ``allow_rebanding``. A key repeated in ``rows`` keeps its last signature.
        """
        index = cls(params, capacity=len(rows) if isinstance(rows, Sized) else 1024)
        accepted: set[str] = set()
        keys: list[IndexKey] = []
        blobs: list[bytes] = []
        for key, data, fingerprint in rows:
            if fingerprint not in accepted:
                params.check_fingerprint(fingerprint, allow_rebanding=allow_rebanding)
                accepted.add(fingerprint)
            keys.append(key)
            blobs.append(bytes(data))
            if len(keys) == _RESTORE_CHUNK:
                index._load_chunk(keys, blobs)
                keys, blobs = [], []
        index._load_chunk(keys, blobs)
        index._index_loaded_rows()
        return index

    def _load_chunk(self, keys: list[IndexKey], blobs: list[bytes]) -> None:
        """Decode signatures into the matrix; the band tables are filled afterwards."""
        if not keys:
            return
        decoded = _decode_many(keys, blobs, self.params)
        self._ensure_capacity(len(keys))
        first = self._used
        self._matrix[first : first + len(keys)] = decoded
        self._used += len(keys)
        for row, key in enumerate(keys, start=first):
            old = self._row_of.get(key)
            if old is not None:  # repeated key: the last row wins
                self._key_of[old] = None
                self._free.append(old)
            self._row_of[key] = row
            self._key_of.append(key)

    def _index_loaded_rows(self) -> None:
        self._rebuild()

    def _rebuild(self) -> None:
        """The sorted band entries again, from the live rows of the matrix."""
        keys: list[U64Array] = []
        rows: list[npt.NDArray[np.int32]] = []
        live_key = np.fromiter(
            (k is not None for k in self._key_of), dtype=bool, count=len(self._key_of)
        )
        for start in range(0, self._used, _RESTORE_CHUNK):
            stop = min(start + _RESTORE_CHUNK, self._used)
            block = self._matrix[start:stop]
            ids = np.flatnonzero(~np.all(block == _U32_MAX, axis=1) & live_key[start:stop])
            if not len(ids):
                continue
            keys.append(self._entry_keys(block[ids]).ravel())
            rows.append(np.repeat((ids + start).astype(np.int32), self._bands))
        all_keys = np.concatenate(keys) if keys else np.empty(0, dtype=np.uint64)
        all_rows = np.concatenate(rows) if rows else np.empty(0, dtype=np.int32)
        order = np.argsort(all_keys, kind="stable")
        self._skeys, self._srows = all_keys[order], all_rows[order]
        self._recent = {}
        self._stale = 0

    def _entry_keys(self, matrix: U32Array) -> U64Array:
        """(n, bands) keys of the band entries of each row: band hash and band number."""
        return band_keys(matrix, self._bands, self._rows)

    def _maybe_rebuild(self) -> None:
        limit = max(_MIN_REBUILD, len(self._skeys) // 8)
        if len(self._recent) > limit or self._stale > limit:
            self._rebuild()

    # -- internals

    def _ensure_capacity(self, extra: int) -> None:
        need = self._used + extra
        if need > len(self._matrix):
            grown = np.empty((max(need, 2 * len(self._matrix)), self.params.num_perm), np.uint32)
            grown[: self._used] = self._matrix[: self._used]
            self._matrix = grown

    def _check(self, sig: SignatureLike) -> None:
        check_signature(sig, self.params)

    def _candidates(self, hv: U32Array) -> set[int]:
        keys = self._entry_keys(hv[None, :])[0]
        found: set[int] = set()
        if len(self._skeys):
            left = np.searchsorted(self._skeys, keys, side="left")
            right = np.searchsorted(self._skeys, keys, side="right")
            for lo, hi in zip(left.tolist(), right.tolist(), strict=True):
                if hi > lo:
                    found.update(self._srows[lo:hi].tolist())
        if self._recent:
            for h in keys.tolist():
                hit = self._recent.get(h)
                if hit is None:
                    continue
                if isinstance(hit, int):
                    found.add(hit)
                else:
                    found.update(hit)
        return found

    # -- NearDuplicateIndex

    def add(self, key: IndexKey, sig: SignatureLike) -> None:
        self._check(sig)
        self.remove(key)
        if self._free:
            row = self._free.pop()
            self._key_of[row] = key
        else:
            self._ensure_capacity(1)
            row = self._used
            self._used += 1
            self._key_of.append(key)
        self._row_of[key] = row
        hv = np.asarray(sig.hashvalues, dtype=np.uint32)
        self._matrix[row] = hv
        if is_empty(sig):
            return
        for h in self._entry_keys(hv[None, :])[0].tolist():
            _bucket_add(self._recent, h, row)
        self._maybe_rebuild()

    def remove(self, key: IndexKey) -> None:
        row = self._row_of.pop(key, None)
        if row is None:
            return
        hv = self._matrix[row]
        if not bool(np.all(hv == _U32_MAX)):
            # its entries stay where they are: a candidate row is always confirmed on the
            # matrix, and a freed row has no key
            self._stale += self._bands
            self._maybe_rebuild()
        self._key_of[row] = None
        self._free.append(row)

    def query(self, sig: SignatureLike) -> list[tuple[IndexKey, float]]:
        self._check(sig)
        hv = np.asarray(sig.hashvalues, dtype=np.uint32)
        if bool(np.all(hv == _U32_MAX)):
            return []
        rows = self._candidates(hv)
        if not rows:
            return []
        ids = np.fromiter(rows, dtype=np.int64, count=len(rows))
        equal = np.count_nonzero(self._matrix[ids] == hv, axis=1)
        n = len(hv)
        found = [
            (self._key_of[row], count / n)
            for row, count in zip(ids.tolist(), equal.tolist(), strict=True)
            if count >= self._min_equal
        ]
        result = [(key, j) for key, j in found if key is not None]
        result.sort(key=lambda item: (-item[1], item[0]))
        return result

    def get(self, key: IndexKey) -> LeanMinHash | None:
        """A copy of the signature stored for ``key``."""
        found = self.values(key)
        return None if found is None else _lean(found.seed, found.hashvalues)

    def values(self, key: IndexKey) -> Signature | None:
        """:meth:`get` as a :class:`Signature` (no datasketch)."""
        row = self._row_of.get(key)
        return None if row is None else Signature(self.params.seed, self._matrix[row].copy())

    def keys(self) -> list[IndexKey]:
        return list(self._row_of)

    def __contains__(self, key: object) -> bool:
        return key in self._row_of

    def __len__(self) -> int:
        return len(self._row_of)


def check_signature(sig: SignatureLike, params: MinHashParams) -> None:
    """Raise ``ParamsMismatchError`` unless ``sig`` was made with ``params``' scheme,
    number of permutations and seed (what an index of ``params`` can compare)."""
    if len(sig.hashvalues) != params.num_perm or sig.seed != params.seed:
        raise ParamsMismatchError(
            f"signature (num_perm={len(sig.hashvalues)}, seed={sig.seed}) does not match "
            f"index params {params.fingerprint()!r}"
        )
    if getattr(sig, "scheme", None) != _SCHEME:
        raise ParamsMismatchError(f"signature scheme {sig.scheme!r} is not {_SCHEME!r}")


def band_keys(matrix: U32Array, bands: int, rows: int) -> U64Array:
    """(n, bands) 64-bit keys of the LSH band entries of each signature row.

    A band's key is ``fmix64(sum_j v_j * c_j mod 2**64)`` over its ``rows`` values
    (fixed odd 64-bit ``c_j``), mixed with the band's number: equal bands give equal
    keys; a rare collision of different bands only adds a candidate, which the
    Jaccard confirmation then rejects. Two signatures are LSH candidates when one of
    their keys is equal. Only used to find candidates, never stored with a page.
    """
    values = matrix[:, : bands * rows].reshape(len(matrix), bands, rows).astype(np.uint64)
    hashes = _fmix64((values * _band_multipliers(rows)).sum(axis=2, dtype=np.uint64))
    return _fmix64(hashes ^ _band_salts(bands))


def min_equal(threshold: float, num_perm: int) -> int:
    """Smallest count c of equal hash values with c / num_perm >= threshold (robust to
    float rounding): a candidate with fewer is not a near duplicate."""
    c = int(np.ceil(threshold * num_perm - 1e-9))
    return max(c, 0)


def _bucket_add(table: dict[int, int | list[int]], h: int, row: int) -> None:
    """Add ``row`` to the bucket ``h`` of one band (an int while it holds one row)."""
    prev = table.get(h)
    if prev is None:
        table[h] = row
    elif isinstance(prev, int):
        table[h] = [prev, row]
    else:
        prev.append(row)


@functools.lru_cache(maxsize=8)
def _band_salts(bands: int) -> U64Array:
    """A fixed 64-bit value per band, so that equal values in two bands give two keys."""
    rng = np.random.default_rng(0xBA4D)
    salts = rng.integers(0, 2**63, size=bands, dtype=np.uint64)
    salts.setflags(write=False)
    return salts


@functools.lru_cache(maxsize=8)
def _band_multipliers(r: int) -> U64Array:
    rng = np.random.default_rng(0x5EED)
    c = rng.integers(0, 2**63, size=r, dtype=np.uint64) * np.uint64(2) + np.uint64(1)
    c.setflags(write=False)
    return c


def _decode_many(
    keys: Sequence[IndexKey], blobs: Sequence[bytes], params: MinHashParams
) -> U32Array:
    """Vectorised ``from_bytes`` of many signatures, checked against ``params``."""
    n, p = len(blobs), params.num_perm
    size = _HEADER.size + 4 * p
    if n == 0:
        return np.empty((0, p), dtype=np.uint32)
    for key, blob in zip(keys, blobs, strict=True):
        if len(blob) != size:
            raise ParamsMismatchError(
                f"stored signature of {key!r} has {len(blob)} bytes, {size} expected for {p} "
                "permutations"
            )
    raw = np.frombuffer(b"".join(blobs), dtype=np.uint8).reshape(n, size)
    seeds = raw[:, :8].copy().view("<i8")[:, 0]
    counts = raw[:, 8:12].copy().view("<i4")[:, 0]
    codes = raw[:, 12]
    bad = np.flatnonzero((seeds != params.seed) | (counts != -p) | (codes != _SCHEME_CODE))
    if len(bad):
        key = keys[int(bad[0])]
        raise ParamsMismatchError(
            f"stored signature of {key!r} does not match params {params.fingerprint()!r} "
            f"(seed={int(seeds[bad[0]])}, count={int(counts[bad[0]])}, code={int(codes[bad[0]])})"
        )
    out: U32Array = np.empty((n, p), dtype=np.uint32)
    out.view(np.uint8).reshape(n, 4 * p)[:] = raw[:, _HEADER.size :]
    if sys.byteorder != "little":  # pragma: no cover - stored values are little endian
        out.byteswap(inplace=True)
    return out
