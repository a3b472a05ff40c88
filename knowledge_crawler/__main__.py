"""``python -m knowledge_crawler``: the same as the ``knowledge-crawler`` command."""

from knowledge_crawler.cli.main import main

main()
