"""AutoThrottle that never takes a download slot below the delay configured for it.

Scrapy's AutoThrottle moves every slot's delay towards ``latency / target
concurrency``, bounded by ``DOWNLOAD_DELAY`` and ``AUTOTHROTTLE_MAX_DELAY``; a fast
server therefore pulls a source's ``download_delay`` (its slot's ``delay`` in
``DOWNLOAD_SLOTS``, ``kc:<source id>``) down to almost nothing. This subclass
adapts the same way, then holds the slot at its configured delay or above,
even when that is above ``AUTOTHROTTLE_MAX_DELAY``: the source's own delay is a
promise to the site, the maximum is only a cap on adaptation. Slots without a
configured delay (per-host slots, sources without ``download_delay``) behave
exactly as with Scrapy's AutoThrottle. A slot configured with a delay of 0 (a source's
``download_delay = 0``: a site one owns, no politeness wanted) is left out of
AutoThrottle: Scrapy's would hold it at ``DOWNLOAD_DELAY`` (0.25 s) or above.

Enable it in place of Scrapy's, at the same order::

    EXTENSIONS = {
        "scrapy.extensions.throttle.AutoThrottle": None,
        "knowledge_crawler.extensions.throttle.SourceAutoThrottle": 0,
    }

``AUTOTHROTTLE_ENABLED`` still switches it on and off. Counter:
``kc/throttle/held`` (an adjustment that would have gone below the floor).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from scrapy import Spider
from scrapy.extensions.throttle import AutoThrottle

if TYPE_CHECKING:
    from scrapy.core.downloader import Slot
    from scrapy.http import Response

__all__ = ["SourceAutoThrottle"]


class SourceAutoThrottle(AutoThrottle):
    _floors: dict[str, float]
    #: slots configured with no delay at all: not throttled
    _unthrottled: set[str]

    def _spider_opened(self, spider: Spider) -> None:
        super()._spider_opened(spider)
        # The slot settings the downloader creates its slots from (DOWNLOAD_SLOTS,
        # sources' slots included: the spider adds them before the engine starts).
        per_slot = self.crawler.engine.downloader.per_slot_settings
        self._floors = {
            key: float(slot["delay"])
            for key, slot in per_slot.items()
            if slot.get("delay") is not None and float(slot["delay"]) > 0
        }
        self._unthrottled = {
            key
            for key, slot in per_slot.items()
            if slot.get("delay") is not None and float(slot["delay"]) == 0
        }

    def _adjust_delay(self, slot: Slot, latency: float, response: Response) -> None:
        if self._unthrottled and self._is_one_of(slot, self._unthrottled):
            return
        super()._adjust_delay(slot, latency, response)
        floor = self._floor_of(slot)
        if slot.delay < floor:
            slot.delay = floor
            assert self.crawler.stats is not None
            self.crawler.stats.inc_value("kc/throttle/held")

    def _is_one_of(self, slot: Slot, keys: set[str]) -> bool:
        slots = self.crawler.engine.downloader.slots
        return any(slots.get(key) is slot for key in keys)

    def _floor_of(self, slot: Slot) -> float:
        """The configured delay of ``slot``, or 0.0 when its settings give none.

        ``_adjust_delay`` is handed the slot, not its key: look it up among the few
        keys that configure a delay.
        """
        if not self._floors:
            return 0.0
        slots = self.crawler.engine.downloader.slots
        for key, floor in self._floors.items():
            if slots.get(key) is slot:
                return floor
        return 0.0
