"""Dedupe decisions: which page represents a cluster, and what changes when it moves.

Pure: no Scrapy, no store. The pipeline restores a :class:`DedupePolicy` from the
stored pages when the spider opens, asks it to :meth:`~DedupePolicy.decide` for
each page, and writes what it answers; the policy never waits on anything.

The rules:

* exact duplicate: another page seen earlier holds the same content hash;
* near duplicate: an LSH candidate seen earlier whose estimated Jaccard with the
  page is >= the threshold of the page's source (the default for other sources);
* the representative of a group is the page preferred by its signals
  (:mod:`knowledge_crawler.sync.representative`): not one whose ``rel=canonical``
  names another known page, then the most distinct pages linking to it, then a URL
  without print/AMP/mobile/page markers, then the shorter path, then the page seen
  first (stored ``first_seen_at`` order, then processing order). Only
  representatives are indexed, so a page is never the duplicate of a duplicate;
* a page without words is no content: never a duplicate, never a representative;
* when a preferred page becomes the representative of a content hash held by a
  less preferred page, that page becomes its exact duplicate ("displaced"); so
  does a less preferred representative that it is a near duplicate of;
* the signals move during a crawl: a page decided with its links adds one inlink to
  each page it links to (once per page: the counts restored from the store already
  hold the links of the stored pages), and a page that becomes known makes the pages
  whose ``rel=canonical`` names it less preferred. A duplicate that comes to be
  preferred over its representative takes its place, and a representative that comes
  to be less preferred than one of its duplicates gives its place up: the cluster is
  decided again, and the changes are reported with the page being decided;
* when a representative stops representing what its duplicates were decided
  against (its content moved, it became a duplicate or empty), those duplicates are
  decided again with their own current content, and only the decisions that
  changed are reported. Finding them costs in proportion to their number: the
  policy keeps a map from each representative to its duplicates.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, MutableMapping
from dataclasses import dataclass
from typing import Protocol, cast

from knowledge_crawler.sync.representative import Preference, preference, url_signals
from knowledge_crawler.transform.minhash import (
    MemoryNearDuplicateIndex,
    MinHashParams,
    Signature,
    SignatureLike,
    decode,
    to_bytes,
)

__all__ = [
    "EXACT",
    "NEAR",
    "REPRESENTATIVE",
    "Decision",
    "DedupePolicy",
    "DedupeState",
    "DuplicateState",
    "Key",
    "KnownPage",
    "MemoryDedupeState",
    "PolicyIndex",
    "Reassignment",
    "StoredPage",
]

#: A page's identity: ``(source_id, canonical_url)``.
Key = tuple[str, str]

EXACT = "exact"
NEAR = "near"


@dataclass(frozen=True, slots=True)
class Decision:
    """What a page is: a representative (``duplicate_of=None``) or a duplicate of one."""

    duplicate_of: Key | None = None
    kind: str | None = None  #: ``"exact"`` or ``"near"``
    score: float | None = None  #: estimated Jaccard with the representative (1.0 if exact)


REPRESENTATIVE = Decision()


class StoredPage(Protocol):
    """What :meth:`DedupePolicy.restore` reads of a stored page (:class:`KnownPage` is one).

    ``minhash`` is the stored signature: a representative's is indexed, a
    duplicate's is kept to decide again when its representative changes.
    """

    @property
    def key(self) -> Key: ...
    @property
    def content_hash(self) -> str: ...
    @property
    def word_count(self) -> int: ...
    @property
    def duplicate_of(self) -> Key | None: ...
    @property
    def duplicate_kind(self) -> str | None: ...
    @property
    def duplicate_score(self) -> float | None: ...
    @property
    def minhash(self) -> bytes | None: ...
    @property
    def minhash_params(self) -> str | None: ...
    @property
    def canonical_link(self) -> str | None: ...
    @property
    def inlinks(self) -> int: ...


@dataclass(frozen=True, slots=True)
class KnownPage:
    """A stored page as the policy reads it, with its stored decision and signature."""

    key: Key
    content_hash: str
    word_count: int
    duplicate_of: Key | None = None
    duplicate_kind: str | None = None
    duplicate_score: float | None = None
    minhash: bytes | None = None
    minhash_params: str | None = None
    #: the canonical URL its ``rel=canonical`` names (same source), None: none
    canonical_link: str | None = None
    #: distinct stored pages linking to it
    inlinks: int = 0


@dataclass(frozen=True, slots=True)
class Reassignment:
    """A new decision about a page other than the one being decided."""

    key: Key
    decision: Decision


class DuplicateState:
    """A page that is a duplicate now, with the content it was decided with."""

    __slots__ = ("content_hash", "kind", "minhash", "rep", "score", "words")

    def __init__(
        self,
        content_hash: str,
        minhash: bytes | None,
        words: int,
        rep: Key,
        kind: str | None,
        score: float | None,
    ) -> None:
        self.content_hash = content_hash
        self.minhash = minhash
        self.words = words
        self.rep = rep
        self.kind = kind
        self.score = score

    @property
    def decision(self) -> Decision:
        return Decision(self.rep, self.kind, self.score)


class PolicyIndex(Protocol):
    """What the policy asks of a near-duplicate index (:class:`MemoryNearDuplicateIndex`
    is one): the banded LSH of the representatives' signatures."""

    params: MinHashParams

    def add(self, key: Key, sig: SignatureLike) -> None: ...
    def remove(self, key: Key) -> None: ...
    def query(self, sig: SignatureLike) -> list[tuple[Key, float]]: ...
    def values(self, key: Key) -> Signature | None: ...


