"""Page chrome inside the text that the extractor's pre-pass removes: menus set as bars of
links (knowledge_crawler.transform.menus), captions set as paragraphs, reader comments
named in other languages, cards shown over a name."""

from __future__ import annotations

from lxml import html

from knowledge_crawler.transform.extract import extract
from knowledge_crawler.transform.menus import link_bar, separated
from tests.unit.story import STORY, page_with, paragraphs, whole_story


def _texts(body: str) -> list[str]:
    tree = html.fromstring(f"<html><body><div>{body}</div></body></html>")
    blocks = {a.getparent(): None for a in tree.iter("a") if separated(a)}
    for block in [b for b in blocks if link_bar(b)]:
        block.drop_tree()
    return [" ".join(p.text_content().split()) for p in tree.iter("p", "nav")]


def test_a_bar_of_links_between_separators_goes() -> None:
    bar = '<p><a href="/">Home</a> | <a href="/v">Video</a> | <a href="/w">World</a></p>'
    assert _texts(bar + "<p>Text.</p>") == ["Text."]


def test_a_bar_with_middle_dots_and_a_comment_between_links_goes() -> None:
    bar = (
        '<nav><a href="/t">Tools</a> · <a href="/r">RSS</a> <!-- | <a href="/x">x</a> -->'
        ' · <a href="/p">Podcasts</a></nav>'
    )
    assert _texts(bar + "<p>Text.</p>") == ["Text."]


def test_a_breadcrumb_with_arrows_and_the_current_page_in_a_span_goes() -> None:
    crumb = (
        "<p class='breadcrump'><a href='/'>Kinder</a>&nbsp;&rsaquo;&nbsp;<a href='/t/'>Thema"
        "</a>&nbsp;&rsaquo;&nbsp;<a href='/t/u/'>Umwelt</a>&nbsp;&rsaquo;&nbsp;<span "
        "class='last'><a href='/t/u/luft/'>Woher kommt die dicke Luft?</a></span></p>"
    )
    prose = "<p><a href='/a'>Ann</a> &raquo; <a href='/b'>Bo</a>, then <span>Cy</span>.</p>"
    assert _texts(crumb + prose + "<p>Text.</p>") == ["Ann \u00bb Bo, then Cy.", "Text."]


def test_prose_naming_three_links_stays() -> None:
    prose = '<p><a href="/a">Ann</a>, <a href="/b">Bo</a> and <a href="/c">Cy</a> won.</p>'
    assert _texts(prose) == ["Ann, Bo and Cy won."]


def test_two_links_or_links_without_separators_stay() -> None:
    two = '<p><a href="/a">Previous</a> | <a href="/b">Next</a></p>'
    spaced = '<p><a href="/a">one</a> <a href="/b">two</a> <a href="/c">three</a></p>'
    assert _texts(two + spaced) == ["Previous | Next", "one two three"]


def test_a_bar_with_a_label_or_a_word_between_links_stays() -> None:
    labelled = (
        '<p>Languages: <a href="/de">de</a> | <a href="/en">en</a> | <a href="/fr">fr</a></p>'
    )
    worded = '<p><a href="/a">A</a> | <a href="/b">B</a> or <a href="/c">C</a></p>'
    assert _texts(labelled + worded) == ["Languages: de | en | fr", "A | B or C"]


def test_a_footer_menu_in_the_story_container_takes_nothing_of_the_story() -> None:
    """A guard on what the rule removes: the bar, not the block that holds it (on a
    page this simple trafilatura drops the bar as link-dense anyway; the tests above
    show the rule finds it)."""
    menu = (
        '<div><a href="/">Home</a> | <a href="/v">Video</a> | <a href="/u">U.S.</a> | '
        '<a href="/w">World</a></div>'
    )
    text = extract(page_with(menu, at=6, container="div")).text
    assert "Home" not in text and "World" not in text
    assert whole_story(text)


def test_an_italic_paragraph_after_an_image_paragraph_is_a_caption() -> None:
    figure = (
        '<p style="text-align: center"><img src="/statue.jpg" alt=""></p>'
        "<p><em>The statue on the square, 20 August. Photo: Agency</em></p>"
    )
    end = "<p><em>An italic paragraph that is the story's end.</em></p>"
    text = extract(page_with(figure).replace("</article>", f"{end}</article>")).text
    assert "The statue on the square" not in text
    assert "An italic paragraph that is the story's end." in text
    assert whole_story(text)


