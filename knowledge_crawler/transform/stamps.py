"""Lines that only date the page: "Updated at 1:23 p.m.", "Mis à jour le 29/10/2012 à
14h03", "2015.08.15 10:28" (pure).

A news page sets its timestamp as a line of its own near the headline, and when it sits
inside the article's element the extractor keeps it as a paragraph. Labels leave it out:
it says when the page changed, not what the story says.

:func:`timestamp_line` tells such a paragraph: at most :data:`MAX_WORDS` words, either a
date with a time and nothing else, or a word that says the page was updated or published
("Updated", "Published", "Posted", "Mis à jour", "Actualizado", "Aktualisiert" ...)
followed by nothing, or by a date or a time only, one such pair or more in a bar ("First
Published: 08:19 IST(19/7/2013) | Last Updated: 13:52 IST(19/7/2013)"). A sentence that
starts with such a word ("Updated figures show ...") has other words after it, and stays;
a date alone, without a time, may be a heading of a diary or a changelog, and stays. A
byline alone ("By Jane Doe", "Par Jacques Munier": a word for "by" and two to six
capitalised names) and a byline set as a bar that ends with a date ("Patricio Candia |
Palma | 08/01/2014") are such lines too, and so is a line that only says how long the page
takes to read ("Reading time: 4 min", "Tempo de leitura: 1 minuto"). :func:`credit_line`
tells a line that credits a picture ("Fotos: Sophia Mahnert") or a caption that ends with
its credit ("... Bild: dpa", "... REUTERS/Benoit Tessier"), and :func:`label_line` the
label an ad slot or a share bar leaves behind.
"""

from __future__ import annotations

import re

__all__ = [
    "MAX_WORDS",
    "credit_line",
    "dated_line",
    "label_line",
    "name_line",
    "timestamp_line",
    "timestamp_lines",
]

MAX_WORDS = 10
_MAX_CHARS = 120  # longer is more than ten words of a date: not looked at further

_LABEL = (
    r"(?:(?:last|first|originally)\s+)?(?:updated|modified|published|posted|mis\s+à\s+jour|publié|actualizado"
    r"|publicado|aktualisiert|veröffentlicht|aggiornato|pubblicato)"
)
_MONTH = (
    r"jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec|janv|févr|mars|avr|mai|juin"
    r"|juil|août|déc|ene|abr|ago|dic|mär|okt|dez|gen|mag|giu|lug|ott"
    r"|mon|tue|wed|thu|fri|sat|sun|lun|mer|jeu|ven|sam|dim"
)
_DATE_WORD = (
    rf"(?:\d{{1,4}}(?:[./:h-]\d{{1,4}}){{0,2}}(?:st|nd|rd|th)?|(?:{_MONTH})\w*\.?"
    r"|[ap]\.?m\.?|gmt|utc|[ecmp][sd]t|ist|bst|cest|cet|jst|on|at|le|à|el|am|um|de|del|,|\||-|—|·)[,.]?"
)
#: a date in brackets, after a time zone without a space ("13:52 IST(19/7/2013)")
_BRACKETED = r"\s*\(\d{1,4}(?:[./-]\d{1,4}){0,2}\)"
_STAMPED = rf"{_LABEL}\s*:?(?:\s+{_DATE_WORD}|{_BRACKETED})*"
_STAMP = re.compile(
    rf"[-\u2013\u2014|·•]?\s*{_STAMPED}(?:\s*\|\s*{_STAMPED})*\s*"
    r"|\d{1,4}[./-]\d{1,2}[./-]\d{1,4},?\s+\d{1,2}[:h.]\d{2}(?:\s+(?:uhr|gmt|utc))?",
    re.IGNORECASE,
)