class Dependents(Protocol):
    """Representative -> the pages that are its duplicates now."""

    def add(self, rep: Key, key: Key) -> None: ...
    def discard(self, rep: Key, key: Key) -> None: ...
    def of(self, rep: Key) -> list[Key]: ...


class DedupeState(Protocol):
    """Where a policy keeps what it knows of each page.

    :class:`MemoryDedupeState` keeps it in dicts; a state kept outside the process
    (``knowledge_crawler.crawl.dedupe_scratch``) holds it in a file, so that memory does not
    grow with the pages a crawl has seen. The maps answer like dicts.
    """

    @property
    def rank(self) -> MutableMapping[Key, int]:
        """First-seen order of every known page (entries are never removed)."""
        ...

    @property
    def hash_of(self) -> MutableMapping[Key, str]:
        """Current content hash of every known page."""
        ...

    @property
    def by_hash(self) -> MutableMapping[str, Key]:
        """Content hash -> the representative that holds it."""
        ...

    @property
    def duplicates(self) -> MutableMapping[Key, DuplicateState]:
        """Every page that is a duplicate now."""
        ...

    @property
    def dependents(self) -> Dependents:
        """Representative -> the pages that are its duplicates now."""
        ...

    @property
    def inlinks(self) -> MutableMapping[Key, int]:
        """Distinct known pages linking to a page (absent: none)."""
        ...

    @property
    def canonical_of(self) -> MutableMapping[Key, str]:
        """The URL a page's ``rel=canonical`` names, when not the page's own."""
        ...

    @property
    def named_by(self) -> Dependents:
        """URL key -> the pages whose ``rel=canonical`` names it."""
        ...

    def restore_index(
        self,
        params: MinHashParams,
        rows: list[tuple[Key, bytes, str]],
        *,
        allow_rebanding: bool = True,
    ) -> PolicyIndex:
        """An index of ``rows`` (key, signature bytes, params fingerprint), as
        :meth:`MemoryNearDuplicateIndex.restore` builds one."""
        ...


class _MemoryDependents:
    __slots__ = ("_of",)

    def __init__(self) -> None:
        self._of: dict[Key, set[Key]] = {}

    def add(self, rep: Key, key: Key) -> None:
        deps = self._of.get(rep)
        if deps is None:
            self._of[rep] = {key}
        else:
            deps.add(key)

    def discard(self, rep: Key, key: Key) -> None:
        deps = self._of.get(rep)
        if deps is not None:
            deps.discard(key)
            if not deps:
                del self._of[rep]

    def of(self, rep: Key) -> list[Key]:
        return list(self._of.get(rep, ()))


