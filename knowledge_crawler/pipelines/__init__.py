"""Ordered item pipelines (SPEC F-PIPELINE); ``settings.ITEM_PIPELINES`` declares the order.

0. :class:`~.archive.ArchivePipeline`   the raw response to a WARC file (F-ARCHIVE)
1. :class:`~.extract.ExtractPipeline`   HTML -> main content, title, headings, word count
2. :class:`~.clean.CleanPipeline`       boilerplate regexes, whitespace, thin flag
3. :class:`~.canonicalize.CanonicalizePipeline`  identity URL
4. :class:`~.fingerprint.FingerprintPipeline`    SHA-256 (and MinHash)
5. :class:`~.dedupe.DedupePipeline`     exact duplicates marked ``duplicate_of``
6. :class:`~.store.StorePipeline`       batched upserts, one transaction per batch

Each pipeline is thin glue: the logic lives in the pure ``transform`` modules.
"""
