"""Unit and property tests for knowledge_crawler.transform.minhash."""

from __future__ import annotations

import random
import struct

import numpy as np
import pytest
from datasketch import LeanMinHash, MinHash
from hypothesis import given, settings
from hypothesis import strategies as st

from knowledge_crawler.transform.minhash import (
    DEFAULT,
    MemoryNearDuplicateIndex,
    MinHashParams,
    NearDuplicateIndex,
    ParamsMismatchError,
    from_bytes,
    is_empty,
    jaccard,
    shingle_hash,
    shingles,
    signature,
    signatures,
    to_bytes,
    tokens,
)

WORDS = st.text(alphabet="abcdefghijklmnopqrstuvwxyzé0123456789_", min_size=1, max_size=8)
TEXTS = st.lists(WORDS, min_size=0, max_size=60).map(" ".join)
SEPARATED = st.lists(
    st.tuples(WORDS, st.sampled_from([" ", ", ", ". ", "\n", " -- ", "\t"])), max_size=40
).map(lambda pairs: "".join(w + sep for w, sep in pairs))

FAST = settings(max_examples=40, deadline=None, derandomize=True)


def _rng_text(rng: random.Random, vocab: list[str], n: int) -> str:
    return " ".join(rng.choice(vocab) for _ in range(n))


def _exact_jaccard(a: str, b: str, k: int) -> float:
    sa, sb = set(shingles(a, k)), set(shingles(b, k))
    return len(sa & sb) / len(sa | sb)


# ----------------------------------------------------------------------------- params


def test_default_params_and_fingerprint() -> None:
    p = MinHashParams()
    assert p == DEFAULT
    assert (p.num_perm, p.seed, p.shingle_size, p.threshold) == (128, 1, 3, 0.85)
    assert p.bands * p.rows <= p.num_perm
    assert p.bands >= 2
    assert p.fingerprint() == f"mh1:p128:s1:k3:b{p.bands}:r{p.rows}"
    assert p.signature_fingerprint() == "mh1:p128:s1:k3"
    assert MinHashParams().fingerprint() == p.fingerprint()  # stable


def test_banding_favours_recall_at_threshold() -> None:
    p = DEFAULT
    candidate = 1 - (1 - 0.9**p.rows) ** p.bands
    assert candidate > 0.99  # LSH stage keeps >= 99 % of pairs at Jaccard 0.9


def test_pinned_banding() -> None:
    p = MinHashParams(banding=(16, 8))
    assert (p.bands, p.rows) == (16, 8)
    assert p.fingerprint().endswith(":b16:r8")


