"""Recurring refresh crawls (SPEC F-SCHEDULE): the service (:mod:`.service`) and the
launchers that run one crawl each, as a subprocess (:mod:`.local`) or a scrapyd job
(:mod:`.scrapyd`). ``knowledge-crawler schedule`` (``cli/schedule.py``) puts them together.
"""
