# ruff: noqa: RUF001  (real multilingual text on purpose)
"""Pages served in legacy encodings, declared in the header, in ``<meta>`` or not at all.

A crawler must decode each to the same Unicode text: ``CHARSET_PAGES`` maps a
path name to ``(encoding, where it is declared, title, paragraphs)``.
"""

from __future__ import annotations

from typing import Final

__all__ = ["CHARSET_PAGES", "charset_page"]

_CP1252: Final = (
    "The café’s “naïve” tasting menu costs 50 € and opens with a crème brûlée.",
    "Critics call the façade a small œuvre: “déjà vu”, they say — but the soufflé is superb.",
    "Reservations are taken from Monday to Saturday; the maître d’ speaks French and German.",
    "Our reviewer returned twice, and both times the piña colada sorbet was the highlight.",
)
_SHIFT_JIS: Final = (
    "東京の天気は今日とても良いです。私たちは公園で散歩をして、美味しいお弁当を食べました。",
    "桜の花がきれいに咲いていて、多くの人が写真を撮っていました。子供たちは芝生で遊んでいました。",
    "午後には博物館に行き、古い絵画と彫刻を見ました。説明はとても分かりやすかったです。",
    "夕方、駅の近くの小さな店でラーメンを食べてから、電車で家に帰りました。",
)
_GB2312: Final = (
    "今天北京的天气很好。我们在公园里散步，吃了美味的午餐。",
    "很多人在湖边拍照，孩子们在草地上玩耍，老人们在树下下棋。",
    "下午我们参观了博物馆，看到了许多古代的书画和瓷器，讲解员的介绍非常清楚。",
    "晚上我们在车站附近的小饭馆吃了饺子，然后坐地铁回家。",
)
_KOI8_R: Final = (
    "Сегодня в Москве прекрасная погода. Мы гуляли в парке и ели вкусный обед на траве.",
    "Многие люди фотографировали реку, а дети играли на площадке рядом с фонтаном.",
    "После обеда мы пошли в музей и смотрели старые картины, иконы и скульптуры.",
    "Вечером мы ужинали в небольшом кафе у вокзала и вернулись домой на метро.",
    "Экскурсовод рассказывал о истории города очень интересно и подробно, отвечая на вопросы.",
)

#: name -> (encoding, declared in "header" | "meta" | "none", title, paragraphs)
CHARSET_PAGES: Final[dict[str, tuple[str, str, str, tuple[str, ...]]]] = {
    "windows-1252": ("windows-1252", "header", "Café “naïve” review", _CP1252),
    "shift-jis": ("shift_jis", "meta", "東京の一日", _SHIFT_JIS),
    "gb2312": ("gb2312", "meta", "北京的一天", _GB2312),
    "koi8-r": ("koi8-r", "none", "Один день в Москве", _KOI8_R),
}


def charset_page(name: str) -> tuple[bytes, str] | None:
    """``(body bytes, Content-Type header)`` of the page ``name``, or None."""
    if name not in CHARSET_PAGES:
        return None
    encoding, declared, title, paragraphs = CHARSET_PAGES[name]
    meta = f'<meta charset="{encoding}">' if declared == "meta" else ""
    body = "".join(f"<p>{p}</p>\n" for p in paragraphs * 2)
    html = (
        f"<!DOCTYPE html>\n<html><head>{meta}<title>{title}</title></head>\n"
        f'<body><nav><a href="/">Home</a></nav>\n'
        f"<main><article><h1>{title}</h1>\n{body}</article></main></body></html>\n"
    )
    content_type = "text/html" + (f"; charset={encoding}" if declared == "header" else "")
    return html.encode(encoding), content_type
