"""Property test of knowledge_crawler.sync.dedupe: any sequence of pages, changes and
restarts leaves consistent decisions, the same whether the state is kept in memory or
in the scratch database (both policies run in lockstep)."""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import given, settings
from hypothesis import strategies as st

from knowledge_crawler.crawl.dedupe_scratch import ScratchDedupeState
from knowledge_crawler.sync.dedupe import EXACT, NEAR, REPRESENTATIVE, Decision, DedupePolicy, Key
from knowledge_crawler.transform.minhash import DEFAULT
from tests.unit.test_dedupe_policy import STATES, Text, article, decide, key, known, sim, texts

# --------------------------------------------------------------------------- property

POOL = texts(
    article("alpha"),
    article("alpha", 1),
    article("alpha", 2),
    article("alpha", 3),
    article("beta"),
    article("beta", 1),
    article("beta", 2),
    article("gamma"),
    "",
)
SOURCES = {"a": 0.85, "b": 0.95}
KEYS = [key(f"p{i}", source) for i in range(4) for source in SOURCES]


@dataclass
class Stored:
    """What the store holds of one page once the pipeline's output is written."""

    text: Text
    decision: Decision


class Model:
    """The store as the pipeline writes it: item decisions, then reassignments."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.pages: dict[Key, Stored] = {}  # insertion order = first-seen order
        self.policy = self.new_policy()

    def new_policy(self) -> DedupePolicy:
        return DedupePolicy(DEFAULT, SOURCES, state=STATES[self.kind]())

    def write(self, k: Key, t: Text) -> None:
        decision, changes = decide(self.policy, k, t)
        assert k not in {c.key for c in changes}
        self.pages[k] = Stored(t, decision)
        for change in changes:
            assert change.key in self.pages
            assert change.decision != self.pages[change.key].decision, "unchanged reported"
            self.pages[change.key].decision = change.decision

    def restart(self) -> None:
        """A new crawl: the state comes back from the store."""
        self.policy = self.new_policy()
        self.policy.restore(known(k, p.text, p.decision) for k, p in self.pages.items())

    def check(self) -> None:
        rank = {k: i for i, k in enumerate(self.pages)}
        held: dict[str, Key] = {}
        for k, page in self.pages.items():
            decision = page.decision
            assert self.policy.decision(k) == decision, k
            rep = decision.duplicate_of
            if rep is None:
                if page.text.words:  # one representative per content hash
                    assert held.setdefault(page.text.digest, k) == k, (k, held)
                continue
            target = self.pages[rep]
            # never the duplicate of a duplicate, nor of a newer or an empty page
            assert target.decision == REPRESENTATIVE, (k, rep, target.decision)
            assert rank[rep] < rank[k]
            assert page.text.words and target.text.words
            if decision.kind == EXACT:
                assert page.text.digest == target.text.digest and decision.score == 1.0
            else:
                assert decision.kind == NEAR and decision.score is not None
                assert decision.score == round(sim(page.text, target.text), 4)
                assert decision.score >= SOURCES[k[0]]
        for k, page in self.pages.items():
            if not page.text.words:
                assert self.policy.dependents(k) == []


RESTART = len(POOL)  #: a new crawl, restored from the store
MOVE = len(POOL) + 1  #: the policy's state moves to a new scratch database mid-crawl

#: (page, text) steps; a text index past the pool is RESTART or MOVE
STEPS = st.lists(st.tuples(st.sampled_from(KEYS), st.integers(0, MOVE)), min_size=20, max_size=60)


@settings(max_examples=300, deadline=None, derandomize=True)
@given(STEPS)
def test_decisions_stay_consistent_over_any_sequence_of_adds_and_changes(
    steps: list[tuple[Key, int]],
) -> None:
    models = [Model(kind) for kind in sorted(STATES)]
    for k, i in steps:
        for model in models:
            if i == RESTART:
                model.restart()
            elif i == MOVE:
                model.policy.move_to(ScratchDedupeState())
            else:
                model.write(k, POOL[i])
            model.check()
        first = models[0]
        for other in models[1:]:
            assert {k: p.decision for k, p in other.pages.items()} == {
                k: p.decision for k, p in first.pages.items()
            }
            assert [other.policy.dependents(k) for k in KEYS] == [
                first.policy.dependents(k) for k in KEYS
            ]
