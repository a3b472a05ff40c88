"""The raw archive (SPEC F-ARCHIVE): fetched responses kept in WARC files
(:mod:`.warc`), and stored pages rebuilt from them with no network (:mod:`.reextract`).

:mod:`.warc` reads and writes files only (no store, no Scrapy); :mod:`.reextract`
stands on it, the store and the pure floors.
"""
