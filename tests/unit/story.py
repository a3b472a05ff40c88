"""A news story of six numbered paragraphs, for the tests of what extraction drops around
a story (teasers, menus, captions, closing lines ...)."""

from __future__ import annotations

#: the story's paragraphs, as text
STORY = [
    f"Paragraph {i} of the story says what happened at the harbour on Monday, "
    "who saw it, and what the port authority will do about it next week."
    for i in range(6)
]


def paragraphs(first: int = 0, last: int = len(STORY)) -> str:
    """The story's paragraphs ``first`` to ``last`` (excluded) as ``<p>`` elements."""
    return "".join(f"<p>{text}</p>" for text in STORY[first:last])


def page_with(block: str, *, at: int = 3, container: str = "article") -> str:
    """A page of the story in ``container`` with ``block`` after its first ``at``
    paragraphs."""
    return (
        f"<html><body><{container}>{paragraphs(0, at)}{block}{paragraphs(at)}"
        f"</{container}></body></html>"
    )


def whole_story(text: str) -> bool:
    """Whether every paragraph of the story is in ``text``."""
    return all(f"Paragraph {i} of the story" in text for i in range(len(STORY)))