def test_an_italic_paragraph_after_an_image_with_text_stays() -> None:
    figure = (
        '<p><img src="/chart.png" alt=""> The chart shows the tonnage by month and berth.</p>'
        "<p><em>Emphasis: the harbour master said so twice, and meant it.</em></p>"
    )
    text = extract(page_with(figure)).text
    assert "Emphasis: the harbour master said so twice" in text


def test_reader_comments_named_in_spanish_or_polish_go() -> None:
    comments = (
        "<p>Pepe 28.oct.2012 | 11:26 #11 Su cara lo dice todo, y la cara es el espejo del "
        "alma; espero que la justicia actúe pronto y sin excepciones.</p>"
    ) * 4
    page = (
        f"<html><body><div id='tamano'>{paragraphs()}</div>"
        f"<div id='comentarios'><ol><li>{comments}</li></ol></div>"
        f"<section class='komentarze lista'>{comments.replace('Pepe', 'Jan')}</section>"
        "</body></html>"
    )
    text = extract(page).text
    assert "Pepe" not in text and "Jan 28" not in text
    assert whole_story(text)


def test_a_card_inside_a_paragraph_goes_and_the_name_stays() -> None:
    card = (
        '<span class="rollover"><a href="/people/omar">Ilhan Omar</a><span class="block">'
        '<span><img src="/omar.jpg" alt=""><a href="/people/omar">Ilhan Omar</a>'
        '<a href="/s/1">Progressives oppose funding bill</a> <a href="/s/2">Omar asks court'
        "</a></span></span></span>"
    )
    opening = f"<p>A man pleaded guilty to threatening Rep. {card} in a call to her office.</p>"
    text = extract(page_with(opening, at=0)).text
    assert "A man pleaded guilty to threatening Rep. Ilhan Omar in a call to her office." in text
    assert "Progressives oppose" not in text and "Omar asks court" not in text


def test_an_image_with_links_in_a_paragraph_but_no_card_stays() -> None:
    opening = (
        "<p>The map <img src='/map.png' alt=''> shows <a href='/a'>the north berth</a> and "
        "<a href='/b'>the south berth</a> of the port.</p>"
    )
    text = extract(page_with(opening, at=0)).text
    assert "shows the north berth and the south berth of the port." in text


def test_a_caption_that_repeats_the_alt_text_after_the_image_box_goes() -> None:
    figure = (
        '<div align="center"><div class="article-img"><img src="/b.jpg" alt="The slimmer '
        'bezels of the new laptop"></div><br><span class="small">The slimmer bezels of the '
        "new laptop</span></div>"
    )
    text = extract(page_with(figure)).text
    assert "slimmer bezels" not in text
    assert whole_story(text)


def test_text_after_an_image_that_is_not_its_alt_text_stays() -> None:
    figure = (
        '<div><img src="/b.jpg" alt="The harbour"></div>'
        "<p>The harbour master said the port would reopen on Friday, after the storm.</p>"
    )
    assert "The harbour master said the port would reopen" in extract(page_with(figure)).text


def test_reader_comments_under_an_id_with_a_prefix_go() -> None:
    comment = (
        "<div class='sf_comment'><p>Hace 28 minutos</p><p>Vaya comportamiento tan poco "
        "ejemplar del fiscal, que defiende lo indefendible ante los ciudadanos.</p></div>"
    )
    page = (
        f"<html><body><article><div class='cuerpo'>{paragraphs()}</div>"
        "<div id='sf_comment_form_container_624c'><h2>Comentar</h2><ul><li>El contenido "
        "de los comentarios es la opinión de los usuarios.</li></ul></div>"
        f"<div id='sf_comment_list'>{comment * 3}</div>"
        f"<div id='articleComments'>{comment.replace('Vaya', 'Otro')}</div>"
        "</article></body></html>"
    )
    text = extract(page).text
    assert "Vaya" not in text and "Otro" not in text and "El contenido" not in text
    assert whole_story(text)


def test_an_id_naming_comments_that_holds_the_headline_stays() -> None:
    page = (
        "<html><body><div id='page_with_comments'><h1>Harbour news</h1>"
        f"{paragraphs()}</div></body></html>"
    )
    assert whole_story(extract(page).text)


