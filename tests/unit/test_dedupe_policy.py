"""Unit and property tests for knowledge_crawler.sync.dedupe (the dedupe decisions)."""

from __future__ import annotations

import dataclasses
import hashlib
from dataclasses import dataclass
from typing import Any

import pytest

from knowledge_crawler.crawl.dedupe_scratch import ScratchDedupeState
from knowledge_crawler.sync.dedupe import (
    EXACT,
    NEAR,
    REPRESENTATIVE,
    Decision,
    DedupePolicy,
    Key,
    KnownPage,
    MemoryDedupeState,
    Reassignment,
)
from knowledge_crawler.transform.minhash import (
    DEFAULT,
    ParamsMismatchError,
    from_bytes,
    jaccard,
    signatures,
    to_bytes,
    tokens,
)


@dataclass(frozen=True)
class Text:
    """A page's content as the fingerprint stage leaves it."""

    text: str
    digest: str
    minhash: bytes | None
    words: int


def texts(*contents: str) -> list[Text]:
    sigs = signatures(contents)
    return [
        Text(
            c,
            hashlib.sha256(c.encode()).hexdigest(),
            to_bytes(sig) if tokens(c) else None,
            len(tokens(c)),
        )
        for c, sig in zip(contents, sigs, strict=True)
    ]


def article(name: str, changed: int = 0, words: int = 120) -> str:
    """``words`` distinct words; ``changed`` of them replaced (each costs ~5 % Jaccard)."""
    out = [f"{name}{i}" for i in range(words)]
    for j in range(changed):
        out[10 + 20 * j] = f"edit{j}"
    return " ".join(out)


A, A1, A2, A3, B, C, EMPTY = texts(
    article("acorn"),
    article("acorn", 1),
    article("acorn", 2),
    article("acorn", 5),
    article("beta"),
    article("gamma"),
    "",
)


def sim(a: Text, b: Text) -> float:
    assert a.minhash is not None and b.minhash is not None
    return jaccard(from_bytes(a.minhash), from_bytes(b.minhash))


def test_premises_of_the_hand_made_texts() -> None:
    assert sim(A, A1) >= 0.95 > sim(A, A2) >= 0.9 > 0.85 > sim(A, A3) >= 0.8
    assert sim(A1, A2) >= 0.95 and sim(A2, A3) >= 0.85
    assert sim(A, B) == sim(A, C) == sim(B, C) == 0.0
    assert EMPTY.words == 0 and EMPTY.minhash is None


#: where the policies of the test being run keep their state (both are tested)
STATES = {"memory": MemoryDedupeState, "scratch": ScratchDedupeState}
_state: list[str] = ["memory"]


@pytest.fixture(autouse=True, params=sorted(STATES))
def state_kind(request: pytest.FixtureRequest) -> str:
    _state[0] = request.param
    request.addfinalizer(lambda: _state.__setitem__(0, "memory"))
    return str(request.param)


def policy_of(*args: Any, **kwargs: Any) -> DedupePolicy:
    return DedupePolicy(*args, state=STATES[_state[0]](), **kwargs)


def key(name: str, source: str = "s") -> Key:
    """A page's key; every path has one length, so that only the signals a test gives
    (and first-seen order) tell pages apart."""
    return (source, f"https://example.com/{name:_<12}")


def decide(policy: DedupePolicy, k: Key, t: Text) -> tuple[Decision, list[Reassignment]]:
    return policy.decide(k, t.digest, t.minhash, t.words)


def known(k: Key, t: Text, decision: Decision = REPRESENTATIVE) -> KnownPage:
    return KnownPage(
        k,
        t.digest,
        t.words,
        decision.duplicate_of,
        decision.kind,
        decision.score,
        t.minhash,
        DEFAULT.fingerprint() if t.minhash is not None else None,
    )


def exact(rep: Key) -> Decision:
    return Decision(rep, EXACT, 1.0)


