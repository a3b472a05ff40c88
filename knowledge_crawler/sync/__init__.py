"""Pure policies: decisions that need no Scrapy and no database (see DESIGN floors).

``dedupe``: which page represents a group of duplicates, and what changes when it moves.
``policy``: the validators a request for a known page carries, and when a page is due again.
"""
