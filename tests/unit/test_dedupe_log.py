"""Several processes judge duplicates together through the crawl's dedupe log in Redis.

Each ``SharedDedupe`` here stands for one crawl process, with a policy of its own; they
share one stream of a real Redis (``KC_TEST_REDIS_URL``; skipped without one, except
under ``CI=true``). What they decide must be what one policy deciding the same pages in
the log's order decides.
"""

from __future__ import annotations

import random
from typing import Any

from knowledge_crawler.crawl.dedupe_log import DedupeEntry, SharedDedupe
from knowledge_crawler.crawl.frontier import CrawlKeys
from knowledge_crawler.sync.dedupe import REPRESENTATIVE, DedupePolicy, KnownPage
from knowledge_crawler.transform.minhash import DEFAULT
from tests.unit.test_dedupe_policy import (
    A1,
    A2,
    A3,
    EMPTY,
    A,
    B,
    C,
    Text,
    article,
    decide,
    exact,
    key,
    known,
    near,
    texts,
)


def process(server: Any, prefix: str, name: str, stored: list[KnownPage] = ()) -> SharedDedupe:  # type: ignore[assignment]
    shared = SharedDedupe(
        DedupePolicy(DEFAULT), server, CrawlKeys.of(prefix, "knowledge").dedupe, name
    )
    shared.restore(stored)
    return shared


def judge(shared: SharedDedupe, name: str, t: Text) -> Any:
    return shared.decide(key(name), t.digest, t.minhash, t.words)


def test_copies_fetched_by_two_processes_are_judged_against_each_other(
    redis_server: Any, redis_prefix: str
) -> None:
    one = process(redis_server, redis_prefix, "one")
    two = process(redis_server, redis_prefix, "two")
    assert judge(one, "a", A) == (REPRESENTATIVE, [])
    # the other process has never seen "a": the log tells it before it judges
    assert judge(two, "print-a", A) == (exact(key("a")), [])
    assert judge(two, "near-a", A1) == (near(key("a"), A, A1), [])
    assert judge(one, "b", B) == (REPRESENTATIVE, [])
    assert judge(one, "copy-b", B) == (exact(key("b")), [])
    assert judge(two, "again-a", A) == (exact(key("a")), [])
    # each applied the entries of the other that came before its own
    assert (one.replayed, two.replayed) == (2, 3)
    # after one more entry each, both hold the same decisions about every page
    judge(one, "c", C)
    judge(two, "empty", EMPTY)
    judge(one, "c2", C)
    pages = ["a", "print-a", "near-a", "b", "copy-b", "again-a", "c", "empty"]
    assert [one.policy.decision(key(p)) for p in pages] == [
        two.policy.decision(key(p)) for p in pages
    ]


def test_any_interleaving_decides_what_one_policy_decides_in_the_logs_order(
    redis_server: Any, redis_prefix: str
) -> None:
    variants = texts(*(article(f"w{i % 4}", changed=i % 3) for i in range(24)))
    for trial in range(5):
        rng = random.Random(trial)
        prefix = f"{redis_prefix}:{trial}"
        procs = [process(redis_server, prefix, f"p{i}") for i in range(3)]
        alone = DedupePolicy(DEFAULT)
        for n, t in enumerate(variants):
            page = f"page-{n}"
            got = judge(rng.choice(procs), page, t)
            assert got == decide(alone, key(page), t), (trial, n)


def test_a_process_that_joins_late_ranks_the_crawls_new_pages_in_log_order(
    redis_server: Any, redis_prefix: str
) -> None:
    before = [known(key("old"), A3)]  # stored before the crawl began
    first = process(redis_server, redis_prefix, "first", before)
    assert judge(first, "a", A) == (REPRESENTATIVE, [])
    assert judge(first, "copy-a", A) == (exact(key("a")), [])
    # What the late process reads from the store: both new pages committed, the copy
    # first (its row was written first, or its clock was behind).
    stored = [*before, known(key("copy-a"), A, exact(key("a"))), known(key("a"), A)]
    late = process(redis_server, redis_prefix, "late", stored)
    assert late.replayed == 2
    assert judge(late, "third-a", A) == (exact(key("a")), [])
    assert judge(late, "near-old", A2) == (near(key("a"), A, A2), [])
    pages = ["old", "a", "copy-a", "third-a", "near-old"]
    judge(first, "b", B)
    assert [first.policy.decision(key(p)) for p in pages] == [
        late.policy.decision(key(p)) for p in pages
    ]