def near(rep: Key, a: Text, b: Text) -> Decision:
    return Decision(rep, NEAR, round(sim(a, b), 4))


# --------------------------------------------------------------------------- rules


def test_exact_duplicate_is_the_same_hash_under_another_identity_seen_earlier() -> None:
    policy = policy_of(DEFAULT)
    assert decide(policy, key("p1"), A) == (REPRESENTATIVE, [])
    assert decide(policy, key("p2"), A) == (exact(key("p1")), [])
    assert decide(policy, key("p3", "other"), A) == (exact(key("p1")), [])
    # The same page again with the same content is still its own representative.
    assert decide(policy, key("p1"), A) == (REPRESENTATIVE, [])
    assert policy.dependents(key("p1")) == [key("p2"), key("p3", "other")]


def test_near_duplicate_is_a_candidate_above_the_threshold() -> None:
    policy = policy_of(DEFAULT)
    decide(policy, key("p1"), A)
    decide(policy, key("b"), B)
    assert decide(policy, key("p2"), A2) == (near(key("p1"), A, A2), [])
    assert decide(policy, key("p3"), A3)[0] == REPRESENTATIVE  # below 0.85
    assert decide(policy, key("c"), C)[0] == REPRESENTATIVE


def test_each_source_is_judged_by_its_own_threshold() -> None:
    policy = policy_of(DEFAULT, {"strict": 0.95, "loose": 0.8})
    assert policy.threshold("strict") == 0.95 and policy.threshold("unknown") == 0.85
    decide(policy, key("p1"), A)
    assert decide(policy, key("x", "strict"), A2)[0] == REPRESENTATIVE
    assert decide(policy, key("y", "strict"), A1)[0] == near(key("p1"), A, A1)
    assert decide(policy, key("z", "loose"), A3)[0] == near(key("x", "strict"), A2, A3)
    assert decide(policy, key("p1"), B)[0] == REPRESENTATIVE  # A2 is left, at 0.89 of A3
    assert decide(policy, key("w", "loose"), A)[0] == near(key("x", "strict"), A2, A)
    assert decide(policy, key("v"), A3)[0] == near(key("x", "strict"), A2, A3)
    assert decide(policy, key("u", "strict"), A3)[0] == REPRESENTATIVE


def test_the_representative_is_the_page_seen_first() -> None:
    policy = policy_of(DEFAULT)
    # stored order first (first_seen_at): p2 was seen before p1
    policy.restore([known(key("p2"), B), known(key("p1"), C)])
    assert decide(policy, key("p1"), A) == (REPRESENTATIVE, [])
    assert decide(policy, key("new"), A) == (exact(key("p1")), [])
    # p2 is older than p1: it is no duplicate of p1 when it says almost the same; p1
    # (and its copy) become near duplicates of it
    assert decide(policy, key("p2"), A1) == (
        REPRESENTATIVE,
        [
            Reassignment(key("p1"), near(key("p2"), A1, A)),
            Reassignment(key("new"), near(key("p2"), A1, A)),
        ],
    )
    # then processing order among the pages new to this run
    decide(policy, key("n1"), C)
    assert decide(policy, key("n2"), C)[0] == exact(key("n1"))
    # among several candidates: the most similar, then the earliest
    assert decide(policy, key("n3"), A2)[0] == near(key("p2"), A1, A2)
    assert decide(policy, key("n4"), A1)[0] == exact(key("p2"))


def test_empty_pages_are_never_duplicates_nor_representatives() -> None:
    policy = policy_of(DEFAULT)
    assert decide(policy, key("e1"), EMPTY) == (REPRESENTATIVE, [])
    assert decide(policy, key("e2"), EMPTY) == (REPRESENTATIVE, [])
    decide(policy, key("p1"), A)
    assert policy.dependents(key("e1")) == []
    # a representative that becomes empty releases its duplicates
    decide(policy, key("p2"), A)
    decision, changes = decide(policy, key("p1"), EMPTY)
    assert decision == REPRESENTATIVE
    assert changes == [Reassignment(key("p2"), REPRESENTATIVE)]
    assert decide(policy, key("p3"), A)[0] == exact(key("p2"))


