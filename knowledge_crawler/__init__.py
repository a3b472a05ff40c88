"""knowledge_crawler: turn websites into a fresh, queryable knowledge dataset."""

__version__ = "0.1.0"