@pytest.mark.parametrize(
    "kwargs",
    [
        {"threshold": 0.0},
        {"threshold": -0.1},
        {"threshold": 1.5},
        {"num_perm": 0},
        {"num_perm": 1},
        {"shingle_size": 0},
        {"seed": -1},
        {"weights": (0.7, 0.7)},
        {"banding": (1, 128)},
        {"banding": (20, 10)},
    ],
)
def test_bad_params_fail_fast(kwargs: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        MinHashParams(**kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize("kwargs", [{"num_perm": 128.0}, {"shingle_size": "3"}, {"seed": True}])
def test_bad_param_types(kwargs: dict[str, object]) -> None:
    with pytest.raises(TypeError):
        MinHashParams(**kwargs)  # type: ignore[arg-type]


def test_threshold_one_is_valid() -> None:
    p = MinHashParams(threshold=1.0)
    idx = MemoryNearDuplicateIndex(p)
    sig = signature("one two three four five", p)
    idx.add("a", sig)
    assert idx.query(sig) == [("a", 1.0)]


# --------------------------------------------------------------------------- shingles


def test_shingles_basic() -> None:
    assert shingles("The cat, the HAT!", 2) == [b"the cat", b"cat the", b"the hat"]
    assert shingles("one two", 3) == [b"one two"]
    assert shingles("one two three", 3) == [b"one two three"]
    assert shingles("  ... ", 3) == []
    assert shingles("Ünïcode wörds", 1) == ["ünïcode".encode(), "wörds".encode()]
    with pytest.raises(ValueError):
        shingles("x", 0)


@FAST
@given(SEPARATED)
def test_normalisation_ignores_case_and_punctuation(text: str) -> None:
    plain = " ".join(tokens(text))
    assert np.array_equal(signature(text).hashvalues, signature(plain.upper()).hashvalues)


# ------------------------------------------------------------------------- signatures


@FAST
@given(TEXTS, st.integers(min_value=1, max_value=5))
def test_signature_matches_datasketch_reference(text: str, k: int) -> None:
    """The numpy path equals datasketch's MinHash fed shingle by shingle."""
    params = MinHashParams(shingle_size=k, num_perm=64, seed=7)
    ref = MinHash(num_perm=64, seed=7, hashfunc=shingle_hash)
    ref.update_batch(shingles(text, k))
    sig = signature(text, params)
    assert isinstance(sig, LeanMinHash)
    assert sig.scheme == "affine32"
    assert sig.seed == 7
    assert np.array_equal(sig.hashvalues, ref.hashvalues)
    assert sig.hashvalues.dtype == np.uint32


@FAST
@given(st.lists(TEXTS, max_size=12))
def test_batch_equals_single(texts: list[str]) -> None:
    batch = signatures(texts)
    assert len(batch) == len(texts)
    for text, sig in zip(texts, batch, strict=True):
        assert np.array_equal(sig.hashvalues, signature(text).hashvalues)


def test_batch_spanning_several_chunks() -> None:
    rng = random.Random(3)
    vocab = [f"w{i}" for i in range(3000)]
    texts = [_rng_text(rng, vocab, rng.randint(0, 1500)) for _ in range(40)] + [""]
    for text, sig in zip(texts, signatures(texts), strict=True):
        assert np.array_equal(sig.hashvalues, signature(text).hashvalues)


@FAST
@given(TEXTS)
def test_identical_texts_have_jaccard_one(text: str) -> None:
    assert jaccard(signature(text), signature(str(text))) == 1.0


def test_empty_text_signature() -> None:
    sig = signature("")
    assert is_empty(sig)
    assert not is_empty(signature("a"))


@settings(max_examples=30, deadline=None, derandomize=True)
@given(
    st.integers(min_value=20, max_value=400),
    st.integers(min_value=20, max_value=400),
    st.integers(min_value=0, max_value=400),
)
def test_estimate_close_to_exact_jaccard(only_a: int, only_b: int, common: int) -> None:
    params = MinHashParams(shingle_size=1)
    shared = [f"c{i}" for i in range(common)]
    a = " ".join(shared + [f"a{i}" for i in range(only_a)])
    b = " ".join([f"b{i}" for i in range(only_b)] + shared)
    exact = common / (common + only_a + only_b)
    # 128 permutations: standard error <= 0.045; allow ~4.5 sigma
    assert abs(jaccard(signature(a, params), signature(b, params)) - exact) <= 0.2


def test_estimate_is_unbiased_on_average() -> None:
    rng = random.Random(11)
    vocab = [f"v{i}" for i in range(20000)]
    errors = []
    for _ in range(40):
        base = [rng.choice(vocab) for _ in range(300)]
        other = list(base)
        for pos in rng.sample(range(300), rng.randint(5, 150)):
            other[pos] = rng.choice(vocab)
        a, b = " ".join(base), " ".join(other)
        est = jaccard(signature(a), signature(b))
        errors.append(est - _exact_jaccard(a, b, 3))
    assert abs(float(np.mean(errors))) < 0.02
    assert float(np.mean(np.abs(errors))) < 0.05


def test_jaccard_refuses_different_params() -> None:
    with pytest.raises(ValueError):
        jaccard(signature("a b c"), signature("a b c", MinHashParams(num_perm=64)))


# ------------------------------------------------------------------------------ bytes


@FAST
@given(TEXTS, st.integers(min_value=0, max_value=2**32 - 1))
def test_bytes_round_trip(text: str, seed: int) -> None:
    sig = signature(text, MinHashParams(seed=seed))
    data = to_bytes(sig)
    assert isinstance(data, bytes)
    assert len(data) == 13 + 4 * 128
    back = from_bytes(data)
    assert back.seed == seed
    assert back.scheme == "affine32"
    assert np.array_equal(back.hashvalues, sig.hashvalues)
    assert back == sig
    assert jaccard(back, sig) == 1.0


def test_bytes_are_datasketch_little_endian_format() -> None:
    sig = signature("portable signature bytes for other readers")
    buf = bytearray(sig.bytesize("<"))
    sig.serialize(buf, "<")
    assert bytes(buf) == to_bytes(sig)
    assert LeanMinHash.deserialize(to_bytes(sig), "<") == sig
    # restored signatures behave like constructor-made LeanMinHash objects
    public = LeanMinHash(seed=sig.seed, hashvalues=sig.hashvalues, scheme="affine32")
    assert from_bytes(to_bytes(sig)) == public
    assert hash(from_bytes(to_bytes(sig))) == hash(public)


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"\x00" * 12,
        to_bytes(signature("a b c"))[:-1],
        to_bytes(signature("a b c")) + b"\x00",
        struct.pack("<qi", 1, 128) + b"\x00" * 512,  # legacy (pre-2.0 datasketch) layout
        struct.pack("<qiB", 1, -128, 2) + b"\x00" * 1024,  # affine64
    ],
)
def test_from_bytes_rejects_malformed(data: bytes) -> None:
    with pytest.raises(ValueError):
        from_bytes(data)