def test_a_recirculation_box_inside_the_story_goes() -> None:
    box = (
        "<div class='inline-article-recirc'><h2>More Must-Reads From TIME</h2><ul>"
        "<li><span>The Struggle to Save Lives </span><a href='/1'>Inside the Hospitals</a></li>"
        "<li><span>Want Weekly Recs? Sign Up for </span><a href='/2'>Worth Your Time</a></li>"
        "</ul></div>"
    )
    text = extract(page_with(box, at=6)).text
    assert "Must-Reads" not in text and "Struggle" not in text and "Weekly" not in text
    assert whole_story(text)


def test_an_aside_that_holds_the_headline_is_the_story() -> None:
    page = (
        "<html><body><nav><a href='/'>Startseite</a> <a href='/r'>Region</a></nav><main>"
        "<aside class='direct-content'><section><h1>Witzel erhält den Buchpreis</h1>"
        f"{paragraphs()}</section></aside><aside><p>Anzeige: Abo für 9,90 Euro im Monat, "
        "jederzeit kündbar, mit allen Artikeln.</p></aside></main></body></html>"
    )
    text = extract(page).text
    assert whole_story(text)
    assert "Anzeige" not in text


def test_a_picture_box_with_its_caption_goes() -> None:
    box = (
        "<div class='picBox medium'><a class='overlayLink' href='#'><img src='/i/1.jpg' "
        "alt='Tahir Della (picture-alliance/dpa)'></a><p>Tahir Della helped organize "
        "Berlin's new initiative</p></div>"
    )
    text = extract(page_with(box)).text
    assert "Tahir Della" not in text
    assert whole_story(text)


def test_text_beside_an_image_in_a_box_of_more_than_a_caption_stays() -> None:
    long = (
        "<div class='csc-textpic'><img src='/i/2.jpg' alt=''><p>The harbour master "
        "explained at length why the pier had to close, how long the repairs would take, "
        "which boats would have to moor elsewhere, and what the port authority would pay "
        "the fishermen who lose a season.</p></div>"
    )
    headed = (
        "<div class='image-text'><img src='/i/3.jpg' alt=''><h3>Repairs</h3>"
        "<p>They start in May.</p></div>"
    )
    text = extract(page_with(long + headed)).text
    assert "The harbour master explained" in text and "They start in May." in text


def test_a_story_written_in_divs_beside_a_box_of_paragraphs_is_kept() -> None:
    """Der Spiegel writes each paragraph as <div class="dig-absatz">; beside it, a box of
    <p> lines (an edition's imprint) made trafilatura read only <p> elements."""
    story = "".join(
        f"<div class='dig-absatz'>\n  {text} The mayor, the harbour master and two fishermen "
        "spoke to the paper about it on Tuesday.\n</div>"
        for text in STORY
    )
    short = "<div class='dig-absatz'><a href='/x'>A linked start</a> and then the rest.</div>"
    imprint = "".join(
        f"<p>Line {i} of the edition box: read the new issue before it is printed, on any "
        "device, offline too, with the whole archive since 1947.</p>"
        for i in range(6)
    )
    page = (
        "<html><body><div id='content-main' class='grid-article'><div class='column-wide'>"
        f"<div class='dig-text'>{story}{short}</div></div>"
        f"<div class='column-small asset-box'>{imprint}</div></div></body></html>"
    )
    text = extract(page).text
    assert whole_story(text)
    assert "A linked start and then the rest." in text


def test_short_divs_beside_a_story_in_paragraphs_stay_divs() -> None:
    # as trafilatura reads them in a frame of paragraphs: not at all
    note = (
        "<div class='note'>Share this story with your friends and family by email, or on "
        "any of the social networks you use every day</div>"
    )
    text = extract(page_with(note, at=6)).text
    assert whole_story(text)
    assert "Share this story" not in text


