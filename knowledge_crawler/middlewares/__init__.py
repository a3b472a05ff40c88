"""Scrapy downloader middlewares: per-source scope."""
