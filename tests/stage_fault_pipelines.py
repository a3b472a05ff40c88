"""Extract stages whose stage workers fail on purpose (``tests.stage_faults``), for
crawls: in-process (``ITEM_PIPELINES`` of :func:`pipelines`) or ``scrapy crawl -s``."""

from __future__ import annotations

from typing import Any

from knowledge_crawler.crawl.stage_pool import StagePool
from knowledge_crawler.pipelines.extract import ExtractPipeline
from knowledge_crawler.settings import ITEM_PIPELINES
from knowledge_crawler.transform.stages import StageRules
from tests.stage_faults import UnstartablePool, crash_in_stage, raise_in_stage, spin_in_stage


class _FaultyExtract(ExtractPipeline):
    work: Any = None

    def new_pool(self, workers: int, rules: dict[str, StageRules], **kw: Any) -> StagePool:
        return StagePool(workers, rules, work=self.work, **kw)


class RaisingExtract(_FaultyExtract):
    work = staticmethod(raise_in_stage)


class CrashingExtract(_FaultyExtract):
    work = staticmethod(crash_in_stage)


class SpinningExtract(_FaultyExtract):
    work = staticmethod(spin_in_stage)


class UnstartableExtract(ExtractPipeline):
    def new_pool(self, workers: int, rules: dict[str, StageRules], **kw: Any) -> StagePool:
        return UnstartablePool(workers, rules, **kw)


def pipelines(extract: type[ExtractPipeline]) -> dict[str, int]:
    """The project's pipelines with ``extract`` in place of its extract stage."""
    name = "knowledge_crawler.pipelines.extract.ExtractPipeline"
    out = {k: v for k, v in ITEM_PIPELINES.items() if k != name}
    out[f"{extract.__module__}.{extract.__qualname__}"] = ITEM_PIPELINES[name]
    return out
