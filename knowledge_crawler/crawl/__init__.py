"""The crawl machinery: what a crawl runs on that is neither Scrapy glue nor pure policy.

- :mod:`.runtime`: the crawler-scoped handles the spider and the pipelines share (the
  store, the run record, the stage pool, the known pages and retry state);
- :mod:`.stage_pool`: the worker processes that run the CPU-heavy stages;
- :mod:`.frontier`: the shared frontier of several crawl processes (scrapy-redis);
- :mod:`.dedupe_scratch` and :mod:`.dedupe_log`: the dedupe policy's state, in a
  temporary SQLite file past a size, and shared through Redis by a shared crawl;
- :mod:`.chromium`: where the browser of a rendering crawl is and how it runs.

Scrapy glue (``spiders/``, ``middlewares/``, ``pipelines/``, ``extensions/``) stands
above; the store and the pure floors (``sync/``, ``discovery/``, ``transform/``) below.
"""
