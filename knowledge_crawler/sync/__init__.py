"""Pure policies: decisions that need no Scrapy and no database (see DESIGN floors).

``dedupe``: which page represents a group of duplicates, and what changes when it moves.
"""