class MemoryDedupeState:
    """A policy's state in dicts and :class:`MemoryNearDuplicateIndex` (the default)."""

    def __init__(self) -> None:
        self.rank: dict[Key, int] = {}
        self.hash_of: dict[Key, str] = {}
        self.by_hash: dict[str, Key] = {}
        self.duplicates: dict[Key, DuplicateState] = {}
        self.dependents = _MemoryDependents()
        self.inlinks: dict[Key, int] = {}
        self.canonical_of: dict[Key, str] = {}
        self.named_by = _MemoryDependents()

    def restore_index(
        self,
        params: MinHashParams,
        rows: list[tuple[Key, bytes, str]],
        *,
        allow_rebanding: bool = True,
    ) -> PolicyIndex:
        index = MemoryNearDuplicateIndex.restore(params, rows, allow_rebanding=allow_rebanding)
        return cast(PolicyIndex, index)


#: the first-seen rank of a page the policy does not know
_UNKNOWN_RANK = 1 << 62

#: (page, decision before, decision after)
_Change = tuple[Key, Decision, Decision]


class DedupePolicy:
    """The dedupe state of a crawl and the decisions taken against it.

    ``params`` are the crawl's MinHash parameters (their threshold is the default
    one); ``thresholds`` maps source ids to their own near-duplicate threshold.
    One LSH index is kept per threshold in use, all built by :meth:`restore`.
    ``state`` is where what the policy knows of each page is kept (in memory unless
    told otherwise); :meth:`move_to` moves it elsewhere between two decisions.
    """

    def __init__(
        self,
        params: MinHashParams,
        thresholds: Mapping[str, float] | None = None,
        *,
        state: DedupeState | None = None,
    ):
        self.params = params
        self._threshold_of: dict[str, float] = dict(thresholds or {})
        self._index_params: dict[float, MinHashParams] = {
            t: dataclasses.replace(params, threshold=t)
            for t in sorted({params.threshold, *self._threshold_of.values()})
        }
        self._use(state if state is not None else MemoryDedupeState())
        #: (newer holder, older page) pairs: the older page took the holder's content hash
        self._displaced: list[tuple[Key, Key]] = []
        #: duplicates decided again because their representative changed (a cost counter)
        self.examined = 0

    def _use(self, state: DedupeState, indexed: list[tuple[Key, bytes, str]] | None = None) -> None:
        """Keep the state in ``state``, with indexes of ``indexed`` (key, signature,
        fingerprint) rows; nothing changes if building an index fails."""
        rows = indexed or []
        indexes = {t: state.restore_index(p, rows) for t, p in self._index_params.items()}
        self.state = state
        self._rank = state.rank
        self._hash_of = state.hash_of
        self._by_hash = state.by_hash
        self._duplicates = state.duplicates
        self._dependents = state.dependents
        self._inlinks = state.inlinks
        self._canonical_of = state.canonical_of
        self._named_by = state.named_by
        self._indexes: dict[float, PolicyIndex] = indexes

    # -- state from the store ---------------------------------------------------

    def restore(self, pages: Iterable[StoredPage], *, allow_rebanding: bool = True) -> int:
        """Load the stored pages, earliest first; return how many.

        Raises ``ParamsMismatchError`` when a stored signature was made with other
        MinHash parameters (see ``MinHashParams.check_fingerprint``).
        """
        if self._rank:
            raise RuntimeError("restore() loads an empty policy, before any decision")
        rank, hash_of, by_hash = self._rank, self._hash_of, self._by_hash
        duplicates, dependents = self._duplicates, self._dependents
        indexed: list[tuple[Key, bytes, str]] = []
        duplicate_fingerprints: set[str | None] = set()
        count = 0
        for page in pages:
            key = page.key
            digest = page.content_hash
            rank[key] = count
            count += 1
            hash_of[key] = digest
            if page.inlinks:
                self._inlinks[key] = page.inlinks
            self._set_canonical(key, page.canonical_link)
            rep = page.duplicate_of
            if rep is None:
                if page.word_count:
                    by_hash.setdefault(digest, key)
                    minhash, fingerprint = page.minhash, page.minhash_params
                    if minhash is not None and fingerprint is not None:
                        indexed.append((key, minhash, fingerprint))
                continue
            duplicates[key] = DuplicateState(
                digest,
                page.minhash,
                page.word_count,
                rep,
                page.duplicate_kind,
                page.duplicate_score,
            )
            dependents.add(rep, key)
            duplicate_fingerprints.add(page.minhash_params)
        for fingerprint in sorted(f for f in duplicate_fingerprints if f is not None):
            self.params.check_fingerprint(fingerprint, allow_rebanding=allow_rebanding)
        for threshold, params in self._index_params.items():
            self._indexes[threshold] = self.state.restore_index(
                params, indexed, allow_rebanding=allow_rebanding
            )
        return len(rank)

    def reconcile(self) -> list[Reassignment]:
        """After :meth:`restore`: decide again the clusters whose stored representative is
        not the preferred page by the stored signals (links that moved since it was
        decided, a page its rel=canonical names stored since); the new decisions.
        Costs one comparison per stored duplicate."""
        changes: list[_Change] = []
        for key in list(self._duplicates):
            dup = self._duplicates.get(key)
            if dup is not None and self.preference(key) < self.preference(dup.rep):
                changes += self._resettle(key)
        return _net(changes, None)

    def move_to(self, state: DedupeState) -> None:
        """Carry everything this policy knows over into ``state`` (empty), and keep it
        there from now on: the decisions stay exactly what they would have been."""
        if state.rank:
            raise RuntimeError("move_to() fills an empty state")
        old = self.state
        ordered = sorted(old.rank.items(), key=lambda item: item[1])
        for key, rank in ordered:
            state.rank[key] = rank  # the same first-seen order
        for key, digest in old.hash_of.items():
            state.hash_of[key] = digest
        for digest, key in old.by_hash.items():
            state.by_hash[digest] = key
        for key, dup in old.duplicates.items():
            state.duplicates[key] = dup
            state.dependents.add(dup.rep, key)
        for key, count in old.inlinks.items():
            state.inlinks[key] = count
        for key, url in old.canonical_of.items():
            state.canonical_of[key] = url
            state.named_by.add((key[0], url), key)
        indexed: list[tuple[Key, bytes, str]] = []
        index = self._indexes[self.params.threshold]
        fingerprint = self.params.fingerprint()
        for key, _rank in ordered:
            sig = None if key in old.duplicates else index.values(key)
            if sig is not None:
                indexed.append((key, to_bytes(sig), fingerprint))
        self._use(state, indexed)

    # -- decisions --------------------------------------------------------------

    def decide(
        self,
        key: Key,
        content_hash: str,
        minhash: bytes | None,
        words: int,
        *,
        links: Iterable[str] | None = None,
        canonical: str | None = None,
    ) -> tuple[Decision, list[Reassignment]]:
        """Decide for ``key`` with this content, and update the state to match.

        ``links``: the canonical URLs (of the page's source) it links to, None when
        they were not read; they count as inlinks of their targets when the page is new
        to the policy. ``canonical``: the canonical URL its ``rel=canonical`` names
        (None: none, or not read when ``links`` is None too).

        Returns the page's decision and the new decisions about other pages that
        it caused (displaced holders, duplicates of a representative that moved or
        whose signals moved), each page at most once, only where the decision changed.
        """
        new = key not in self._rank
        self._rank.setdefault(key, len(self._rank))
        named = links is not None or canonical is not None
        renamed = named and self._set_canonical(key, canonical)
        previous = self._hash_of.get(key)
        moved = previous is not None and previous != content_hash
        decision = self._judge(key, content_hash, minhash, words)
        changes = self._reevaluate(key) if self._released(decision, words, moved) else []
        changes += self._settle_displaced()
        if renamed and decision == REPRESENTATIVE:
            changes += self._resettle(key)  # less preferred now: a duplicate may take over
        if new:
            # signals that moved now that this page is known: the pages that name it as
            # their canonical URL, and the pages it links to
            for namer in self._named_by.of(key):
                changes += self._resettle(namer)
            if links is not None:
                # as the store counts them: each target once, what rel=canonical names too
                urls = {*links, *([canonical] if canonical is not None else [])}
                for target in sorted({(key[0], url) for url in urls} - {key}):
                    self._inlinks[target] = self._inlinks.get(target, 0) + 1
                    if target in self._duplicates:
                        changes += self._resettle(target)
        return self.decision(key), _net(changes, key)

    def threshold(self, source_id: str) -> float:
        """The near-duplicate threshold that pages of ``source_id`` are judged by."""
        return self._threshold_of.get(source_id, self.params.threshold)

    def decision(self, key: Key) -> Decision:
        """The current decision about ``key`` (a representative if unknown)."""
        dup = self._duplicates.get(key)
        return REPRESENTATIVE if dup is None else dup.decision

    def dependents(self, key: Key) -> list[Key]:
        """The pages that are duplicates of ``key`` now, earliest first."""
        return sorted(self._dependents.of(key), key=self._rank.__getitem__)

    def __contains__(self, key: object) -> bool:
        return key in self._rank

    def __len__(self) -> int:
        return len(self._rank)

    def inlinks(self, key: Key) -> int:
        """Distinct known pages linking to ``key``, as the policy counts them."""
        return self._inlinks.get(key, 0)

    def preference(self, key: Key) -> Preference:
        """The sort key of a page among copies (smaller: preferred). A page the policy
        does not know (the representative of a stored duplicate that is no longer
        active) ranks after every known one."""
        canonical = self._canonical_of.get(key)
        names_other = canonical is not None and (key[0], canonical) in self._rank
        variant, length = url_signals(key[1])
        return preference(
            names_other=names_other,
            inlinks=self._inlinks.get(key, 0),
            variant=variant,
            path_length=length,
            rank=self._rank.get(key, _UNKNOWN_RANK),
        )

    # -- internals --------------------------------------------------------------

    def _set_canonical(self, key: Key, url: str | None) -> bool:
        """Record what ``key``'s ``rel=canonical`` names (its own URL or none: nothing);
        True when that changed."""
        old = self._canonical_of.get(key)
        if url == key[1]:
            url = None
        if old == url:
            return False
        if old is not None:
            self._named_by.discard((key[0], old), key)
            del self._canonical_of[key]
        if url is not None:
            self._canonical_of[key] = url
            self._named_by.add((key[0], url), key)
        return True

    def _resettle(self, key: Key) -> list[_Change]:
        """The signals of ``key`` moved: if it is a duplicate now preferred over its
        representative, or a representative now less preferred than one of its
        duplicates, its cluster is decided again."""
        dup = self._duplicates.get(key)
        if dup is not None:
            if self.preference(key) >= self.preference(dup.rep):
                return []
            before = dup.decision
            decision = self._judge(key, dup.content_hash, dup.minhash, dup.words)
            changes: list[_Change] = []
            if decision != before:
                changes.append((key, before, decision))
            changes += self._settle_displaced()
            return changes
        deps = self._dependents.of(key)
        if not deps:
            return []
        mine = self.preference(key)
        if all(self.preference(d) >= mine for d in deps):
            return []
        # a duplicate is preferred now: each is decided again, the preferred one takes over
        changes = []
        for dep in sorted(deps, key=self.preference):
            changes += self._resettle(dep)
        return changes

    def _judge(self, key: Key, digest: str, minhash: bytes | None, words: int) -> Decision:
        """Forget what ``key`` was, decide what it is with this content, record it."""
        self._release(key)
        self._hash_of[key] = digest
        if not words:  # empty is no content: never a duplicate, never a representative
            return REPRESENTATIVE
        mine = self.preference(key)
        holder = self._by_hash.get(digest)
        if holder is not None and self.preference(holder) < mine:
            return self._link(key, Decision(holder, EXACT, 1.0), digest, minhash, words)
        sig = decode(minhash) if minhash is not None else None
        worse: list[Key] = []
        if sig is not None:
            hits: list[tuple[Key, float, Preference]] = []
            for other, j in self._indexes[self.threshold(key[0])].query(sig):
                theirs = self.preference(other)
                if theirs < mine:
                    hits.append((other, j, theirs))
                else:
                    worse.append(other)
            if hits:
                best, score, _ = min(hits, key=lambda hit: (-hit[1], hit[2]))
                decision = Decision(best, NEAR, round(score, 4))
                return self._link(key, decision, digest, minhash, words)
        if holder is not None:  # a less preferred page held this content: our duplicate now
            self._displaced.append((holder, key))
        for other in worse:  # less preferred near copies: decided again, against this page
            if other != holder:
                self._displaced.append((other, key))
        self._by_hash[digest] = key
        if sig is not None:
            for index in self._indexes.values():
                index.add(key, sig)
        return REPRESENTATIVE

    def _release(self, key: Key) -> None:
        """``key`` no longer holds its content hash, its index entries or its decision."""
        digest = self._hash_of.get(key)
        if digest is not None and self._by_hash.get(digest) == key:
            del self._by_hash[digest]
        for index in self._indexes.values():
            index.remove(key)
        dup = self._duplicates.pop(key, None)
        if dup is not None:
            self._dependents.discard(dup.rep, key)

    def _link(
        self, key: Key, decision: Decision, digest: str, minhash: bytes | None, words: int
    ) -> Decision:
        rep = decision.duplicate_of
        assert rep is not None
        self._duplicates[key] = DuplicateState(
            digest, minhash, words, rep, decision.kind, decision.score
        )
        self._dependents.add(rep, key)
        return decision

    def _released(self, decision: Decision, words: int, moved: bool) -> bool:
        """True when a page's duplicates no longer match what it represents."""
        return moved or not words or decision.duplicate_of is not None

    def _reevaluate(self, rep: Key) -> list[_Change]:
        """Decide again for each page that is a duplicate of ``rep``, earliest first."""
        changes: list[_Change] = []
        for dep in self.dependents(rep):
            state = self._duplicates.get(dep)
            if state is None or state.rep != rep:
                continue  # decided again meanwhile (a nested re-evaluation)
            self.examined += 1
            before = state.decision
            decision = self._judge(dep, state.content_hash, state.minhash, state.words)
            if decision != before:
                changes.append((dep, before, decision))
            if self._released(decision, state.words, False) and self._dependents.of(dep):
                changes += self._reevaluate(dep)  # a stored chain, healed when touched
            changes += self._settle_displaced()
        return changes

    def _settle_displaced(self) -> list[_Change]:
        """Pages that lost their content hash to an older page are decided again."""
        changes: list[_Change] = []
        while self._displaced:
            holder, _older = self._displaced.pop()
            if holder in self._duplicates:
                continue  # no longer a representative: already decided again
            sig = self._indexes[self.params.threshold].values(holder)
            minhash = to_bytes(sig) if sig is not None else None
            # it held a content hash, so it has words
            decision = self._judge(holder, self._hash_of[holder], minhash, 1)
            if decision != REPRESENTATIVE:
                changes.append((holder, REPRESENTATIVE, decision))
                changes += self._reevaluate(holder)
        return changes


def _net(changes: list[_Change], decided: Key | None) -> list[Reassignment]:
    """One reassignment per page other than ``decided``, from its first to its last
    decision, in the order the pages first changed; none where they are equal."""
    first: dict[Key, Decision] = {}
    last: dict[Key, Decision] = {}
    for key, before, after in changes:
        first.setdefault(key, before)
        last[key] = after
    return [
        Reassignment(key, after)
        for key, after in last.items()
        if key != decided and after != first[key]
    ]