def test_a_wiki_formula_keeps_its_tex_and_the_edit_link_goes() -> None:
    formula = (
        '<span class="mwe-math-element"><span class="mwe-math-mathml-inline" '
        'style="display: none;"><math alttext="{\\displaystyle N}"><semantics><mi>N</mi>'
        '<annotation encoding="application/x-tex">{\\displaystyle p_{j\\mid i}}</annotation>'
        '</semantics></math></span><img src="/m.svg" alt="{\\displaystyle p_{j\\mid i}}">'
        "</span>"
    )
    page = (
        "<html><body><div id='mw-content-text'><h2><span class='mw-headline'>Details</span>"
        "<span class='mw-editsection'><span>[</span><a href='/w/index.php?title=T&amp;"
        "action=edit&amp;section=1'>edit</a><span>]</span></span></h2>"
        f"<p>The conditional probability {formula} that the point picks its neighbour is "
        "computed for every pair of points in the high-dimensional space.</p>"
        f"{paragraphs()}</div></body></html>"
    )
    markdown = extract(page).markdown
    assert "probability p_{j\\mid i} that the point" in markdown
    assert "## Details\n" in markdown and "edit" not in markdown


def test_a_line_break_that_ends_a_bold_run_still_breaks_the_line() -> None:
    block = (
        "<p><em><strong>Stream und Anmeldung<br>\n</strong>Die Tagung wird gestreamt, und "
        "um Anmeldung wird gebeten, sagte der Sprecher am Montag.</em></p>"
    )
    markdown = extract(page_with(block)).markdown
    assert "Stream und Anmeldung\nDie Tagung wird gestreamt" in markdown


def test_a_box_whose_class_only_holds_a_picture_name_stays() -> None:
    """``topic`` holds ``pic`` and ``politische-bildung`` holds ``bild``: neither is a
    picture's box, and a short text beside an icon in one is text."""
    topic = (
        "<div class='topic'><img src='/i/icon.png' alt=''><p>The ferry runs every hour "
        "from the north berth.</p></div>"
    )
    bildung = (
        "<div class='politische-bildung'><img src='/i/logo.png' alt=''><p>Tickets cost "
        "two euros at the harbour office.</p></div>"
    )
    text = extract(page_with(topic + bildung)).text
    assert "The ferry runs every hour" in text
    assert "Tickets cost two euros" in text


def _sections(ident: str, heading: str, tag: str = "section") -> str:
    """A documentation page of three sections, the second under ``ident`` and
    ``heading``, as Sphinx writes them (the id is the heading's slug)."""

    def paras(section: str) -> str:
        return "".join(
            f"<p>Section {section} explains, in its part {i}, how a package is built, tested "
            "and uploaded.</p>"
            for i in range(3)
        )

    return (
        "<html><body><div class='body' role='main'><h1>Best packaging practices</h1>"
        f"<section id='first-steps'><h2>First steps</h2>{paras('one')}</section>"
        f"<{tag} id='{ident}'><h2>{heading}</h2>{paras('two')}</{tag}>"
        f"<section id='last-steps'><h2>Last steps</h2>{paras('three')}</section>"
        "</div></body></html>"
    )


def test_a_section_whose_heading_names_authors_or_comments_is_kept() -> None:
    for ident, heading, tag in (
        (
            "general-recommendations-for-authors-and-translators",
            "General recommendations for authors and translators",
            "section",
        ),
        ("s-for-application-authors", "For application authors", "div"),
        (
            "sharing-comments-with-the-related-teams",
            "Sharing comments with the related teams",
            "section",
        ),
        ("related-work", "Related work", "section"),
        ("social-impact", "Social impact", "section"),
        ("footer-design", "Footer design", "section"),
    ):
        text = extract(_sections(ident, heading, tag)).text
        assert heading in text, ident
        assert text.count("Section two explains") == 3, ident
        assert text.count("Section three explains") == 3, ident


def test_a_box_named_after_its_heading_in_chrome_words_still_goes() -> None:
    for ident, heading in (
        ("author-box", "About the author of this page"),  # not its heading's slug
        ("related-posts", "Related posts"),
        ("reader-comments", "Reader comments"),
        ("more-from-this-author", "More from this author"),
    ):
        page = _sections(ident, heading)
        assert "Section two explains" not in extract(page).text, ident
        assert "Section three explains" in extract(page).text, ident


