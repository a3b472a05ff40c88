"""1. extract: HTML -> main content (markdown), title, headings, word count, language.

A page whose spider names its main content (``PageItem.content_selector``, a per-site
spider's ``content_selector``) is extracted from the elements the selector matches
(:func:`~knowledge_crawler.transform.extract.extract_selected`); where it matches
nothing, the page falls back to automatic extraction and is counted
(``kc/extract/selector_missed``, one WARNING per crawl naming the first such page).

The spider's extra fields (``PageItem.extra``) are checked here: a JSON object of
JSON values (no NaN or infinity). What is not is dropped, the page stored without
extras and counted (``kc/extract/extra_invalid``, one WARNING per crawl, DEBUG after).

A page the stage workers could not do is not stored: its stages raised
(``kc/stages/failed``), it killed its worker alone (``kc/extract/worker_crashed``) or
it ran past ``KC_STAGE_TIMEOUT_SECONDS`` (``kc/stages/timed_out``). It is recorded as
a failed fetch with retry state (the retry policy's backoff, ``KC_RETRY_*``), so a
later crawl fetches it again, and dead-lettered once it has failed
``KC_RETRY_MAX_ATTEMPTS`` times (``kc/stages/dead_lettered``); a stored page keeps its
record. All three count as the run's ``parse_failures``. A pool that cannot start (or
start again) stops the crawl as failed (``kc/stages/pool_failed``, exit status 1); the
pages it could not do are kept as retries due at once.

Junk 200s (:mod:`knowledge_crawler.sync.junk`) are judged here, before any later stage
(dedupe above all) sees them: a body labelled HTML that is none (empty, binary, text
without markup: the spider says why, ``PageItem.junk``), an extraction that failed, and
for a stored page an extraction that collapsed (no text, or under a tenth of the stored
words with an error-page, script-shell or binary sign). Each is a parse failure
(``kc/extract/failed``, the run's ``parse_failures``; ``kc/extract/junk/<kind>``): a URL
not stored is refused with the reason; a stored page keeps its content, and the answer
goes to its retry state (``fetch_attempts``: ``parse failure: REASON``, the next try, and
the observations with their archived responses as evidence). Only the same answer,
repeated over the source's deletion count and window (``missing_after``,
``missing_window``), is stored as the page's new content (``kc/extract/junk_accepted``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import random
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

from scrapy.exceptions import DropItem

from knowledge_crawler.crawl.runtime import STAGES_FAILED
from knowledge_crawler.crawl.stage_pool import (
    StagePageError,
    StagePool,
    StagePoolFailed,
    StagePoolStopped,
    StageTimeout,
    WorkerCrashed,
    worker_count,
)
from knowledge_crawler.items import FailureItem, PageItem, UrlOutcomeItem
from knowledge_crawler.pipelines._base import KcPipeline, retry_later, retry_record
from knowledge_crawler.store import FetchFailure, KnownPage, utc_now
from knowledge_crawler.sync.junk import (
    COLLAPSE_RATIO,
    PARSE_FAILURE,
    Junk,
    Observation,
    answer_digest,
    collapse_signature,
    evidence_from_json,
    evidence_to_json,
    next_retry,
    observe,
    page_junk,
)
from knowledge_crawler.sync.retry import (
    Action,
    AttemptState,
    Failure,
    RetryPolicy,
    next_attempt,
)
from knowledge_crawler.transform.extract import Extraction
from knowledge_crawler.transform.stages import (
    SELECTED,
    SELECTOR_FAILED,
    SELECTOR_MISSED,
    Extracted,
    PageInput,
    StageRules,
    extract_page,
)

__all__ = ["ExtractPipeline", "checked_extra"]

logger = logging.getLogger(__name__)


def checked_extra(value: Any) -> dict[str, Any]:
    """``value`` as the JSON object it will be stored as; :class:`ValueError` saying why not.

    Keys must be strings; values anything JSON holds (tuples become lists), no NaN
    or infinity.

    >>> checked_extra({"price": 9.5, "tags": ("a", "b"), "stock": None})
    {'price': 9.5, 'tags': ['a', 'b'], 'stock': None}
    >>> checked_extra({"when": object()})
    Traceback (most recent call last):
    ...
    ValueError: not JSON: Object of type object is not JSON serializable
    """
    if not isinstance(value, Mapping):
        raise ValueError(f"expected a dict, got {type(value).__name__}")
    value = dict(value)
    bad_keys = [k for k in value if not isinstance(k, str)]
    if bad_keys:
        raise ValueError(f"keys must be strings, got {bad_keys[0]!r}")
    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError, RecursionError) as exc:
        raise ValueError(f"not JSON: {exc}") from None
    loaded: dict[str, Any] = json.loads(text)
    return loaded


class ExtractPipeline(KcPipeline):
    """Stage 1, and the owner of the stage workers (``KC_STAGE_WORKERS``).

    With workers, each HTML page goes to one of them, which works out stages 1-4
    (:func:`~knowledge_crawler.transform.stages.prepare`); this stage applies its
    own result and leaves the rest on the item (``PageItem.prepared``) for stages
    2-4. Without, stage 1 runs here and each later stage computes its own.
    """

    _selector_warned = False
    _extra_warned = False
    pool: StagePool | None = None
    _pool_failed = False
    _close_task: asyncio.Task[None] | None = None
    #: the stored retry state of the crawl's failed pages, by key (read once, when the
    #: first junk answer needs it), kept current with the parse failures recorded since
    _failed: dict[tuple[str, str], FetchFailure] | None = None

    def open_spider(self) -> None:
        config = self.runtime.config
        workers = worker_count(config.stage_workers)
        if workers:
            rules = {sid: self.runtime.stage_rules(sid) for sid in self.runtime.sources}
            # a refresh mostly meets 304s: its workers start with the first changed page
            self.pool = self.new_pool(
                workers,
                rules,
                eager=self.runtime.mode == "crawl",
                timeout=config.stage_timeout_seconds,
                stopping=self._stopping,
            )
            self.runtime.stage_pool = self.pool  # the stage middleware sends pages to it
            self.stats.set_value("kc/stages/workers", workers)
        self._policy = RetryPolicy(
            base=config.retry_base_seconds,
            max_attempts=config.retry_max_attempts,
            cap=config.retry_max_seconds,
        )
        self._random = random.Random()

    def new_pool(
        self,
        workers: int,
        rules: dict[str, StageRules],
        *,
        eager: bool,
        timeout: float,
        stopping: Callable[[], bool],
    ) -> StagePool:
        """The crawl's stage workers (a subclass may start them otherwise: tests)."""
        return StagePool(workers, rules, eager=eager, timeout=timeout, stopping=stopping)

    def _stopping(self) -> bool:
        """Whether the crawl is being stopped (Ctrl-C, SIGTERM)."""
        engine = self.crawler.engine
        return engine is not None and not engine.running

    async def close_spider(self) -> None:
        if self.pool is not None:
            await self.pool.close()
            self.inc("stages/batches", self.pool.batches)
            self.inc("stages/pages", self.pool.pages)
            self.inc("stages/restarts", self.pool.restarts)
            self.inc("stages/worker_cpu_ms", round(1000 * self.pool.worker_cpu))
            self.stats.set_value("kc/stages/pipes_widened", self.pool.pipes_widened)

    def process_page(self, item: PageItem) -> Any:
        if item.stage_failure is not None:  # the stage middleware's worker could not do it
            return self._not_done(item, item.stage_failure)
        if item.html is None:
            # not a page: recorded in the crawl state, not fetched again until it is due
            self.inc("extract/non_html")
            if item.junk is not None:  # labelled HTML: a parse failure, a stored page kept
                junk: Junk = item.junk
                return self._junk(item, junk, item.junk_digest or "") or self._no_text(item)
            return self._refused(item, f"not HTML ({item.content_type or 'no Content-Type'})")
        if item.prepared is not None:  # the stage middleware had a worker do it
            return self._applied(item, item.prepared.extracted)
        if self.pool is not None and item.source_id in self.pool.rules:
            return self._in_worker(item, self.pool)  # a coroutine, awaited by Scrapy
        return self._applied(item, extract_page(item.html, item.final_url, item.content_selector))

    async def _in_worker(
        self, item: PageItem, pool: StagePool
    ) -> PageItem | UrlOutcomeItem | FailureItem:
        assert item.html is not None
        page = PageInput(item.source_id, item.final_url, item.html, item.content_selector)
        try:
            prepared = await pool.prepare(page)
        except (StagePageError, StagePoolFailed, StagePoolStopped) as exc:
            return self._not_done(item, exc)
        item.prepared = prepared
        return self._applied(item, prepared.extracted)

    def _not_done(self, item: PageItem, error: Exception) -> FailureItem:
        """A page the stage workers could not do, as a failed fetch with retry state: not
        stored (a stored page keeps its record), fetched again by a later crawl."""
        if isinstance(error, StagePoolStopped):  # left as a page never fetched: due again
            raise DropItem(f"{item.final_url}: not done, {error}", log_level="DEBUG")
        if not isinstance(error, StagePageError):  # the pool is gone: the crawl stops
            self._stop(error)
            return retry_later(item, type(error).__name__)
        if isinstance(error, WorkerCrashed):
            self.inc("extract/worker_crashed")
        elif isinstance(error, StageTimeout):
            self.inc("stages/timed_out")
        else:
            self.inc("stages/failed")
        key = (item.source_id, item.request_key or item.canonical_url)
        decision = next_attempt(
            self.runtime.attempts.get(key),
            Failure(None, error.error),
            datetime.now(UTC),
            self._policy,
            self._random.random,
        )
        assert decision.state is not None  # a failure always leaves a state
        self.runtime.attempts[key] = decision.state
        dead = decision.action is Action.DEAD_LETTER
        if dead:
            self.inc("stages/dead_lettered")
        logger.error(
            "%s; the page is not stored, %s",
            error,
            f"dead-lettered after {decision.state.attempts} failures"
            if dead
            else f"retried from {decision.retry_at} (failure {decision.state.attempts})",
        )
        return FailureItem(
            source_id=item.source_id,
            canonical_url=key[1],
            url=item.url,
            depth=item.depth,
            failed_at=utc_now(),
            status=None,
            error=error.kind,
            action=decision.action.value,
            state=decision.state,
        )

    def _stop(self, error: Exception) -> None:
        """The stage workers cannot start: say so once and stop the crawl as failed."""
        if self._pool_failed:
            return
        self._pool_failed = True
        self.stats.set_value("kc/stages/pool_failed", 1)
        self.stats.set_value("kc/stages/error", str(error))
        logger.error(
            "%s; stopping the crawl (the pages not done are kept as retries due at once; "
            "KC_STAGE_WORKERS=0 runs the stages in the crawl process)",
            error,
        )
        engine = self.crawler.engine
        if engine is not None and engine.spider is not None:
            # Not awaited: closing waits for the items in flight, this one included.
            self._close_task = asyncio.get_running_loop().create_task(
                engine.close_spider_async(reason=STAGES_FAILED)
            )

    def _applied(
        self, item: PageItem, extracted: Extracted
    ) -> PageItem | UrlOutcomeItem | FailureItem:
        """Stage 1's result on the item, counted; a failed extraction stores no page (the
        URL is recorded as refused, and a stored page keeps its record), nor does a
        collapsed one of a stored page, until the same answer repeats over the window."""
        self._count_selector(item, extracted)
        result = extracted.extraction
        if result is None:  # a parse failure never replaces the prior good record
            logger.warning("extraction failed for %s: %s", item.final_url, extracted.error)
            failed = Junk("failed", f"extraction failed: {extracted.error}")
            digest = answer_digest(failed.kind, extracted.error or "")
            return self._junk(item, failed, digest) or self._no_text(item)
        collapsed = self._collapsed(item, result)
        if collapsed is not None:
            digest = answer_digest(collapsed.kind, result.markdown)
            kept = self._junk(item, collapsed, digest)
            if kept is not None:
                return kept
        item.title = result.title
        item.content = result.markdown
        item.headings = list(result.headings)
        item.word_count = result.word_count
        item.language = result.language
        item.html = None  # free the body early: nothing after this step needs it
        item.extra = self._checked_extra(item)
        self.inc("extract/ok")
        return item

    def _key(self, item: PageItem) -> str | None:
        """The canonical URL of the page that answered (None: it has none)."""
        prepared = item.prepared
        if prepared is not None and prepared.canonical_url and prepared.final_url == item.final_url:
            return str(prepared.canonical_url)
        source = self.runtime.sources.get(item.source_id)
        if source is None:
            return None
        try:
            return source.key(item.final_url)
        except ValueError:
            return None

    def _stored(self, item: PageItem) -> KnownPage | None:
        key = self._key(item)
        return None if key is None else self.runtime.known.get((item.source_id, key))

    def _collapsed(self, item: PageItem, result: Extraction) -> Junk | None:
        """Whether the extraction of a stored page collapsed (see ``sync.junk``)."""
        words = result.word_count
        stored = self._stored(item)
        if stored is None or (words and words * COLLAPSE_RATIO >= stored.word_count):
            return None  # the usual case, cheaply
        signature = collapse_signature(item.html or "", result.title, result.markdown)
        return page_junk(words=words, stored_words=stored.word_count, signature=signature)

    def _junk(self, item: PageItem, junk: Junk, digest: str) -> UrlOutcomeItem | FailureItem | None:
        """A junk answer: a URL not stored is refused with its reason; a stored page keeps
        its content and the answer goes to its retry state with the evidence. None: the
        same answer came over the window, and is now the page's content (or the stored
        page has no words to keep: the answer is stored as it is)."""
        known = self._stored(item)
        source = self.runtime.sources.get(item.source_id)
        if known is None or source is None:
            self._count_failure(junk)
            logger.info("%s is no page: %s", item.final_url, junk.reason)
            return self._refused(item, junk.reason)
        if known.word_count <= 0:  # the stored page says nothing either: nothing to keep
            self.inc("extract/junk_as_stored")
            return None
        failed = self._failures().get(known.key)
        prior = evidence_from_json(failed.evidence) if failed is not None else ()
        observed = Observation(
            item.fetched_at,
            item.http_status,
            junk.reason,
            digest,
            item.archive_file,
            item.archive_offset if item.archive_file is not None else None,
        )
        decision = observe(
            prior,
            observed,
            missing_after=source.missing_after,
            missing_window=source.missing_window,
        )
        if decision.accept:
            self.inc("extract/junk_accepted")
            logger.warning(
                "%s answered the same since %s (%s): stored as its content",
                item.final_url,
                decision.since,
                junk.reason,
            )
            self._failures().pop(known.key, None)
            return None
        self._count_failure(junk)
        try:
            now = datetime.fromisoformat(item.fetched_at)
        except ValueError:
            now = datetime.now(UTC)
        state = AttemptState(
            attempts=(failed.attempts if failed is not None and prior else 0) + 1,
            first_failed_at=(
                failed.first_failed_at if failed is not None and prior else item.fetched_at
            ),
            last_error=f"{PARSE_FAILURE}: {junk.reason}",
            last_status=item.http_status,
            next_retry_at=next_retry(
                decision,
                now,
                min_interval=source.min_interval,
                max_interval=source.max_interval,
                missing_window=source.missing_window,
            ),
        )
        logger.warning(
            "%s: %s; its stored content is kept (parse failure %d, next try %s)",
            item.final_url,
            junk.reason,
            state.attempts,
            state.next_retry_at,
        )
        failure = FailureItem(
            source_id=known.source_id,
            canonical_url=known.canonical_url,
            url=item.url,
            depth=item.depth,
            failed_at=item.fetched_at,
            status=item.http_status,
            error=PARSE_FAILURE,
            action=Action.RETRY.value,
            state=state,
            evidence=evidence_to_json(decision.evidence),
        )
        self._failures()[known.key] = retry_record(failure, state)  # as the store keeps it
        return failure

    def _failures(self) -> dict[tuple[str, str], FetchFailure]:
        if self._failed is None:
            self._failed = {f.key: f for f in self.runtime.failed}
        return self._failed

    def _count_failure(self, junk: Junk) -> None:
        self.inc("extract/failed")  # the run's parse_failures
        self.inc(f"extract/junk/{junk.kind}")

    def _no_text(self, item: PageItem) -> PageItem:
        """A junk answer accepted as a stored page's content: the page says nothing now."""
        item.title = None
        item.content = ""
        item.headings = []
        item.word_count = 0
        item.language = None
        item.html = None
        item.extra = {}
        return item

    def _refused(self, item: PageItem, reason: str) -> UrlOutcomeItem:
        """A response that gives no page to store, as the crawl state's refusal of the
        URL that answered (a stored page keeps its record as it is)."""
        key = item.request_key
        source = self.runtime.sources.get(item.source_id)
        if source is not None:
            with contextlib.suppress(ValueError):
                key = source.key(item.final_url)
        if not key:
            raise DropItem(reason, log_level="DEBUG")
        return UrlOutcomeItem(
            source_id=item.source_id,
            canonical_url=key,
            url=item.final_url,
            state="refused",
            checked_at=item.fetched_at,
            reason=reason,
            status=item.http_status,
            depth=item.depth,
        )

    def _count_selector(self, item: PageItem, extracted: Extracted) -> None:
        if extracted.how == SELECTED:
            self.inc("extract/selected")
        elif extracted.how == SELECTOR_FAILED:  # a bad selector set on the item: kept
            self.inc("extract/selector_failed")
            logger.warning(
                "content_selector %r failed on %s: %s; extracted automatically",
                item.content_selector,
                item.final_url,
                extracted.error,
            )
        elif extracted.how == SELECTOR_MISSED:
            self.inc("extract/selector_missed")
            if not self._selector_warned:
                self._selector_warned = True
                logger.warning(
                    "content_selector %r matched no text on %s: extracted automatically "
                    "(every such page is counted in kc/extract/selector_missed)",
                    item.content_selector,
                    item.final_url,
                )
            else:
                logger.debug("content_selector matched no text on %s", item.final_url)

    def _checked_extra(self, item: PageItem) -> dict[str, Any]:
        try:
            return checked_extra(item.extra)
        except ValueError as exc:
            self.inc("extract/extra_invalid")
            level = logging.DEBUG if self._extra_warned else logging.WARNING
            self._extra_warned = True
            logger.log(
                level,
                "extra fields of %s are not stored: %s (kc/extract/extra_invalid counts them)",
                item.final_url,
                exc,
            )
            return {}