# ------------------------------------------------------------------------------ index


def _near_dup_pair(rng: random.Random, n: int = 600, edits: int = 3) -> tuple[str, str]:
    vocab = [f"term{i}" for i in range(10000)]
    base = [rng.choice(vocab) for _ in range(n)]
    other = list(base)
    for pos in rng.sample(range(n), edits):
        other[pos] = rng.choice(vocab)
    return " ".join(base), " ".join(other)


def test_index_protocol() -> None:
    idx = MemoryNearDuplicateIndex(DEFAULT)
    assert isinstance(idx, NearDuplicateIndex)
    assert idx.params is DEFAULT


def test_index_add_query_replace_remove() -> None:
    rng = random.Random(5)
    a, a2 = _near_dup_pair(rng)
    b, _ = _near_dup_pair(rng)
    sa, sa2, sb = signatures([a, a2, b])
    idx = MemoryNearDuplicateIndex(DEFAULT)
    assert len(idx) == 0
    assert idx.query(sa) == []

    idx.add("a", sa)
    idx.add("b", sb)
    assert "a" in idx and "b" in idx and "c" not in idx
    assert len(idx) == 2
    assert idx.query(sa) == [("a", 1.0)]  # the caller excludes itself
    hits = idx.query(sa2)
    assert [k for k, _ in hits] == ["a"]
    assert DEFAULT.threshold <= hits[0][1] < 1.0

    idx.add("c", sa2)
    assert [k for k, _ in idx.query(sa)] == ["a", "c"]  # best first
    assert idx.query(sa)[1][1] == pytest.approx(jaccard(sa, sa2))

    idx.add("a", sb)  # replace: "a" now holds b's signature
    assert len(idx) == 3
    assert [k for k, _ in idx.query(sb)] == ["a", "b"]  # ties by key
    assert [k for k, _ in idx.query(sa)] == ["c"]

    idx.remove("a")
    idx.remove("a")  # no-op
    idx.remove("never-added")
    assert "a" not in idx
    assert len(idx) == 2
    assert idx.query(sb) == [("b", 1.0)]
    assert idx.get("b") == sb
    assert idx.get("a") is None
    assert sorted(idx.keys()) == ["b", "c"]


def test_index_confirms_candidates_by_estimated_jaccard() -> None:
    """An LSH candidate below the threshold is not returned."""
    params = MinHashParams(banding=(64, 2))  # very loose banding: many candidates
    rng = random.Random(9)
    vocab = [f"x{i}" for i in range(5000)]
    base = [rng.choice(vocab) for _ in range(400)]
    other = base[:200] + [rng.choice(vocab) for _ in range(200)]
    sa, sb = signatures([" ".join(base), " ".join(other)], params)
    idx = MemoryNearDuplicateIndex(params)
    idx.add("a", sa)
    assert idx._candidates(sb.hashvalues) == {0}  # LSH candidate ...
    assert jaccard(sa, sb) < params.threshold
    assert idx.query(sb) == []  # ... but not confirmed