def test_a_documents_footnotes_set_as_asides_are_kept() -> None:
    sphinx = (
        "<p class='rubric'>Footnotes</p><aside class='footnote-list brackets'>"
        "<aside class='footnote brackets' id='id2' role='note'><span class='label'>"
        "<span class='fn-bracket'>[</span><a role='doc-backlink' href='#id1'>1</a>"
        "<span class='fn-bracket'>]</span></span><p>On Unix, the interpreter is by default "
        "not installed with the executable named python, so that it does not conflict "
        "with another one.</p></aside></aside>"
    )
    pandoc = (
        "<aside id='footnotes' class='footnotes footnotes-end-of-document' "
        "role='doc-endnotes'><hr /><ol><li id='fn1'><p>The port authority's report of "
        "2019 gives the same figure for the winter storms.<a href='#fnref1' "
        "role='doc-backlink'>↩︎</a></p></li></ol></aside>"
    )
    ad = "<aside class='promo'><p>Subscribe to the harbour newsletter, weekly.</p></aside>"
    for notes, words in ((sphinx, "not installed with the executable"), (pandoc, "same figure")):
        text = extract(
            f"<html><body><article>{paragraphs()}{notes}{ad}</article></body></html>"
        ).text
        assert words in text
        assert whole_story(text) and "Subscribe" not in text


def test_a_title_box_found_first_gives_way_to_the_story_box_of_the_same_kind() -> None:
    # an ASP.NET news page: the first element classed "...article-content" is the title
    # block; with only its words trafilatura went on down to the "main-nav" menu
    shows = "".join(
        f"<li><a href='/shows/{i}'>Morning show {i}</a><div><span class='show-times'>"
        f"Weekdays {i}am - {i + 1}am</span></div></li>"
        for i in range(1, 12)
    )
    page = (
        "<html><body><form id='aspnetForm'><div class='master'><div class='header-content'>"
        "<div class='nav-wrapper'><div class='wrap'><div id='main-nav' class='navigation'>"
        "<ul><li><a href='/' class='nav-menu'>Home</a></li><li><a href='/shows/' "
        f"class='nav-menu'>Shows</a><div class='drop extra'><ul>{shows}</ul></div></li></ul>"
        "</div></div></div></div>"
        "<div class='title-article-content'><div class='access'><h1>Ravens at the White "
        "House</h1></div><div class='section-header'><div class='article-headline'><h2>"
        "<span>Ravens at the White House</span></h2></div></div></div>"
        f"<div class='primary-article-content'>{paragraphs()}</div>"
        "</div></form></body></html>"
    )
    text = extract(page).text
    assert whole_story(text)
    assert "Morning show" not in text


def test_a_story_split_around_a_side_rail_is_read_whole() -> None:
    rail = (
        "<div class='module article-side-rail'><h3>More health and science news</h3><ul>"
        "<li><a href='/a'>Another story about a hospital</a></li>"
        "<li><a href='/b'>A third story about a vaccine</a></li></ul></div>"
    )
    page = (
        "<html><body><div id='article_body'>"
        f"<div class='article_body entry-content'><article>{paragraphs(0, 2)}</article></div>"
        f"{rail}"
        f"<div class='article_body entry-content'><article>{paragraphs(2)}</article></div>"
        "</div></body></html>"
    )
    text = extract(page).text
    assert whole_story(text)
    assert "More health" not in text and "third story" not in text


def test_the_next_stories_of_a_scrolling_page_are_not_joined_to_the_first() -> None:
    def story(title: str, word: str) -> str:
        return (
            f"<div class='article_body entry-content'><header><h1>{title}</h1></header>"
            + "".join(
                f"<p>{word} paragraph {i} tells what the council decided on Monday and "
                "what the mayor will do about it next week.</p>"
                for i in range(4)
            )
            + "</div>"
        )

    page = (
        "<html><body><main>"
        f"{story('Harbour reopens', 'First')}{story('Council votes', 'Second')}"
        "</main></body></html>"
    )
    text = extract(page).text
    assert "First paragraph 3" in text
    assert "Second paragraph" not in text


def test_a_line_drawn_as_a_paragraph_is_not_text() -> None:
    text = extract(page_with("<p>___</p><p>-----</p>", at=3)).text
    assert whole_story(text)
    assert "___" not in text and "---" not in text


def test_a_short_first_part_of_a_split_story_is_kept_with_the_rest() -> None:
    # the first part is under the 50 words of a title box: it is still the story's start
    lead = "<p>SECAUCUS, N.J. — Mark Appel was passed over a year ago.</p><p>Not this time.</p>"
    rail = "<div class='rail'><a href='/x'>Draft tracker</a> <a href='/y'>Mock drafts</a></div>"
    page = (
        "<html><body><div id='story'>"
        f"<div class='article-body entry-content'>{lead}</div>{rail}"
        f"<div class='article-body entry-content'>{paragraphs()}</div>"
        "</div></body></html>"
    )
    text = extract(page).text
    assert "Mark Appel was passed over" in text and "Not this time." in text
    assert whole_story(text)
    assert "Draft tracker" not in text


