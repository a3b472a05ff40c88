"""Scrapy extensions: progress reports and politeness."""
