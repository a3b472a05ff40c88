"""``scrapy genspider`` that knows the project's templates as well as Scrapy's.

Templates are looked up in ``knowledge_crawler/templates/spiders/`` first (the
``knowledge`` template: a per-site :class:`KnowledgeSpider` subclass), then in
Scrapy's own folder (``basic``, ``crawl``, ``csvfeed``, ``xmlfeed``), or in
``TEMPLATES_DIR/spiders`` when that setting names one. ``--list`` shows them
all; ``-t PATH.tmpl`` still takes a template file by path. Unlike Scrapy's
command, an unknown template exits with status 1, and a URL without a scheme given
with a port (``localhost:8765``) is a host, as one without a port is: ``https://``
is put in front, ``http://`` for a loopback host (a server on this machine)::

    scrapy genspider -t knowledge shop shop.example
    scrapy crawl shop -a seeds=https://shop.example/
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import scrapy
from scrapy.commands.genspider import Command as ScrapyGenspiderCommand

__all__ = ["PROJECT_TEMPLATES", "Command", "site_url"]

#: The project's spider templates; they win over Scrapy's of the same name.
PROJECT_TEMPLATES = Path(__file__).resolve().parents[1] / "templates" / "spiders"


LOOPBACK = ("localhost", "127.0.0.1", "::1")


def site_url(url: str) -> str:
    """The URL of a ``genspider`` argument: a host (with a port or not) gets a scheme.

    >>> site_url("shop.example"), site_url("localhost:8765"), site_url("http://a.example/x")
    ('https://shop.example/', 'http://localhost:8765/', 'http://a.example/x')
    """
    text = url.strip()
    if "://" in text:
        return text
    host = urlsplit("//" + text).hostname or ""
    scheme = "http" if host in LOOPBACK or host.startswith("127.") else "https"
    full = f"{scheme}://{text}"
    return full if urlsplit(full).path else full + "/"


class Command(ScrapyGenspiderCommand):
    def _generate_template_variables(
        self, module: str, name: str, url: str, template_name: str
    ) -> dict[str, Any]:
        variables: dict[str, Any] = super()._generate_template_variables(
            module, name, site_url(url), template_name
        )
        return variables

    def short_desc(self) -> str:
        return "Generate a new spider from a template (the project's 'knowledge' or Scrapy's)"

    @property
    def templates_dirs(self) -> list[Path]:
        """Where templates are looked up, first match wins: the project's, then Scrapy's."""
        assert self.settings is not None
        dirs = [PROJECT_TEMPLATES]
        if self.settings.get("TEMPLATES_DIR"):
            dirs.append(Path(self.settings["TEMPLATES_DIR"], "spiders"))
        dirs.append(Path(scrapy.__path__[0], "templates", "spiders"))
        return [d for d in dict.fromkeys(dirs) if d.is_dir()]

    def _find_template(self, template: str) -> Path | None:
        filename = template if template.endswith(".tmpl") else f"{template}.tmpl"
        for candidate in (Path(filename), *(d / filename for d in self.templates_dirs)):
            if candidate.is_file():
                return candidate
        print(
            f"Unable to find template: {template}\n"
            'Use "scrapy genspider --list" to see all available templates.'
        )
        self.exitcode = 1
        return None

    def _list_templates(self) -> None:
        names = sorted({f.stem for d in self.templates_dirs for f in d.glob("*.tmpl")})
        print("Available templates:", *(f"  {name}" for name in names), sep="\n")