def test_a_story_set_in_a_layout_table_keeps_its_paragraphs() -> None:
    story = "<br /><br />".join(STORY)
    nav = "<a href='/'>Home</a><br /><a href='/news'>News</a>"
    page = (
        "<html><body><table width='100%'><tr><td class='nav'>"
        f"{nav}</td><td class='ArticleLeftColumn'><span id='lblBody'>{story}</span></td>"
        "</tr></table></body></html>"
    )
    md = extract(page).markdown
    assert "|" not in md  # not one cell of one row
    lines = md.split("\n")
    assert all(text in lines for text in STORY)  # each paragraph a line of its own


def test_a_table_of_long_answers_or_with_a_header_stays_a_table() -> None:
    answer = " ".join(["The harbour master said the port would reopen on Friday."] * 10)
    rows = "".join(f"<tr><td>{i}.</td><td>{answer}</td></tr>" for i in range(1, 5))
    qanda = f"<table>{rows}</table>"
    headed = (
        "<table><tr><th>Question</th><th>Answer</th></tr>"
        f"<tr><td>1</td><td>{answer}</td></tr></table>"
    )
    for table in (qanda, headed):
        md = extract(page_with(table, at=3)).markdown
        assert "| --- |" in md
        assert whole_story(md)


def test_the_inline_text_of_an_unwrapped_layout_cell_is_kept() -> None:
    page = (
        "<html><body><table><tr><td><b>How do you pronounce the harbour's name?</b></td></tr>"
        f"<tr><td>{paragraphs()}</td></tr></table></body></html>"
    )
    text = extract(page).text
    assert "How do you pronounce the harbour's name?" in text
    assert whole_story(text)


LEAD = (
    "Rescuers found a fifth victim four days after the landslide buried several houses"
    " in the village; five people, two of them children, are still missing."
)


def test_a_storys_lead_set_apart_as_a_div_opens_the_story() -> None:
    # as lsm.lv and wprost.pl set it: the lead beside the story's box, not inside it
    # (and gofeminin.de its "chapô" as a <p>)
    for tag, lead_class, body_class in (
        ("div", "article__lead", "article__body"),
        ("div", "art-lead", "art-content"),
        ("p", "af-chapo", "af-article-body"),
    ):
        page = (
            "<html><body><article><h1>Landslide</h1><div class='article__info'>Today</div>"
            f"<{tag} class='{lead_class}'> {LEAD} </{tag}><div class='banner advert'></div>"
            f"<div class='{body_class}'>{paragraphs()}</div></article></body></html>"
        )
        lines = extract(page).text.split("\n")
        assert lines[0] == LEAD, lead_class
        assert whole_story("\n".join(lines)) and lines.count(LEAD) == 1


def test_moving_a_lead_into_the_storys_box_keeps_the_text_around_it_in_place() -> None:
    from knowledge_crawler.transform.prepass import prune

    page = (
        "<html><body><article>Dateline text<div class='lead'>"
        f"{LEAD}</div>Loose words<div class='article-body'>Box words"
        f"{paragraphs()}</div></article></body></html>"
    )
    tree = html.fromstring(page)
    prune(tree)
    article, box = tree.find(".//article"), tree.find(".//div[@class='article-body']")
    assert article is not None and box is not None
    assert box[0].tag == "p" and box[0].text.strip() == LEAD  # the lead opens the box
    assert box[0].tail == "Box words"  # and the box's own words follow it
    # the words the lead stood between stay where they were, still apart
    assert article.text == "Dateline text Loose words"


def test_dropping_a_block_keeps_the_words_on_its_two_sides_apart() -> None:
    from knowledge_crawler.transform.prepass import drop_keeping_tail

    box = html.fromstring("<div>Before<div class='ad'>Ad</div>after <b>x</b>y<i>z</i>w</div>")
    drop_keeping_tail(box[0])  # a block: its two sides were apart
    assert box.text == "Before after "
    drop_keeping_tail(box[1])  # inline: "y" and "w" were one word around it
    assert box[0].tail == "yw"