def timestamp_line(text: str) -> bool:
    """Whether a paragraph only dates the page (see the module's rules)."""
    text = text.strip()
    if not text or len(text) > _MAX_CHARS or len(text.split()) > MAX_WORDS:
        return False
    return (
        _STAMP.fullmatch(text) is not None
        or _byline_bar(text)
        or _BYLINE.fullmatch(text) is not None
        or _READING_TIME.fullmatch(text) is not None
    )


def timestamp_lines(text: str) -> bool:
    """A paragraph of several lines, each of which only dates the page ("First Published:
    00:37 IST(16/5/2013)" and "Last Updated: ..." set one under the other)."""
    lines = [line for line in text.split("\n") if line.strip()]
    return len(lines) > 1 and all(timestamp_line(line) for line in lines)


#: how long the page takes to read: "Reading time: 4 min", "5 min read", "Lesezeit: 3
#: Minuten", "Tempo de leitura: 1 minuto", "Temps de lecture : 2 min"
_READING_TIME = re.compile(
    r"(?:reading\s+time|read\s+time|lesezeit|lesedauer|temps\s+de\s+lecture|tempo\s+de\s+leitura"
    r"|tiempo\s+de\s+lectura|tempo\s+di\s+lettura)\s*:?\s*(?:about\s+|ca\.\s*|circa\s+)?"
    r"\d+\s*(?:min\w*|minutes?)\.?"
    r"|\d+\s*(?:-\s*)?min(?:ute)?s?\.?\s+(?:read|lesezeit|de\s+lecture|de\s+leitura|de\s+lectura)",
    re.IGNORECASE,
)


def label_line(text: str) -> bool:
    """A line that is only the label of an ad slot or a share bar ("Anzeige",
    "Advertisement", "hirdetés", "Teilen auf", "Share this"), or of a link to the
    comments or to more ("comment", "more »"): the slot's, the bar's or the link's
    content is gone, its label stayed."""
    return len(text) <= _LABEL_CHARS and text.strip(_LABEL_STRIP).lower() in _LABELS


#: what a label is set between: separators, a colon, and the arrows of a link ("more »")
_LABEL_STRIP = " \t\n:|-\u2013\u00bb\u203a\u2192>"


_LABELS = frozenset(
    {
        "advertisement",
        "advertising",
        "anzeige",
        "werbung",
        "hirdetés",
        "publicidad",
        "publicité",
        "pubblicità",
        "reklama",
        "reklame",
        "share",
        "share this",
        "share this article",
        "share on",
        "teilen",
        "teilen auf",
        "diesen artikel teilen",
        "partager",
        "partager sur",
        "compartir",
        "condividi",
        "user rating",
        "rate this article",
        "comment",
        "comments",
        "more",
        "read more",
    }
)
_LABEL_CHARS = 40


def credit_line(text: str) -> bool:
    """A line that credits a picture: "Fotos: Sophia Mahnert", or a caption that ends
    with its credit ("Auch Herbert Grönemeyer gehört zu den Unterstützern. Bild: dpa");
    or that only names where the picture or the story came from ("Handout", "The New
    York Times News Service", "Associated Press")."""
    if len(text) <= _SOURCE_CHARS and _SOURCE.fullmatch(text.strip()) is not None:
        return True
    if (":" not in text and "/" not in text) or len(text) > _CAPTION_CHARS:
        return False  # every credit has one or the other (a cheap test first)
    text = text.strip()
    if len(text.split()) > _CAPTION_WORDS:
        return False
    if _AGENCY_CREDIT.search(text) is not None:
        return True
    match = _CREDIT.search(text)
    if match is None:
        return False
    return match.start() == 0 or text[match.start() - 1] in " .()"


