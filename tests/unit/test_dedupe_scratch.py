"""The dedupe state kept in a temporary SQLite file (knowledge_crawler.crawl.dedupe_scratch)."""

from __future__ import annotations

import random

import pytest

from knowledge_crawler.crawl.dedupe_scratch import ScratchDedupeState, ScratchNearDuplicateIndex
from knowledge_crawler.sync.dedupe import DedupePolicy, DuplicateState, Key
from knowledge_crawler.transform.minhash import (
    DEFAULT,
    MemoryNearDuplicateIndex,
    MinHashParams,
    ParamsMismatchError,
    signature,
    signatures,
    to_bytes,
)


def corpus(n: int, seed: int = 7) -> list[str]:
    """Texts in families of near copies (a few words changed), and unrelated ones."""
    rng = random.Random(seed)
    vocab = [f"w{i}" for i in range(3000)]
    out: list[str] = []
    while len(out) < n:
        base = rng.choices(vocab, k=150)
        for _ in range(rng.randint(1, 4)):
            copy = list(base)
            for _ in range(rng.randint(0, 12)):
                copy[rng.randrange(len(copy))] = rng.choice(vocab)
            out.append(" ".join(copy))
    return [*out[:n], ""]  # and a text without words: its signature matches nothing


@pytest.mark.parametrize("threshold", [0.5, 0.85, 0.95])
def test_the_file_index_answers_as_the_memory_index(threshold: float) -> None:
    params = MinHashParams(threshold=threshold)
    texts = corpus(400)
    sigs = signatures(texts, params)
    keys: list[Key] = [("s", f"https://example.com/{i}") for i in range(len(texts))]
    memory = MemoryNearDuplicateIndex(params)
    state = ScratchDedupeState()
    scratch = state.restore_index(params, [])
    rng = random.Random(1)
    for k, sig in zip(keys, sigs, strict=True):
        memory.add(k, sig)
        scratch.add(k, sig)
    for k in rng.sample(keys, 80):  # some go, some come back with another text
        memory.remove(k)
        scratch.remove(k)
    for k in rng.sample(keys, 40):
        sig = sigs[rng.randrange(len(sigs))]
        memory.add(k, sig)
        scratch.add(k, sig)
    assert len(scratch) == len(memory)
    matched = 0
    for sig in sigs:
        expected = memory.query(sig)
        assert scratch.query(sig) == expected
        matched += len(expected) > 1
    assert matched > 30  # the corpus has near copies to find
    for k in keys:
        assert (k in scratch) == (k in memory)
        a, b = scratch.values(k), memory.values(k)
        assert (a is None) == (b is None)
        if a is not None and b is not None:
            assert a.seed == b.seed and a.hashvalues.tolist() == b.hashvalues.tolist()
    state.close()


def test_restore_refuses_signatures_of_other_params_and_keeps_a_repeated_keys_last() -> None:
    sig_a, sig_b = signature("alpha beta gamma delta"), signature("one two three four five")
    fp = DEFAULT.fingerprint()
    k: Key = ("s", "https://example.com/a")
    state = ScratchDedupeState()
    index = state.restore_index(DEFAULT, [(k, to_bytes(sig_a), fp), (k, to_bytes(sig_b), fp)])
    assert len(index) == 1
    assert index.query(sig_b) == [(k, 1.0)] and index.query(sig_a) == []
    other = MinHashParams(num_perm=64)
    with pytest.raises(ParamsMismatchError):
        state.restore_index(
            DEFAULT, [(k, to_bytes(signature("x y z", other)), other.fingerprint())]
        )
    with pytest.raises(ParamsMismatchError):
        index.add(k, signature("x y z", other))
    state.close()


def test_the_maps_answer_as_dicts() -> None:
    state = ScratchDedupeState()
    k1: Key = ("s", "https://example.com/1")
    k2: Key = ("other", "https://example.com/2?a=\x00")
    assert state.rank.setdefault(k1, 0) == 0 and state.rank.setdefault(k1, 5) == 0
    state.rank[k2] = 1
    state.rank[k2] = 1
    assert len(state.rank) == 2 and dict(state.rank) == {k1: 0, k2: 1}
    state.by_hash["h"] = k2
    assert state.by_hash["h"] == k2 and "h" in state.by_hash and "g" not in state.by_hash
    dup = DuplicateState("h", b"sig", 3, k1, "near", 0.9)
    state.duplicates[k2] = dup
    got = state.duplicates.pop(k2)
    assert (got.content_hash, got.minhash, got.words, got.rep, got.kind, got.score) == (
        "h",
        b"sig",
        3,
        k1,
        "near",
        0.9,
    )
    assert state.duplicates.pop(k2, None) is None and len(state.duplicates) == 0
    with pytest.raises(KeyError):
        del state.hash_of[k1]
    state.dependents.add(k1, k2)
    state.dependents.add(k1, k2)
    assert state.dependents.of(k1) == [k2]
    state.dependents.discard(k1, k2)
    assert state.dependents.of(k1) == []
    state.close()


class _FullDisk(ScratchDedupeState):
    def restore_index(self, *args: object, **kwargs: object) -> ScratchNearDuplicateIndex:
        raise OSError(28, "No space left on device")


def test_a_move_that_fails_leaves_the_state_where_it_was() -> None:
    texts = corpus(30)
    sigs = [to_bytes(s) for s in signatures(texts)]
    policy = DedupePolicy(DEFAULT)
    alone = DedupePolicy(DEFAULT)
    keys: list[Key] = [("s", f"https://example.com/{i}") for i in range(len(texts))]
    for i, k in enumerate(keys[:20]):
        for p in (policy, alone):
            p.decide(k, f"h{i % 15}", sigs[i], 150)
    state = policy.state
    with pytest.raises(OSError):
        policy.move_to(_FullDisk())
    assert policy.state is state
    for i, k in enumerate(keys):
        assert policy.decide(k, f"h{i % 15}", sigs[i], 150) == alone.decide(
            k, f"h{i % 15}", sigs[i], 150
        )