def test_an_older_page_that_takes_a_newer_pages_content_displaces_it() -> None:
    policy = policy_of(DEFAULT)
    policy.restore(
        [
            known(key("old"), B),
            known(key("new"), A),
            known(key("copy"), A, exact(key("new"))),
            known(key("close"), A1, near(key("new"), A, A1)),
        ]
    )
    decision, changes = decide(policy, key("old"), A)
    assert decision == REPRESENTATIVE
    # the newer holder and its own duplicates now point at the older page, none at "new"
    assert changes == [
        Reassignment(key("new"), exact(key("old"))),
        Reassignment(key("copy"), exact(key("old"))),
        Reassignment(key("close"), near(key("old"), A, A1)),
    ]
    assert policy.dependents(key("new")) == []


def test_a_representative_that_moves_releases_its_duplicates() -> None:
    policy = policy_of(DEFAULT)
    policy.restore(
        [
            known(key("rep"), A),
            known(key("d1"), A, exact(key("rep"))),
            known(key("d2"), A1, near(key("rep"), A, A1)),
            known(key("d3"), A, exact(key("rep"))),
            known(key("b"), B),
        ]
    )
    decision, changes = decide(policy, key("rep"), C)
    assert decision == REPRESENTATIVE
    # the oldest copy takes over the content; the others follow it
    assert changes == [
        Reassignment(key("d1"), REPRESENTATIVE),
        Reassignment(key("d2"), near(key("d1"), A, A1)),
        Reassignment(key("d3"), exact(key("d1"))),
    ]
    assert policy.examined == 3
    assert policy.dependents(key("rep")) == []
    assert policy.dependents(key("d1")) == [key("d2"), key("d3")]


def test_only_changed_decisions_are_reported() -> None:
    policy = policy_of(DEFAULT)
    policy.restore(
        [
            known(key("rep"), A),
            known(key("d1"), A, exact(key("rep"))),
            known(key("d2"), A1, near(key("rep"), A, A1)),
        ]
    )
    # New hash, same words (punctuation only): the near duplicate keeps its decision.
    punctuated = dataclasses.replace(A, digest="f" * 64)
    decision, changes = decide(policy, key("rep"), punctuated)
    assert decision == REPRESENTATIVE
    assert changes == [Reassignment(key("d1"), Decision(key("rep"), NEAR, 1.0))]
    assert policy.examined == 2
    # Same content again: nothing to re-evaluate.
    assert decide(policy, key("rep"), punctuated) == (REPRESENTATIVE, [])
    assert policy.examined == 2


def test_a_small_change_keeps_a_copy_as_a_near_duplicate() -> None:
    policy = policy_of(DEFAULT)
    policy.restore([known(key("rep"), A), known(key("copy"), A, exact(key("rep")))])
    _, changes = decide(policy, key("rep"), A1)
    assert changes == [Reassignment(key("copy"), near(key("rep"), A1, A))]


def test_a_dependent_whose_content_moved_is_not_decided_with_stale_content() -> None:
    policy = policy_of(DEFAULT)
    policy.restore(
        [
            known(key("rep"), A),
            known(key("d1"), A, exact(key("rep"))),
            known(key("d2"), A, exact(key("rep"))),
        ]
    )
    assert decide(policy, key("d1"), B) == (REPRESENTATIVE, [])  # d1 left for other content
    assert decide(policy, key("d2"), A1)[0] == near(key("rep"), A, A1)
    examined = policy.examined
    _, changes = decide(policy, key("rep"), C)
    # d1 is not re-decided at all (with A it would take over A); d2 with its own A1
    assert policy.examined - examined == 1
    assert changes == [Reassignment(key("d2"), REPRESENTATIVE)]
    assert policy.decision(key("d1")) == REPRESENTATIVE
    assert decide(policy, key("x"), B)[0] == exact(key("d1"))


