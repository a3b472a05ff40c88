"""Discovery adapters: robots.txt, sitemaps, feeds, paginated APIs -> candidate URLs (pure)."""