def test_a_representative_that_moves_hands_its_duplicates_on_in_every_process(
    redis_server: Any, redis_prefix: str
) -> None:
    stored = [known(key("a"), A), known(key("copy-a"), A, exact(key("a")))]
    one = process(redis_server, redis_prefix, "one", stored)
    two = process(redis_server, redis_prefix, "two", stored)
    # "a" now says something else: the process that fetched it re-decides its copy
    decision, changes = judge(one, "a", B)
    assert decision == REPRESENTATIVE
    assert [(c.key, c.decision) for c in changes] == [(key("copy-a"), REPRESENTATIVE)]
    # the other applies the same change, and writes nothing of it
    assert judge(two, "c", C) == (REPRESENTATIVE, [])
    assert two.policy.decision(key("copy-a")) == REPRESENTATIVE
    assert judge(two, "copy-b", B) == (exact(key("a")), [])


def test_an_entry_appended_twice_is_applied_once(redis_server: Any, redis_prefix: str) -> None:
    one = process(redis_server, redis_prefix, "one")
    judge(one, "a", A)
    # a transaction retried after its reply was lost: the same entry once more
    stream = CrawlKeys.of(redis_prefix, "knowledge").dedupe
    [(_, fields)] = redis_server.xrange(stream)
    redis_server.xadd(stream, DedupeEntry.parse(fields).fields())
    two = process(redis_server, redis_prefix, "two")
    assert two.replayed == 1
    assert judge(two, "copy-a", A) == (exact(key("a")), [])
    # and a process's own doubled entry answers once, with its decision
    judge(one, "b", B)
    redis_server.xadd(stream, DedupeEntry.parse(redis_server.xrange(stream)[-1][1]).fields())
    assert judge(one, "copy-b", B) == (exact(key("b")), [])


def test_the_log_is_one_of_the_keys_a_crawl_clears() -> None:
    keys = CrawlKeys.of("kc", "knowledge")
    assert keys.dedupe == "kc:knowledge:dedupe" and keys.dedupe in keys.state


def test_links_and_canonical_travel_through_the_log(redis_server: Any, redis_prefix: str) -> None:
    """The signals one process read (a page's links, its rel=canonical) reach the other
    processes' policies: a print copy decided by one gives way to the article decided
    by the other, and inlinks counted in either process are counted in both."""
    one = process(redis_server, redis_prefix, "one")
    two = process(redis_server, redis_prefix, "two")
    printed, article_ = key("print-a"), key("a")
    assert one.decide(printed, A.digest, A.minhash, A.words, links=[], canonical=article_[1]) == (
        REPRESENTATIVE,
        [],
    )
    decision, changes = two.decide(article_, A.digest, A.minhash, A.words, links=[])
    assert decision == REPRESENTATIVE
    assert [(c.key, c.decision) for c in changes] == [(printed, exact(article_))]
    # pages of both processes link to the copy: counted in both, but rel=canonical weighs
    # more than inlinks, so the article stays the representative everywhere
    one.decide(key("hub1"), B.digest, B.minhash, B.words, links=[printed[1]])
    two.decide(key("hub2"), C.digest, C.minhash, C.words, links=[printed[1]])
    one.decide(key("hub3"), EMPTY.digest, EMPTY.minhash, EMPTY.words)  # catch up
    for shared in (one, two):
        assert shared.policy.inlinks(printed) == 2
        assert shared.policy.decision(article_) == REPRESENTATIVE
        assert shared.policy.decision(printed) == exact(article_)
    entry = DedupeEntry(key("x"), "h", None, 0, True, "p", 1, ("u1", "u2"), "c")
    fields = {k.encode(): str(v).encode() for k, v in entry.fields().items()}
    assert DedupeEntry.parse(fields) == entry
    empty = DedupeEntry(key("x"), "h", None, 0, True, "p", 1, (), None)
    fields = {k.encode(): str(v).encode() for k, v in empty.fields().items()}
    assert DedupeEntry.parse(fields) == empty