#: a line that only names a source: a handout picture, a wire or news service
_SOURCE = re.compile(
    r"\(?(?:handout(?:\s+photo)?|file\s+photo|(?:the\s+)?associated\s+press"
    r"|(?:the\s+)?(?:[A-Z][\w.'\u2019&-]*\s+){1,5}(?:news|wire)\s+services?)\)?\.?",
    re.IGNORECASE,
)
_SOURCE_CHARS = 60
#: a picture's credit: a label and up to six words of names, to the end of the line
_CREDIT = re.compile(
    r"(?:fotos?|photos?|bild(?:er)?|images?|photo\s+credit|credits?)\s*:\s*"
    r"(?:[^\s.!?]+[ ./&,-]*){1,6}$",
    re.IGNORECASE,
)
_CAPTION_WORDS = 40
_CAPTION_CHARS = 400
#: a caption's credit to an agency and its photographer, at its end ("REUTERS/Jane Doe")
_AGENCY_CREDIT = re.compile(
    r"\b(?:REUTERS|Reuters|AFP|AP(?: Photo)?|EPA|dpa|Getty Images)\s*/\s*"
    r"[A-Z][\w.'\u2019-]*(?:\s+[A-Z][\w.'\u2019-]*){0,3}[\s\-\u2013)]*$"
)


def dated_line(text: str) -> bool:
    """A short line that holds a date ("October 22, 2019 report", "12.03.2019 | Politik"):
    above a story's headline it is the page's dateline, not the story."""
    text = text.strip()
    return len(text.split()) <= _DATED_WORDS and _DATE.search(text) is not None


_DATED_WORDS = 6


def _byline_bar(text: str) -> bool:
    """A byline set as a bar that ends with a date: "Patricio Candia | Palma de Mallorca
    | 08/01/2014", "By Jane Doe | March 3, 2014"."""
    parts = [part.strip() for part in _BAR.split(text)]
    if not 2 <= len(parts) <= _BAR_PARTS or _DATE.fullmatch(parts[-1]) is None:
        return False
    return all(
        part[:1].isupper() and len(part.split()) <= _BAR_WORDS and not _SENTENCE.search(part)
        for part in parts[:-1]
    )


#: a byline alone: "By Jane Doe", "Par Jacques Munier", "Von Anna Maier und Jo Ott"
_BYLINE = re.compile(
    r"(?:[|·•\-\u2013\u2014]\s*)?(?i:by|par|von|por|di|door)\s+"
    r"(?:[A-ZÀ-Þ][\w.'\u2019-]+\s+(?:(?:and|und|et|y|e|en)\s+)?){1,5}[A-ZÀ-Þ][\w.'\u2019-]+"
)
_BAR = re.compile(r"\s[|·•]\s")
_BAR_PARTS = 4
_BAR_WORDS = 4
_SENTENCE = re.compile(r"[.!?:;]")
_DATE = re.compile(
    rf"\d{{1,4}}[./-]\d{{1,2}}[./-]\d{{1,4}}|(?:\d{{1,2}}\.?\s+)?\b(?:{_MONTH})\w*\.?"
    r"(?:\s+\d{1,2}(?:st|nd|rd|th)?,?)?\s+\d{4}",
    re.IGNORECASE,
)


#: a word of a name, a desk or a credit: capitalised, or a particle between such words
_NAME_WORD = re.compile(r"(?:[A-ZÀ-Ý][\w'\u2019.&-]*|of|the|and|de|van|von|der|da|di|du|le|la|y|&)")
#: the most words of a line that only names someone
_NAME_WORDS = 4
#: what a line that names nobody has: a sentence's or a list's punctuation
_NOT_A_NAME = frozenset('.!?:;,"\u201c\u201d()')


def name_line(text: str) -> bool:
    """A line that only names someone or something: a byline without its "By" ("Von
    Gregory Lipinski", "Maggie Haberman"), a desk ("USA TODAY Sports"), a credit
    ("Courtesy G4"), a source ("CNN"): one to four words, each capitalised or a particle
    between such words, and no sentence punctuation."""
    words = text.split()
    if not 1 <= len(words) <= _NAME_WORDS or _NOT_A_NAME.intersection(text):
        return False
    return words[0][0].isupper() and all(_NAME_WORD.fullmatch(w) for w in words)