def test_a_lead_box_that_opens_no_story_stays_out() -> None:
    offer = (
        "Sign up for our daily newsletter and get the latest news from the harbour delivered"
        " to your inbox every morning."
    )
    page = (
        f"<html><body><article>{paragraphs()}</article><div class='modal'>"
        f"<div class='article-lead-text'>{offer}</div><form><input name='e'></form></div>"
        "</body></html>"
    )
    text = extract(page).text
    assert "newsletter" not in text and whole_story(text)


def test_a_checklist_of_ingredients_in_a_fieldset_of_labels_is_kept() -> None:
    # a recipe's ingredients and steps set as a checklist: a fieldset outside any form,
    # each line a label after its check box (trafilatura deletes fieldset and label)
    checklist = (
        "<h2>Ingredients</h2><fieldset class='ingredients-section__fieldset'>"
        "<legend>Ingredients Checklist</legend><ul>"
        "<li><input type='checkbox'><label><span>1 pound lean ground beef</span></label></li>"
        "<li><input type='checkbox'><label><span>3 cups cauliflower florets</span></label></li>"
        "</ul></fieldset><h2>Directions</h2><fieldset><ul><li><p>Heat oil in a large skillet "
        "over medium heat, then add the onion and the bell pepper.</p></li></ul></fieldset>"
    )
    text = extract(page_with(checklist, at=6)).text
    assert "1 pound lean ground beef" in text and "3 cups cauliflower florets" in text
    assert "Heat oil in a large skillet" in text
    assert whole_story(text)


def test_a_form_keeps_its_fieldset_and_labels_out() -> None:
    from knowledge_crawler.transform.prepass import prune

    form = (
        "<form action='/subscribe'><fieldset><legend>Newsletter</legend><ul><li><label>"
        "Send me the weekly newsletter with the best recipes of the week</label>"
        "<input type='checkbox'></li></ul></fieldset></form>"
    )
    tree = html.fromstring(page_with(form, at=6))
    prune(tree)
    # a form's own fieldset and labels stay, for trafilatura to drop with the form
    assert tree.find(".//form/fieldset") is not None
    assert tree.find(".//form//li/label") is not None
    text = extract(page_with(form, at=6)).text
    assert "newsletter" not in text.lower()
    assert whole_story(text)


def test_a_blog_post_whose_class_says_share_is_still_the_post() -> None:
    # WordPress's post_class: a theme's "share-simple", a category or a tag named like
    # a box trafilatura deletes ("category-social") is no reason to drop the post
    for token in ("share-simple", "category-social", "tag-author-interviews"):
        page = (
            "<html><body><div id='Wrapper'><div id='Content'><div class='content_wrapper'>"
            f"<div class='sections_group'><div id='post-1374' class='{token} post-1374 post "
            "type-post status-publish hentry'><div class='post-wrapper-content'><div "
            "class='section the_content has_content'><div class='section_wrapper'><div "
            f"class='the_content_wrapper'>{paragraphs()}</div></div></div></div></div></div>"
            "<div class='about_box'><p>Jim is a home cook who writes about healthy comfort "
            "food, weeknight dinners, grilling and baking for the whole family.</p><p>He "
            "lives in Ohio with his wife, two children and a dog who loves every recipe."
            "</p></div></div></div></div>"
            "<p><span>Site is a blog of healthy comfort food recipes, family favourites "
            "and weeknight meals. All rights reserved, all information for entertainment "
            "purposes only.</span></p></body></html>"
        )
        text = extract(page).text
        assert whole_story(text), token


def test_a_related_card_set_as_the_first_article_is_not_the_frame() -> None:
    # a recipe page whose first <article> is a card of another recipe: trafilatura's
    # frame expression takes the first <article> of the page
    card = (
        "<article class='gz-card gz-card-horizontal gz-card-related'><h3>Bavarese al "
        "cioccolato bianco</h3><p>Il bavarese al cioccolato bianco e salsa alla menta è un "
        "dolce al cucchiaio molto fresco e delicato, dalle note esotiche.</p><p>Difficile, "
        "35 minuti, perfetto come fine pasto per una cena estiva tra amici.</p></article>"
    )
    page = (
        f"<html><body><main><div class='gz-related'>{card}</div><div class='gz-content-recipe'>"
        f"{paragraphs()}</div></main></body></html>"
    )
    text = extract(page).text
    assert whole_story(text)
    assert "cioccolato" not in text