def test_a_representative_that_becomes_a_duplicate_releases_its_duplicates() -> None:
    """No chain: a page never stays the duplicate of a page that became a duplicate."""
    policy = policy_of(DEFAULT)
    policy.restore(
        [
            known(key("a"), B),
            known(key("r"), A1),
            known(key("d"), A1, exact(key("r"))),
        ]
    )
    # the older page "a" now says almost what "r" says: "r" becomes its near duplicate,
    # and the copy of "r" follows it to "a" instead of pointing at a duplicate
    assert decide(policy, key("a"), A) == (
        REPRESENTATIVE,
        [
            Reassignment(key("r"), near(key("a"), A, A1)),
            Reassignment(key("d"), near(key("a"), A, A1)),
        ],
    )
    # "r" fetched again, unchanged: still so, nothing else moves
    assert decide(policy, key("r"), A1) == (near(key("a"), A, A1), [])


def test_a_stored_chain_is_healed_when_touched() -> None:
    policy = policy_of(DEFAULT)
    policy.restore(
        [
            known(key("s"), A),
            known(key("r"), A, exact(key("s"))),
            known(key("d"), A, exact(key("r"))),  # a chain left by older code
        ]
    )
    _, changes = decide(policy, key("r"), A)
    assert changes == [Reassignment(key("d"), exact(key("s")))]


def test_restore_indexes_only_representatives_and_refuses_other_params() -> None:
    policy = policy_of(DEFAULT, {"strict": 0.95})
    n = policy.restore(
        [
            known(key("rep"), A),
            known(key("dup"), A2, near(key("rep"), A, A2)),
            known(key("e"), EMPTY),
        ]
    )
    assert n == 3 and len(policy) == 3 and key("dup") in policy
    # the duplicate is not a representative: a copy of its content is no duplicate of it
    assert decide(policy, key("x"), A2)[0] == near(key("rep"), A, A2)
    with pytest.raises(RuntimeError):
        policy.restore([])

    other = dataclasses.replace(DEFAULT, shingle_size=4).fingerprint()
    bad_rep = dataclasses.replace(known(key("rep"), A), minhash_params=other)
    with pytest.raises(ParamsMismatchError):
        policy_of(DEFAULT).restore([bad_rep])
    bad_dup = dataclasses.replace(known(key("d"), A, exact(key("rep"))), minhash_params=other)
    with pytest.raises(ParamsMismatchError):
        policy_of(DEFAULT).restore([known(key("rep"), A), bad_dup])
    # another banding (threshold) is fine: the indexes are rebuilt from the signatures
    rebanded = dataclasses.replace(DEFAULT, threshold=0.7).fingerprint()
    policy_of(DEFAULT).restore([dataclasses.replace(known(key("r"), A), minhash_params=rebanded)])


# --------------------------------------------------------------------------- cost


def filler(n: int) -> list[Text]:
    """``n`` short pages that share no shingle with each other or with the articles."""
    return texts(*(f"filler{i} lorem{i} ipsum{i} dolor{i}" for i in range(n)))


def test_a_changed_representative_costs_its_dependents_not_the_run() -> None:
    """Re-evaluation examines the 2 duplicates of the page, not the 5,000 pages of the run."""
    pages = filler(5_000)
    policy = policy_of(DEFAULT)
    decide(policy, key("rep"), A)
    decide(policy, key("copy"), A)
    decide(policy, key("close"), A1)
    for i, page in enumerate(pages):
        assert decide(policy, key(f"f{i}"), page)[0] == REPRESENTATIVE
    assert policy.examined == 0

    decision, changes = decide(policy, key("rep"), C)
    assert decision == REPRESENTATIVE
    assert policy.examined == 2
    assert changes == [
        Reassignment(key("copy"), REPRESENTATIVE),
        Reassignment(key("close"), near(key("copy"), A, A1)),
    ]