def test_candidates_match_datasketch_minhashlsh() -> None:
    """Same candidate rule as datasketch.MinHashLSH with the same (b, r)."""
    from datasketch import MinHashLSH

    params = MinHashParams(banding=(32, 4), shingle_size=1)
    rng = random.Random(4)
    vocab = [f"y{i}" for i in range(80)]
    texts = [_rng_text(rng, vocab, 60) for _ in range(150)]
    sigs = signatures(texts, params)
    lsh = MinHashLSH(num_perm=128, params=(32, 4))
    idx = MemoryNearDuplicateIndex(params, capacity=16)  # grows while adding
    for i, sig in enumerate(sigs):
        lsh.insert(str(i), sig)
        idx.add(str(i), sig)
    total = 0
    for sig in sigs:
        ours = {str(r) for r in idx._candidates(sig.hashvalues)}
        assert ours == set(lsh.query(sig))
        total += len(ours)
    assert total > 2 * len(sigs)  # the comparison is not vacuous


def test_remove_with_shared_buckets_and_row_reuse() -> None:
    idx = MemoryNearDuplicateIndex(DEFAULT)
    sig = signature("shared bucket text with several words")
    for key in ("a", "b", "c"):
        idx.add(key, sig)
    assert [k for k, _ in idx.query(sig)] == ["a", "b", "c"]
    idx.remove("b")
    assert [k for k, _ in idx.query(sig)] == ["a", "c"]
    idx.remove("a")
    assert idx.query(sig) == [("c", 1.0)]
    other = signature("a completely different page about other things")
    idx.add("d", other)  # reuses a freed row
    idx.add("e", other)
    assert idx.query(sig) == [("c", 1.0)]
    assert [k for k, _ in idx.query(other)] == ["d", "e"]
    idx.remove("c")
    assert idx.query(sig) == []
    assert len(idx) == 2
    assert sorted(idx.keys()) == ["d", "e"]


def test_empty_signature_never_matches() -> None:
    idx = MemoryNearDuplicateIndex(DEFAULT)
    idx.add("empty", signature(""))
    idx.add("empty2", signature("!!!"))
    assert "empty" in idx and len(idx) == 2
    assert idx.query(signature("")) == []
    idx.remove("empty")
    assert "empty" not in idx


def test_index_refuses_foreign_signatures() -> None:
    idx = MemoryNearDuplicateIndex(DEFAULT)
    other = signature("a b c d", MinHashParams(seed=2))
    with pytest.raises(ParamsMismatchError):
        idx.add("x", other)
    with pytest.raises(ParamsMismatchError):
        idx.query(signature("a b c d", MinHashParams(num_perm=64)))


def test_unrelated_texts_sharing_vocabulary() -> None:
    """Different pages over one small vocabulary: k=1 merges them, the default k doesn't."""
    rng = random.Random(2)
    vocab = [f"jargon{i}" for i in range(80)]
    a, b = _rng_text(rng, vocab, 800), _rng_text(rng, vocab, 800)
    k1 = MinHashParams(shingle_size=1)
    assert _exact_jaccard(a, b, 1) > 0.95
    idx1 = MemoryNearDuplicateIndex(k1)
    idx1.add("a", signature(a, k1))
    assert [k for k, _ in idx1.query(signature(b, k1))] == ["a"]

    assert _exact_jaccard(a, b, DEFAULT.shingle_size) < 0.1
    idx = MemoryNearDuplicateIndex(DEFAULT)
    idx.add("a", signature(a))
    assert idx.query(signature(b)) == []


# ---------------------------------------------------------------------------- restore


def _rows(texts: dict[str, str], params: MinHashParams) -> list[tuple[str, bytes, str]]:
    sigs = signatures(list(texts.values()), params)
    fp = params.fingerprint()
    return [(key, to_bytes(sig), fp) for key, sig in zip(texts, sigs, strict=True)]


