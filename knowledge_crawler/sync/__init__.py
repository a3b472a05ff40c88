"""Pure policies: decisions that need no Scrapy and no database (see DESIGN floors).

``dedupe``: which page represents a group of duplicates, and what changes when it moves.
``deletion``: a page's status (active, suspected missing, tombstoned) as its URL answers over time.
``junk``: a 200 that is no page (empty, binary, a collapsed extraction), and when it becomes one.
``policy``: the validators a request for a known page carries, and when a page is due again.
``retry``: what a failed fetch means, when to try it again, and when to dead-letter it.
"""