def test_restored_dependents_cost_the_same() -> None:
    pages = filler(5_000)
    stored = [known(key(f"f{i}"), page) for i, page in enumerate(pages)]
    stored[100:100] = [
        known(key("rep"), A),
        known(key("copy"), A, exact(key("rep"))),
        known(key("close"), A1, near(key("rep"), A, A1)),
    ]
    policy = policy_of(DEFAULT)
    policy.restore(stored)
    for i in range(0, 5_000, 2):  # this run refreshes half of them
        decide(policy, key(f"f{i}"), pages[i])
    decide(policy, key("rep"), C)
    assert policy.examined == 2


# --------------------------------------------------------------------------- signals


def url(path: str) -> Key:
    return ("s", f"https://example.com{path}")


def test_a_copy_naming_the_article_as_canonical_gives_way_to_it() -> None:
    """The /print/ copy seen first, saying rel=canonical to the article: once the article
    is decided, it represents the cluster and the copy is its exact duplicate."""
    policy = policy_of(DEFAULT)
    printed, article_ = url("/print/acorn"), url("/articles/acorn")
    assert decide_with(policy, printed, A, canonical=article_[1]) == (REPRESENTATIVE, [])
    decision, changes = decide_with(policy, article_, A, canonical=article_[1])
    assert decision == REPRESENTATIVE
    assert changes == [Reassignment(printed, exact(article_))]
    assert policy.dependents(article_) == [printed]
    # fetched again, nothing moves
    assert decide_with(policy, printed, A, canonical=article_[1]) == (exact(article_), [])


def test_a_canonical_naming_a_page_of_another_cluster_hands_the_cluster_over() -> None:
    """A representative whose rel=canonical names a page that becomes known (another
    content) is less preferred from then on: its duplicate takes over."""
    policy = policy_of(DEFAULT)
    first, second, target = url("/x/one"), url("/x/two"), url("/x/target")
    decide_with(policy, first, A, canonical=target[1])
    assert decide_with(policy, second, A)[0] == exact(first)
    decision, changes = decide_with(policy, target, B)
    assert decision == REPRESENTATIVE
    assert changes == [
        Reassignment(second, REPRESENTATIVE),
        Reassignment(first, exact(second)),
    ]


def test_more_inlinks_win_and_the_choice_is_remade_when_they_move() -> None:
    policy = policy_of(DEFAULT)
    a, b = url("/doc/aaa"), url("/doc/bbb")
    decide_with(policy, a, A)
    assert decide_with(policy, b, A)[0] == exact(a)
    # one page links to b: b has more inlinks than a, it takes the cluster over
    decision, changes = decide_with(policy, url("/hub/one"), C, links=[b[1], b[1]])
    assert decision == REPRESENTATIVE
    assert changes == [Reassignment(b, REPRESENTATIVE), Reassignment(a, exact(b))]
    # another links to a: one each, a was seen first: a again
    decision, changes = decide_with(policy, url("/hub/two"), B, links=[a[1]])
    assert changes == [Reassignment(a, REPRESENTATIVE), Reassignment(b, exact(a))]
    # a page links to itself: not an inlink
    assert decide_with(policy, url("/hub/aaa"), EMPTY, links=[url("/hub/aaa")[1]])[1] == []


def test_inlinks_restored_from_the_store_count() -> None:
    policy = policy_of(DEFAULT)
    a, b = url("/doc/aaa"), url("/doc/bbb")
    policy.restore([known(a, A), dataclasses.replace(known(b, A, exact(a)), inlinks=2)])
    # the stored decision stands until the page is decided again
    assert policy.decision(b) == exact(a)
    assert decide_with(policy, b, A) == (REPRESENTATIVE, [Reassignment(a, exact(b))])


