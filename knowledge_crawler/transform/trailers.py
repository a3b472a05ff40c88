"""Lines that close a story about its author or the site: follow, reach, subscribe (pure).

News pages end the article text with a line that is not the story: "Email Tariq Malik
at tmalik@space.com or follow him @tariqjmalik. Follow us on Twitter @Spacedotcom",
"Have a tip? Amy Kuperinsky may be reached at ... Follow her on Twitter @AmyKup",
"Get the latest updates right in your inbox. Subscribe to NJ.com's newsletters.", "Some
of the links on <site> are affiliate links ... we may earn a small commission". They
sit in the article's own element, as paragraphs, so the extractor keeps them; benchmark
labels leave them out.

:func:`closing_lines` counts such lines at the end of the text: a paragraph of at most
:data:`MAX_WORDS` words that asks the reader to follow someone on a social network, says
how to reach the author at an address, to subscribe to a newsletter, or that the page's
links earn the site a commission, or that it is paid for ("Anzeige: Dieser Beitrag ist
in Zusammenarbeit mit ... entstanden", "Sponsored: ..."); or that cites the page or the
paper it reports on ("Citation: ... retrieved ... from <address>", "More information:
...", a reference with a DOI), credits its reporting ("Contributing: ...", "...
contributed to this report", "Con información de ...", "Avec AFP", "Additional reporting
by ...; Editing by ...", "Our Standards: The Thomson Reuters Trust Principles.", "Autor:
...", "Das Bildmaterial wurde von ... zur Verfügung gestellt"), points to where the rest
is ("Den kompletten Beitrag lesen Sie in der neuen Juli-Ausgabe ..."), asks for a
reader's money or mail ("If you enjoyed this article, ... Join NRPLUS", "Questions?
Comments? Email us at"), says where the text first appeared ("This article originally
appeared on VICE US."), or claims its copyright; or that says who its author is
("Liliana Segura is a journalist and an editor at The Nation", "Inga Buller ist Head of
Social & Community bei CHIP": a name of two to four capitalised words, "is", "ist",
"est" or "es", then a trade within six words), or that only names the author ("Maggie
Haberman": :func:`.stamps.name_line`), gives the author's addresses ("kokobj@yna.co.kr")
or the wire's end mark ("(END)"). Only the last paragraphs are looked at, from the end,
and the count stops at the first one that is not such a line: the same words inside the
story ("he told followers on Twitter") are part of it.

:func:`story_end` finds where a story ends at a line late in the text that signs it off
("Written by Marie Ellis", "Posted by Jane Doe at 3:04 PM", "Copyright: Medical News
Today"), opens the reader comments ("blog comments powered by Disqus", "Note: By
posting your comments here you agree to ...") or heads a box of other stories or of
further reading ("MORE TENNIS HEADLINES", "Weiterführende Links:", "A lire aussi :"):
what follows it there is the page's (sources, how to cite the page, ratings, comments,
more stories), however long.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from knowledge_crawler.transform.stamps import name_line

__all__ = ["MAX_WORDS", "closing_line", "closing_lines", "republished_line", "story_end"]

#: the longest closing line (words)
MAX_WORDS = 60
#: the most words of a closing line that only names the author or gives an address
_NAME_WORDS_AT_END = 4
#: how many paragraphs from the end are looked at
_LAST = 5

_NETWORKS = "twitter|facebook|instagram|linkedin|threads|bluesky|mastodon|youtube|tiktok|x"
_CLOSING = re.compile(
    r"(?:^|[.!?:;,]\s+|\b(?:or|and)\s+)follow\s+(?:him|her|them|us|me)\b[^.!?]{0,40}?"
    rf"(?:{_NETWORKS}|@\w)"
    r"|(?:^|[.!?:;,]\s+)follow\s+(?:[\w@.'\u2019-]+\s+){1,3}?on\s+"
    rf"(?:{_NETWORKS})\b"
    r"|^\W*follow\s+(?:us\s+)?@\w+\W*$"
    r"|\b(?:may|can)\s+be\s+reached\s+at\s+\S+@\S+\.\w"
    r"|\b(?:e-?mail|contact|write\s+to)\s+[\w.' -]{0,40}?\bat\s+\S+@\S+\.\w"
    r"|(?:^|[.!?]\s+)(?:subscribe\s+to|sign\s+up\s+for)\b[^!?]{0,60}?\bnewsletters?\b"
    r"|\b(?:contains?|includes?|are|uses?)\s+affiliate\s+links\b"
    r"|\bwe\s+(?:may\s+)?(?:earn|receive)\s+(?:a\s+)?(?:small\s+)?commission\b"
    r"|^\W*if\s+you\s+(?:buy|purchase)\s+something\s+(?:through|via|from)\s+(?:this|our|a)\b"
    r"|^citation:.{0,300}\bretrieved\b"
    r"|^contributing\s*:"
    r"|\bcontributed\s+(?:to\s+this\s+(?:report|story)|reporting)"
    r"(?:\s+from\s+[\w ,.'\u2019-]{1,60})?\s*\.?$"
    r"|^mit\s+material\s+(?:von|der|des)\b"
    r"|^(?:con\s+(?:información|informaciones|reportes?)\s+de|com\s+informaç(?:ão|ões)\s+d[aeo]s?)"
    r"(?:[\s,]+(?-i:[A-ZÁÉÍÓÚÂÊÔÃÕÇÑ][\w.'\u2019-]*|y|e|de|da|do|das|dos|la|el|del|agencias))+"
    r"\s*\.?$"
    r"|^avec\s+(?:l['\u2019])?(?:afp|ap|reuters|agences?)\s*\.?$"
    r"|^\W*(?:anzeige|werbung|sponsored(?:\s+(?:post|content))?|paid\s+(?:post|content))\s*:"
    r"|^more\s+information\s*:"
    r"|\bdoi:\s*10\.\d{4,}/"
    r"|^(?:additional\s+)?reporting\s+by\b[^.!?]*;\s*(?:editing|writing)\s+by\b"
    r"|^(?:editing|writing)\s+by\s+(?-i:[A-Z])"
    r"|^our\s+standards\s*:"
    r"|^(?:autor(?:in)?|author)\s*:"
    r"|^\W*if\s+you\s+(?:enjoyed|liked)\s+(?:this|the|our)\s+(?:article|post|story|piece)\b"
    r"|^\W*questions\?\s*comments\?"
    r"|^\W*(?:read|see|find)\s+more\s+(?:about|by|from)\s+[^.!?]{1,80}\b(?:on|in|at)\s"
    r"|(?:bild|foto)material\b.{0,80}\bzur\s+verfügung\s+gestellt"
    r"|^(?:den|die|das)\s+(?:komplette|ganze|vollständige)[nms]?\s+(?:beitrag|artikel|text)"
    r"\s+lesen\s+sie\b",
    re.IGNORECASE,
)
#: an author's note: a name (two to four capitalised words), "is" in English, German,
#: French or Spanish, then within six words a trade, as a word or a compound's end ("an
#: award-winning journalist", "IGN's deal curator", "Gründungspartner", "Head of Social")
_BIO = re.compile(
    r"(?-i:[A-ZÄÖÜÉ][\w'\u2019.-]+(?:\s+[A-ZÄÖÜÉ][\w'\u2019.-]+){1,3})\s+(?:is|ist|est|es)\s+"
    r"(?:[\w-]+[\s'\u2019]+){0,5}?\w*(?:journalist|reporter|writer|editor|author|autor|"
    r"correspondent|columnist|contributor|producer|photographer|founder|professor|researcher|"
    r"fellow|analyst|blogger|curator|redakteur|korrespondent|gründer|partner|head\s+of|chief|"
    r"director|rédact\w*|auteur|chercheu\w*|periodista|redactor)(?:in|a)?\b",
    re.IGNORECASE,
)
#: the longest author's note (words): one says more than a closing line
_BIO_WORDS = 120
#: where the text was first published ("This article originally appeared on VICE US.",
#: "Originally published at medium.com"): a line that opens or closes a copy
_REPUBLISHED = re.compile(
    r"\W*(?:(?:this|the)\s+(?:article|story|post|piece|interview|essay|text)\s+(?:was\s+|has\s+been\s+)?"
    r"|it\s+was\s+)?(?:originally|first)\s+(?:appeared|published|ran|posted)\s+(?:on|in|at|by)\b",
    re.IGNORECASE,
)
_REPUBLISHED_WORDS = 30


def republished_line(text: str) -> bool:
    """A line that says where the text was first published (see :data:`_REPUBLISHED`)."""
    return len(text.split()) <= _REPUBLISHED_WORDS and _REPUBLISHED.match(text) is not None


#: a copyright line ("© 2019 Science X Network", "Copyright 2014 The Associated Press")
_COPYRIGHT = re.compile(r"(?:©|\(c\)\s|copyright\s+(?:©|\(c\)|\d{4}))", re.IGNORECASE)
_COPYRIGHT_WORDS = 15


#: a word each form of :data:`_CLOSING` holds: a test in C before the expression, which
#: tries each of its forms at each character (30 µs a paragraph)
_KEYWORDS = (
    "follow",
    "reached",
    "mail",
    "contact",
    "write",
    "subscribe",
    "sign",
    "affiliate",
    "commission",
    "something",
    "citation",
    "contribut",
    "material",
    "con informaci",
    "con report",
    "com informaç",
    "avec",
    "anzeige",
    "werbung",
    "sponsored",
    "paid",
    "information",
    "doi:",
    "reporting",
    "editing",
    "writing",
    "standards",
    "autor",
    "author",
    "enjoyed",
    "liked",
    "questions",
    "more",
    "verfügung",
    "lesen sie",
)


#: a line of the author's addresses only ("kokobj@yna.co.kr", "paul.t@chron.com
#: twitter.com/paultakahashi"), or the wire's end mark ("(END)", "-30-")
_SIGNATURE = re.compile(
    r"(?:(?:\S+@\S+\.\w+|@\w+|(?:twitter|x)\.com/\w+)[\s,|/]*)+|\(end\)|-30-",
    re.IGNORECASE,
)


def closing_line(text: str) -> bool:
    """Whether one paragraph is a closing line (see the module's rules)."""
    words = len(text.split())
    if words <= _NAME_WORDS_AT_END and (name_line(text) or _SIGNATURE.fullmatch(text.strip())):
        return True
    if words <= _COPYRIGHT_WORDS and _COPYRIGHT.match(text.lstrip()):
        return True
    if words <= _BIO_WORDS and _BIO.match(text.lstrip()):
        return True
    if republished_line(text):
        return True
    if words > MAX_WORDS:
        return False
    lowered = text.lower()
    if not any(keyword in lowered for keyword in _KEYWORDS):
        return False
    return _CLOSING.search(text.lstrip()) is not None


def closing_lines(paragraphs: Sequence[str]) -> int:
    """How many of the last ``paragraphs`` are closing lines, counted from the end."""
    count = 0
    for text in reversed(paragraphs[-_LAST:]):
        if not closing_line(text):
            break
        count += 1
    return count


#: a line that signs the story off: its author ("Written by Marie Ellis", "Posted by
#: Jane Doe at 3:04 PM") or its owner ("Copyright: Medical News Today")
_SIGNED = re.compile(
    r"(?:written|posted|reported|compiled|edited)\s+by\s+"
    r"(?-i:[A-Z][\w'.-]+(?:\s+[A-Z][\w'.-]+){0,3})\.?(?:\s+(?:at|on)\s+[^.!?]{1,40})?"
    r"|copyright\s*:[^.!?]{0,60}",
    re.IGNORECASE,
)
#: a line that opens the reader comments ("blog comments powered by Disqus", "Note: By
#: posting your comments here you agree to the terms ...", "80 comment(s) - last by ...",
#: "Leave a reply", "Visitor Opinions", "Opinions that are derogatory ... may be removed")
_COMMENTS_OPEN = re.compile(
    r"\W*(?:(?:comments?\s+)?note\s*:\s*)?(?:blog\s+)?comments\s+powered\s+by\b"
    r"|\W*(?:comments?\s+)?(?:note\s*:\s*)?by\s+posting\s+(?:your\s+|a\s+)?comments?\b"
    r"|\W*\d+\s+comment(?:s|\(s\))?\s*(?:[-:]|$)"
    r"|\W*(?:leave|post|add|write)\s+(?:a|your)\s+(?:comment|reply|opinion)\b(?:\W+\w+){0,3}\W*$"
    r"|\W*comments\s+are\s+closed\b"
    r"|\W*join\s+the\s+(?:discussion|conversation)\b"
    r"|\W*visitor\s+opinions\b"
    r"|\W*opinions\s+that\s+are\s+(?:derogatory|offensive)\b"
    r"|\W*\d+\s+(?:commenti|kommentare?|commentaires?|comentarios?|coment[aá]rios?|komentarz[ey]?"
    r"|reacties|kommentarer)\s*(?:[-:]|$)"
    r"|\W*(?:kommentare|comments)\s+(?:werden\s+geladen|(?:are\s+)?loading)\b",
    re.IGNORECASE,
)
#: the heading of a box of other stories ("MORE TENNIS HEADLINES", "Most Popular",
#: "SPONSORED HEADLINES", "EDITORS' PICKS", "Related Stories")
_MORE_STORIES = re.compile(
    r"(?:sponsored|more|most\s+(?:popular|read|sent|viewed|emailed|shared)|top|related"
    r"|recommended|trending|latest)\b[\w\s'\u2019.-]{0,30}?\b(?:headlines|stories|articles|posts)"
    r"(?:\s+on\s+[\w.]+)?|most\s+popular|editors?['\u2019]?s?\s+picks|more\s+to\s+read",
    re.IGNORECASE,
)
#: the same heading in other languages, and a "read also" one ("Weiterführende Links:",
#: "Verwandte Themen auf unserem Blog:", "Auch interessant:", "A lire aussi :", "Leggi
#: anche"); not "See also", which heads a part of a documentation page
_READ_ALSO = re.compile(
    r"weiterführende\s+links|verwandte\s+(?:themen|artikel|beiträge)\b.*|auch\s+interessant"
    r"|das\s+könnte\s+(?:sie|dich)\s+auch\s+interessieren|mehr\s+zum\s+thema"
    r"|lesen\s+sie\s+auch|(?:à|a)\s+lire\s+aussi|lire\s+aussi|sur\s+le\s+même\s+sujet"
    r"|read\s+also|also\s+read|you\s+(?:may|might)\s+also\s+like"
    r"|lee\s+también|leia\s+também|czytaj\s+(?:też|także)|zobacz\s+(?:też|także)"
    r"|leggi\s+anche",
    re.IGNORECASE,
)
#: the heading of a note on the author ("About the author", "Meet Jessica Haggard")
_ABOUT_AUTHOR = re.compile(
    r"about\s+the\s+author|über\s+(?:den|die)\s+autor(?:in)?|à\s+propos\s+de\s+l['\u2019]auteur"
    r"|sobre\s+(?:el|la|o|a)\s+autora?|meet\s+(?-i:[A-Z][\w'\u2019.-]+)(?:\s+(?-i:[A-Z][\w'\u2019.-]+)){0,2}",
    re.IGNORECASE,
)
_MORE_STORIES_WORDS = 6
_COMMENTS_OPEN_WORDS = 40
#: how far into the text (share of its words) a sign-off may stand at the earliest
_SIGNED_AFTER = 0.6
#: how far into the text a line that opens the comments may stand: the comments after a
#: short story may be longer than the story
_COMMENTS_AFTER = 0.3


def story_end(texts: Sequence[str], looked_at: Sequence[bool]) -> int:
    """Where the story ends, late in the text (past :data:`_SIGNED_AFTER` of its words): at a
    paragraph that signs it off (:data:`_SIGNED`), opens the reader comments
    (:data:`_COMMENTS_OPEN`; past :data:`_COMMENTS_AFTER` already, as comments may be
    longer than the story), heads a box of other stories or of further reading
    (:data:`_MORE_STORIES`: "MORE TENNIS HEADLINES"; :data:`_READ_ALSO`: "Auch
    interessant:") or a note on the author (:data:`_ABOUT_AUTHOR`: "Meet Jessica
    Haggard"). What follows is the page's, not the story's (the sources,
    how to cite the page, its ratings, reader comments, more stories), after Medical
    News Today's "Written by ..." or the Hindustan Times' "Note: By posting your
    comments here you agree to ...". ``texts``: the text's blocks, ``looked_at``: which
    of them are paragraphs or headings (the others are not looked at, their words
    counted). ``len(texts)`` when none ends it."""
    counts = [len(text.split()) for text in texts]
    total = sum(counts)
    seen = 0
    for at, text in enumerate(texts):
        if looked_at[at] and seen >= _COMMENTS_AFTER * total:
            line = text.strip()
            if counts[at] <= _COMMENTS_OPEN_WORDS and _COMMENTS_OPEN.match(line) is not None:
                return at
            if seen >= _SIGNED_AFTER * total and _ends_story(line, counts[at]):
                return at
        seen += counts[at]
    return len(texts)


def _ends_story(text: str, words: int) -> bool:
    """A sign-off, or the heading of other stories, further reading or a note on the
    author (the comments' opening is tested on its own, from earlier in the text)."""
    if _SIGNED.fullmatch(text) is not None:
        return True
    if words > _MORE_STORIES_WORDS:
        return False
    heading = text.strip(" :")
    return bool(
        _MORE_STORIES.fullmatch(heading)
        or _READ_ALSO.fullmatch(heading)
        or _ABOUT_AUTHOR.fullmatch(heading)
    )