def test_restore_round_trip() -> None:
    rng = random.Random(8)
    a, a2 = _near_dup_pair(rng)
    texts = {"a": a, "b": _near_dup_pair(rng)[0], "e": ""}
    idx = MemoryNearDuplicateIndex.restore(DEFAULT, _rows(texts, DEFAULT))
    assert len(idx) == 3
    assert [k for k, _ in idx.query(signature(a2))] == ["a"]
    live = MemoryNearDuplicateIndex(DEFAULT)
    for key, text in texts.items():
        live.add(key, signature(text))
    assert idx.query(signature(a)) == live.query(signature(a))


def test_restore_last_row_wins_for_repeated_key() -> None:
    rows = _rows({"k": "first text here"}, DEFAULT) + _rows({"k": "second text there"}, DEFAULT)
    idx = MemoryNearDuplicateIndex.restore(DEFAULT, rows)
    assert len(idx) == 1
    assert idx.query(signature("second text there")) == [("k", 1.0)]


@pytest.mark.parametrize(
    "stored",
    [
        MinHashParams(num_perm=64),
        MinHashParams(seed=2),
        MinHashParams(shingle_size=4),
    ],
)
def test_restore_refuses_other_signature_params(stored: MinHashParams) -> None:
    rows = _rows({"ok": "a b c d e"}, DEFAULT) + _rows({"bad": "f g h i j"}, stored)
    with pytest.raises(ParamsMismatchError) as err:
        MemoryNearDuplicateIndex.restore(DEFAULT, rows)
    assert stored.fingerprint() in str(err.value)
    assert isinstance(err.value, ValueError)


def test_restore_refuses_other_algorithm_version() -> None:
    sig = to_bytes(signature("a b c"))
    fp = DEFAULT.fingerprint().replace("mh1", "mh0")
    with pytest.raises(ParamsMismatchError):
        MemoryNearDuplicateIndex.restore(DEFAULT, [("k", sig, fp)])


def test_restore_rebanding() -> None:
    """Other LSH banding, same signatures: rebuilt by default, refused when strict."""
    stored = MinHashParams(threshold=0.7)
    assert stored.bands_rows != DEFAULT.bands_rows
    rows = _rows({"a": "alpha beta gamma delta epsilon"}, stored)
    idx = MemoryNearDuplicateIndex.restore(DEFAULT, rows)
    assert idx.query(signature("alpha beta gamma delta epsilon")) == [("a", 1.0)]
    with pytest.raises(ParamsMismatchError):
        MemoryNearDuplicateIndex.restore(DEFAULT, rows, allow_rebanding=False)


def test_restore_refuses_bytes_contradicting_fingerprint() -> None:
    data = to_bytes(signature("a b c", MinHashParams(num_perm=64)))
    with pytest.raises(ParamsMismatchError):
        MemoryNearDuplicateIndex.restore(DEFAULT, [("k", data, DEFAULT.fingerprint())])
    with pytest.raises(ParamsMismatchError):
        MemoryNearDuplicateIndex.restore(DEFAULT, [("k", b"junk", DEFAULT.fingerprint())])


def test_restore_accepts_memoryview_rows() -> None:
    data = to_bytes(signature("a b c d"))
    idx = MemoryNearDuplicateIndex.restore(
        DEFAULT,
        [("k", memoryview(data), DEFAULT.fingerprint())],  # type: ignore[list-item]
    )
    assert "k" in idx


def test_restore_in_chunks_from_a_generator(monkeypatch: pytest.MonkeyPatch) -> None:
    import knowledge_crawler.transform.minhash as mh

    monkeypatch.setattr(mh, "_RESTORE_CHUNK", 3)
    texts = {f"k{i}": f"page number {i} about topic {i % 3} and more words" for i in range(10)}
    rows = _rows(texts, DEFAULT)
    rows += _rows({"k1": texts["k7"], "empty": ""}, DEFAULT)  # repeated key in a later chunk
    idx = MemoryNearDuplicateIndex.restore(DEFAULT, (row for row in rows))
    assert len(idx) == 11
    assert [k for k, _ in idx.query(signature(texts["k7"]))] == ["k1", "k7"]
    assert [k for k, _ in idx.query(signature(texts["k2"]))] == ["k2"]
    assert idx.query(signature(texts["k1"])) == []
    idx.add("new", signature(texts["k2"]))  # reuses the row freed by the repeated key
    assert [k for k, _ in idx.query(signature(texts["k2"]))] == ["k2", "new"]