def test_restored_signals_that_moved_are_reconciled_once() -> None:
    """Stored decisions made before the signals moved (links replaced, a canonical
    target stored since): reconcile() decides those clusters again, the rest stays."""
    policy = policy_of(DEFAULT)
    a, b, c, d = url("/doc/aaa"), url("/doc/bbb"), url("/doc/ccc"), url("/doc/ddd")
    policy.restore(
        [
            known(a, A),
            dataclasses.replace(known(b, A, exact(a)), inlinks=3),
            dataclasses.replace(known(c, B), canonical_link=d[1]),
            known(d, B, exact(c)),
            known(url("/doc/eee"), C),
        ]
    )
    assert policy.reconcile() == [
        Reassignment(b, REPRESENTATIVE),
        Reassignment(a, exact(b)),
        Reassignment(d, REPRESENTATIVE),
        Reassignment(c, exact(d)),
    ]
    assert policy.reconcile() == []
    assert decide_with(policy, c, B, canonical=d[1]) == (exact(d), [])


def test_a_duplicate_of_a_page_no_longer_restored_represents_itself() -> None:
    """The stored representative is not active any more (not restored): reconcile()
    ranks it after every known page, so its duplicate is a representative again."""
    policy = policy_of(DEFAULT)
    gone, copy = url("/doc/gone"), url("/doc/copy")
    policy.restore([known(copy, A, exact(gone))])
    assert policy.reconcile() == [Reassignment(copy, REPRESENTATIVE)]
    assert policy.reconcile() == []
    assert decide_with(policy, copy, A) == (REPRESENTATIVE, [])


def test_a_representative_whose_canonical_comes_to_name_another_page_yields() -> None:
    policy = policy_of(DEFAULT)
    a, b, other = url("/doc/aaa"), url("/doc/bbb"), url("/doc/zzz")
    decide_with(policy, other, B)
    decide_with(policy, a, A)
    assert decide_with(policy, b, A)[0] == exact(a)
    # a now says its canonical URL is another page: b takes the cluster over
    assert decide_with(policy, a, A, canonical=other[1]) == (
        exact(b),
        [Reassignment(b, REPRESENTATIVE)],
    )


def test_a_clean_url_is_preferred_to_a_print_amp_or_page_variant() -> None:
    for variant in ("/amp/acorn", "/acorn?amp", "/acorn?page=2", "/acorn/page/2"):
        policy = policy_of(DEFAULT)
        decide_with(policy, url(variant), A)
        clean = url("/articles/acorn/long/path")
        assert decide_with(policy, clean, A) == (
            REPRESENTATIVE,
            [Reassignment(url(variant), exact(clean))],
        ), variant
    policy = policy_of(DEFAULT)
    decide_with(policy, ("s", "https://m.example.com/acorn"), A)
    assert decide_with(policy, ("s", "https://example.com/acorn/x"), A)[0] == REPRESENTATIVE


def test_a_shorter_path_is_preferred_then_the_first_seen() -> None:
    policy = policy_of(DEFAULT)
    decide_with(policy, url("/a/long/path"), A)
    assert decide_with(policy, url("/short"), A) == (
        REPRESENTATIVE,
        [Reassignment(url("/a/long/path"), exact(url("/short")))],
    )
    assert decide_with(policy, url("/other"), A)[0] == exact(url("/short"))
    # near copies too: a preferred page that says almost the same takes the cluster
    assert decide_with(policy, url("/s"), A1) == (
        REPRESENTATIVE,
        [
            Reassignment(url("/short"), near(url("/s"), A1, A)),
            Reassignment(url("/a/long/path"), near(url("/s"), A1, A)),
            Reassignment(url("/other"), near(url("/s"), A1, A)),
        ],
    )


def decide_with(
    policy: DedupePolicy,
    k: Key,
    t: Text,
    *,
    links: list[str] | None = None,
    canonical: str | None = None,
) -> tuple[Decision, list[Reassignment]]:
    return policy.decide(
        k, t.digest, t.minhash, t.words, links=[] if links is None else links, canonical=canonical
    )
