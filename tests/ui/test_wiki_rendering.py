"""What a wiki page and an answer show: the owner's own values exactly as stored (to them alone), code as written,
web links with their address; and the list of pages keeping the person's place while memory changes."""

from __future__ import annotations

import re

import pytest
from PySide6.QtCore import Qt, QUrl
from PySide6.QtWidgets import QApplication

from tests.helpers.fake_model import Text, ToolCalls
from tests.ui.test_wiki_view import CARD, remembered_card, seed, wiki_window
from wiki_engine import Page


def remembered_password(qloop, pod, script, password: str) -> str:
    """Me's wifi password, remembered by an agent with reversible redaction: memory keeps only its placeholder."""
    pod.edit_agent("helper", toolkits=["memory"], safety={"reversible": True})
    script([ToolCalls([("remember", {"fact": f"The cabin wifi password is {password}"})]), lambda req: Text("noted")])
    assert qloop.run(pod.chat("helper", "remember the cabin wifi")).ok
    stored = " ".join(f"{h.title} {h.snippet}" for h in qloop.run(pod.memory_search("cabin wifi password")))
    assert password not in stored
    return re.search(r"\[SECRET_\d+#[0-9a-f]{16}\]", stored).group(0)


def switch_to_bob(qloop, w, pod, fake_model):
    """Bob takes over the window, with a model of his own for Ask memory; returns his pod."""
    pod.add_person("Bob")
    w.refresh_people()
    assert w.switch_person("Bob")
    qloop.wait_until(lambda: not w.wiki._tasks, what="the wiki to load for Bob")
    bob = w.wiki.pod
    bob.add_provider("fake", kind="openai-compatible", base_url=fake_model.base_url, model="fake-1")
    bob.set_role_model("ask_memory", "fake/fake-1")
    return bob


def ask(qloop, w, question: str, shows: str) -> str:
    w.wiki.search.setText(question)
    w.wiki.ask.click()
    qloop.wait_until(lambda: shows in w.wiki.page.toPlainText(), what="the answer")
    return w.wiki.page.toPlainText()


def quoting(req):
    """A model that quotes the placeholder in the excerpt it was given, as a real one does, in code too."""
    m = re.search(r"\[SECRET_\d+#[0-9a-f]+\]", req.last_user)
    said = m.group(0) if m else "unknown"
    return Text(f"The cabin wifi password is {said} [1]. To type it: `{said}` [1]")


@pytest.mark.parametrize("password", ["Sun*shine*42x", "Kx9\\_fr33_q"])
def test_the_owners_password_shows_exactly_as_stored_on_a_page_and_in_an_answer_to_her_alone(
        qtbot, qloop, ui_pod, script, fake_model, password) -> None:
    """The page put Me's value back into the markdown before rendering it: "Sun*shine*42x" showed as "Sunshine42x"
    in italics and "Kx9\\_fr33_q" lost its backslash, in the page's text, its code and Ask memory's answer alike."""
    placeholder = remembered_password(qloop, ui_pod, script, password)
    sid = qloop.run(ui_pod.in_memory_thread(lambda: ui_pod.memory.add_source(
        f"The cabin router login is {placeholder}.", scope="public")))
    qloop.run(ui_pod.in_memory_thread(lambda: ui_pod.memory.write_page(
        Page(title="Cabin", scope="public", category="home", citations={1: sid},
             body=f"- The cabin wifi password is {placeholder} [1]\n- To join: `nmcli --ask {placeholder}` [1]\n\n"
                  f"```bash\nnmcli dev wifi connect cabin password '{placeholder}'\n```"),
        author="agent:wiki-writer")))
    w = wiki_window(qtbot, ui_pod)
    qloop.run(w.wiki.open_page("public", "Cabin"))
    text = w.wiki.page.toPlainText()
    assert f"password is {password} [1]" in text, text
    assert f"nmcli --ask {password} [1]" in text and f"password '{password}'" in text, text
    assert "SECRET_" not in text
    ui_pod.set_role_model("ask_memory", "fake/fake-1")
    script([quoting], repeat_last=True)
    answer = ask(qloop, w, "What is the cabin wifi password?", "password is")
    assert f"The cabin wifi password is {password} [1]" in answer and "SECRET_" not in answer, answer
    assert f"To type it: {password} [1]" in answer, answer  # in code, the escaped placeholder was shown

    switch_to_bob(qloop, w, ui_pod, fake_model)  # the public page and source hold Me's placeholder
    qloop.run(w.wiki.open_page("public", "Cabin"))
    bobs = w.wiki.page.toPlainText()
    assert f"password is {placeholder} [1]" in bobs and f"password '{placeholder}'" in bobs, bobs
    bobs_answer = ask(qloop, w, "What is the cabin router login?", "password is")
    assert f"password is {placeholder} [1]" in bobs_answer and f"type it: {placeholder} [1]" in bobs_answer, bobs_answer
    for seen in (bobs, bobs_answer):
        assert password not in seen and password.replace("*", "").replace("\\", "") not in seen


def test_titles_of_a_page_and_of_its_sources_show_the_owner_her_card_and_bob_only_the_placeholder(
        qtbot, qloop, ui_pod, script, fake_model) -> None:
    """The list of pages, a page's heading and the Sources under it showed Me the bare "[CARD_1#…]" where search and
    typeahead show her card."""
    placeholder = remembered_card(qloop, ui_pod, script)

    def write() -> None:
        sid = ui_pod.memory.add_source(f"Paid with {placeholder} at the orchid shop.", scope="public")
        assert placeholder in ui_pod.memory.get_source(sid).title
        ui_pod.memory.write_page(Page(title=f"Card {placeholder}", scope="public", category="payments",
                                      citations={1: sid}, body="- Used at the orchid shop [1]"),
                                 author="agent:wiki-writer")

    qloop.run(ui_pod.in_memory_thread(write))
    slug = ui_pod.memory.list_pages("public")[0][0].slug

    def shown(w) -> str:
        qloop.wait_until(lambda: w.wiki.tree.topLevelItemCount() == 1, what="the list of pages")
        qloop.run(w.wiki.open_page("public", slug))
        listed = w.wiki.tree.topLevelItem(0).child(0).child(0).text(0)
        return f"{listed}\n{w.wiki.page.toPlainText()}"

    w = wiki_window(qtbot, ui_pod)
    mine = shown(w)
    assert mine.startswith(f"Card {CARD}\nCard {CARD}\n"), mine  # the list, then the heading
    assert f"[1] Paid with {CARD} at the orchid shop" in mine and "CARD_" not in mine, mine
    switch_to_bob(qloop, w, ui_pod, fake_model)
    bobs = shown(w)
    assert bobs.startswith(f"Card {placeholder}\nCard {placeholder}\n"), bobs
    assert f"[1] Paid with {placeholder}" in bobs and "4111" not in bobs, bobs


def test_code_on_a_page_shows_as_written_and_only_its_text_links(qtbot, qloop, ui_pod) -> None:
    """[[…]] and [n] were made links over the raw markdown, code too: a shell test `[[ -f ~/x ]]` became a page link
    showing the person's id, and `Gifts[1]` a citation."""
    scope, sid = seed(qloop, ui_pod)
    code = "if [[ -f ~/orchids.txt ]]; then cat ~/orchids.txt; fi"
    qloop.run(ui_pod.in_memory_thread(lambda: ui_pod.memory.write_page(
        Page(title="Family", scope=scope, category="family", citations={1: sid},
             body=f"- Her list is the cell `Gifts[1]` [1]; see [[Gifts]]\n\nTo read it [1]:\n\n```bash\n{code}\n```"),
        author="person:me")))
    w = wiki_window(qtbot, ui_pod)
    qloop.run(w.wiki.open_page(scope, "Family"))
    text, page = w.wiki.page.toPlainText(), w.wiki.page.toHtml()
    assert code in text and "cell Gifts[1] [1]; see Gifts" in text, text
    assert ui_pod.person.id not in text and "hearth-" not in text
    hrefs = re.findall(r'href="([^"]+)"', page)
    # [1] twice, the Gifts link and the Sources list, nothing in the code
    assert sorted(hrefs) == sorted([f"hearth-source:{sid}"] * 3 + [f"hearth-page:{scope}%7CGifts"]), hrefs


def test_the_window_links_what_memory_reads_as_links_and_no_code() -> None:
    """Memory (its link graph, unlinking a deleted page, relinking a merged one) and the window read code alike: the
    page links the window makes are the links memory counts, none of them in code."""
    from urllib.parse import unquote

    from app.wiki_view import page_html
    from tests.wiki.test_pages import CODE_PAGE
    from wiki_engine.pages import links_in

    html = page_html(CODE_PAGE, {1: "s1"}, "public")
    linked = [unquote(h).removeprefix("hearth-page:public|") for h in re.findall(r'href="(hearth-page:[^"]+)"', html)]
    assert linked == links_in(CODE_PAGE) == ["Dentists", "Garden", "Shed"], linked


@pytest.mark.parametrize("body", [
    "| Who | Birthday |\n|---|---|\n| [[Clara Holm|Clara]] | 3 June [1] |",  # as a writer writes it
    "| Who | Birthday |\n|---|---|\n| [[Clara Holm\\|Clara]] | 3 June [1] |",  # as Markdown tables need it
    "| [[Clara Holm|Clara]] | Birthday |\n|---|---|\n| Clara | 3 June [1] |",  # in the header row
    "Her sister [[Clara Holm\\|Clara]] was born on 3 June [1].",  # escaped outside a table
])
def test_an_aliased_link_in_a_table_row_is_a_link_and_the_row_stays_whole(body) -> None:
    """A writer's "[[Clara Holm|Clara]]" in a table row: its "|" split the cell, the window showed "[[Clara Holm"
    and "Clara]]" as text and the "3 June [1]" cell, with its citation, was gone (the header row's alias made it no
    table at all), while memory counted a link to Clara Holm. Now the row shows whole with its link, as memory reads
    it, written either way; and "[[Clara Holm\\|Clara]]" is the same link outside a table."""
    from urllib.parse import unquote

    from app.wiki_view import page_html
    from wiki_engine.pages import links_in

    html = page_html(body, {1: "a" * 64}, "private/x")
    linked = [unquote(h).removeprefix("hearth-page:private/x|") for h in re.findall(r'href="(hearth-page:[^"]+)"', html)]
    assert linked == links_in(body) == ["Clara Holm"], (linked, html)
    assert ">Clara</a>" in html and "3 June" in html and "hearth-source:" in html, html
    assert "[[" not in html and "]]" not in html and "\\" not in html, html
    if "|---|" in body:
        assert html.count("<td>") + html.count("<th>") == 4, html  # two columns, two rows: no cell lost


def test_a_link_with_bold_inside_is_a_link_in_the_window_as_in_memory() -> None:
    """A writer's "[[**Clara**]]" (models bold names): memory read a link to Clara (counted, relinked, unlinked with
    her page), the window showed "[[Clara]]" in bold, brackets and all, and no link. Now it is a link there too."""
    from urllib.parse import unquote

    from app.wiki_view import page_html
    from wiki_engine.pages import links_in, slugify

    body = "Her sister is [[**Clara**]] [1]."
    html = page_html(body, {1: "a" * 64}, "private/x")
    linked = [unquote(h).removeprefix("hearth-page:private/x|") for h in re.findall(r'href="(hearth-page:[^"]+)"', html)]
    assert [slugify(t) for t in linked] == [slugify(t) for t in links_in(body)] == ["clara"], (linked, html)
    assert "[[" not in html and "**" not in html and ">Clara</a>" in html, html


def test_a_web_link_shows_its_address_and_a_click_says_hearth_does_not_open_it(qtbot, qloop, ui_pod) -> None:
    """A page's web link was silently ignored when clicked, its address shown nowhere."""
    scope = f"private/{ui_pod.person.id}"

    def work() -> None:
        sid = ui_pod.memory.add_source("Bin days: see the council website.", scope=scope)
        ui_pod.memory.write_page(Page(
            title="Bins", scope=scope, category="home", citations={1: sid},
            body="- Bin days are on [the council's calendar](https://example.org/bins) [1]\n"
                 "- Not [a script](javascript:alert(1)) nor [a file](file:///etc/passwd) nor <file:///etc/hosts> [1]"),
            author="agent:wiki-writer")

    qloop.run(ui_pod.in_memory_thread(work))
    w = wiki_window(qtbot, ui_pod)
    qloop.run(w.wiki.open_page(scope, "Bins"))
    assert "the council's calendar (https://example.org/bins) [1]" in w.wiki.page.toPlainText()
    hrefs = re.findall(r'href="([^"]+)"', w.wiki.page.toHtml())
    assert "https://example.org/bins" in hrefs
    assert not any(h.startswith(("javascript:", "file:")) for h in hrefs), hrefs
    cursor = w.wiki.page.document().find("the council's calendar")
    assert cursor.charFormat().toolTip() == "https://example.org/bins"
    w.wiki.page.anchorClicked.emit(QUrl("https://example.org/bins"))
    said = w.statusBar().currentMessage()
    assert "does not open web links" in said and "https://example.org/bins" in said, said
    assert w.wiki.current == (scope, "bins") and "Bin days" in w.wiki.page.toPlainText()  # the page stays


def many_pages(qloop, pod, n: int = 120) -> str:
    scope = f"private/{pod.person.id}"

    def work() -> None:
        sid = pod.memory.add_source("Clara loves orchids.", scope=scope)
        pod.memory.write_pages([Page(title=f"Orchid {i:03d}", scope=scope, category=f"cat{i % 3}",
                                     body=f"- Orchid number {i} [1]", citations={1: sid}) for i in range(n)],
                               author="agent:wiki-writer")

    qloop.run(pod.in_memory_thread(work), timeout=120)
    return scope


def test_the_list_of_pages_keeps_the_persons_place_when_memory_runs_or_a_page_is_verified(
        qtbot, qloop, ui_pod) -> None:
    """Each memory run (every 5 minutes, even with nothing new) and each Verified click rebuilt the list: the page
    selected was no longer selected, the categories folded away opened again, the list jumped to its top."""
    scope = many_pages(qloop, ui_pod)
    w = wiki_window(qtbot, ui_pod, shown=True)
    w.resize(1000, 600)
    qloop.wait_until(lambda: w.wiki.tree.topLevelItemCount() == 1 and not w.wiki._tasks, what="the list")
    item = w.wiki.tree.findItems("Orchid 119", Qt.MatchFlag.MatchExactly | Qt.MatchFlag.MatchRecursive)[0]
    w.wiki.tree.setCurrentItem(item)
    w.wiki.tree.scrollToItem(item)
    w.wiki._on_tree_item(item)
    qloop.wait_until(lambda: w.wiki.current is not None and not w.wiki._tasks, what="the page")
    w.wiki.tree.topLevelItem(0).child(0).setExpanded(False)  # the person folds cat0 away
    QApplication.processEvents()
    bar = w.wiki.tree.verticalScrollBar()
    bar.setValue(bar.maximum() // 2)  # and reads on further up, the page they opened out of sight

    def place() -> tuple[str | None, int, bool]:
        QApplication.processEvents()
        cur = w.wiki.tree.currentItem()
        return (cur.text(0) if cur else None, w.wiki.tree.verticalScrollBar().value(),
                w.wiki.tree.topLevelItem(0).child(0).isExpanded())

    before = place()
    assert before[1] > 0 and not before[2]
    qloop.run(ui_pod.memory_produce(), timeout=120)  # memory's 5-minute run, nothing new
    qloop.wait_until(lambda: not w.wiki._memory_soon.isActive() and not w.wiki._tasks, what="the reload")
    assert place() == before
    w.wiki.verified.click()
    qloop.wait_until(lambda: not w.wiki._tasks, what="the verification")
    assert place() == ("✔ Orchid 119", before[1], False)
    qloop.run(ui_pod.in_memory_thread(lambda: ui_pod.memory.write_page(Page(  # memory gains a page meanwhile
        title="Orchid 500", scope=scope, category="cat2", body="- One more [1]",
        citations=ui_pod.memory.read_page(scope, "orchid-000").citations), author="agent:wiki-writer")))
    qloop.run(w.wiki.refresh())
    assert w.wiki.tree.findItems("Orchid 500", Qt.MatchFlag.MatchExactly | Qt.MatchFlag.MatchRecursive)
    assert place() == ("✔ Orchid 119", before[1], False)


def test_a_household_page_verified_by_one_person_is_not_shown_to_another_as_verified_by_them(
        qtbot, qloop, ui_pod, fake_model) -> None:
    """Me verified the household's page; Bob, who verified nothing, was shown it ticked "Verified by me". It is the
    household's verification: the box says verified, and says who may change it; her own page says it is hers."""
    scope, sid = seed(qloop, ui_pod)

    def write() -> None:
        shared = ui_pod.memory.add_source("The bins go out on Tuesday evening.", scope="public")
        for sc, cited in (("public", shared), (scope, sid)):
            ui_pod.memory.write_page(Page(title="Bins", scope=sc, category="home", citations={1: cited},
                                          body="- The bins go out on Tuesday [1]"), author="person:me")
            ui_pod.memory.set_verified(sc, "bins", True)

    qloop.run(ui_pod.in_memory_thread(write))
    w = wiki_window(qtbot, ui_pod)
    qloop.run(w.wiki.open_page(scope, "bins"))
    assert w.wiki.verified.isChecked() and w.wiki.verified.toolTip().startswith("Your page: only you")
    switch_to_bob(qloop, w, ui_pod, fake_model)
    qloop.run(w.wiki.open_page("public", "bins"))
    box = w.wiki.verified
    assert box.isChecked() and "by me" not in box.text() and box.text().startswith("Verified"), box.text()
    assert box.toolTip().startswith("A household page, shared by everyone on this Hearth"), box.toolTip()


def test_an_answer_of_backticks_and_letters_shows_at_once_and_its_code_as_written(qtbot, qloop, ui_pod, script) -> None:
    """A model's answer of runs of backticks then letters (1,600 characters) stopped the whole window for 20 s, over
    3 minutes at 3,200: the code spans in it were found by a regex that backtracked cubically on the window's thread.
    They are found in one walk now, as CommonMark finds them (a run of backticks ends at the next run as long)."""
    import time

    from PySide6.QtCore import QTimer

    from app.wiki_view import _as_words

    hostile = "`" * 10_000 + "a" * 10_000  # as long as an answer may be (ANSWER_CHARS); no run closes the first
    t0 = time.monotonic()
    _as_words(hostile, [1])
    _as_words("".join("`" * k + "b" for k in range(198, 0, -1)), [1])  # every run a length of its own: none closes
    alone = time.monotonic() - t0
    assert alone < 5, f"reading an answer's code took {alone:.1f} s on the window's thread"  # was minutes, hours
    # code as written, and nothing else of the answer as markdown, as before
    assert _as_words("Use `a[0]` or ``b`c`` [1], then <x> [2]", [1]) == "Use `a[0]` or ``b`c`` [1], then \\<x> \\[2\\]"
    assert _as_words("```py\nx = [1]\n```\n[1] and [3]", [1]) == "```py\nx = [1]\n```\n[1] and \\[3\\]"

    seed(qloop, ui_pod)
    ui_pod.set_role_model("ask_memory", "fake/fake-1")
    script([Text("Clara's birthday is on 3 June [1]. " + hostile[:19_000], chunk_chars=4000)])
    w = wiki_window(qtbot, ui_pod, shown=True)
    beats: list[float] = []
    beat = QTimer()
    beat.setInterval(50)
    beat.timeout.connect(lambda: beats.append(time.monotonic()))
    beat.start()
    ask(qloop, w, "When is Clara's birthday?", "3 June")
    beat.stop()
    worst = max((b - a for a, b in zip(beats, beats[1:], strict=False)), default=0.0)
    assert worst < 5, f"the window did not answer for {worst:.1f} s while it showed one answer"
    assert "`" * 5000 + "a" * 5000 in w.wiki.page.toPlainText()


@pytest.mark.parametrize("said", [
    "``[x](http://evil.example/a)`",  # a run of two backticks is closed by none of one
    "\\`[x](http://evil.example/b)`",  # an escaped backtick opens no code
    "```x```\n[x](http://evil.example/c)",  # code on one line, not a fence: the next line is text
    "`a\n\n[x](http://evil.example/d) `",  # code does not go on past its paragraph
    "`a\n- [x](http://evil.example/e) `",  # nor into a list
    "\\[x\\](http://evil.example/f)",  # an escaped bracket, not escaped again (that escaped the backslash)
    "\\<http://evil.example/g>",
    "Clara's birthday is on 3 June [1].\n\n[1]: http://evil.example/h",  # a definition would turn [1] into a web link
])
def test_an_answer_makes_no_web_link_around_what_reads_like_code(said) -> None:
    """Each of these made a link to evil.example in an Ask memory answer: what was taken for code (kept as written)
    was no code to the markdown that showed it, and a backslash written before a bracket escaped the backslash."""
    from app.markdown import render
    from app.wiki_view import _as_words, _wiki_links

    hrefs = {1: "hearth-source:s1"}
    shown = render(_as_words(said, hrefs), links=_wiki_links(hrefs, None))
    assert "evil.example" in shown and 'href="http' not in shown, shown
    if "[1]" in said:
        assert 'href="hearth-source:s1"' in shown, shown  # the citation is still one


def test_a_link_to_a_part_of_a_page_opens_that_page(qtbot, qloop, ui_pod) -> None:
    """Memory reads [[Family#Birthdays]] as a link to Family (nightly and tidying keep it so); the window made it a
    link to a page titled "Family#Birthdays", and a click said there was no such page. A link to a part of the
    page itself ([[#Birthdays]]) has no page to open: it shows as its words."""
    scope, sid = seed(qloop, ui_pod)
    qloop.run(ui_pod.in_memory_thread(lambda: ui_pod.memory.write_page(
        Page(title="Cards", scope=scope, category="family", citations={1: sid},
             body="- Orchids for Clara, see [[Family#Birthdays]] and [[#Later|below]] [1]\n\n## Later\n\n- [[#Later]]"),
        author="agent:wiki-writer")))
    w = wiki_window(qtbot, ui_pod)
    qloop.run(w.wiki.open_page(scope, "Cards"))
    hrefs = re.findall(r'href="(hearth-page:[^"]+)"', w.wiki.page.toHtml())
    assert len(hrefs) == 1, hrefs  # Family's; the page's own parts are words
    text = w.wiki.page.toPlainText()
    assert "see Family#Birthdays and below [1]" in text and "[[" not in text, text
    w.wiki._on_anchor(QUrl(hrefs[0]))
    qloop.wait_until(lambda: not w.wiki._reads, what="the link to open")
    assert "Clara's birthday is on 3 June" in w.wiki.page.toPlainText(), w.wiki.page.toPlainText()


def test_a_page_of_the_persons_own_numbers_opens_and_edits_without_stopping_the_window(
        qtbot, qloop, ui_pod, monkeypatch) -> None:
    """Me's Contacts page: 150 numbers she typed into one correction (one vault entry) and 150 an agent with reversible
    redaction remembered one by one (an entry each). Each placeholder shown was its own keyring read (~10 ms) on the
    window's thread, every time: opening the page stopped the window for over 3 s and Edit for longer. The values
    are read from the vault off the window's thread now, each entry once."""
    import threading
    import time

    from PySide6.QtCore import QTimer

    import vault

    scope = f"private/{ui_pod.person.id}"
    corrected = ui_pod.redact_own("\n".join(f"- Person{i} the plumber: +44 7700 900{i:03d} [1]" for i in range(150)))
    remembered = [ui_pod.redact_own(f"- Person{i} the roofer is on +44 7700 901{i:03d} [1]") for i in range(150)]
    body = f"{corrected}\n" + "\n".join(remembered)
    assert "7700 90" not in body and body.count("#") >= 300

    def write() -> None:
        sid = ui_pod.memory.add_source("Our household contacts.", scope=scope)
        ui_pod.memory.write_page(Page(title="Contacts", scope=scope, category="home", citations={1: sid}, body=body,
                                      verified=True), author=f"person:{ui_pod.person.id}")

    qloop.run(ui_pod.in_memory_thread(write))
    ui_pod.pod.__dict__.pop("_restored", None)  # as at a new start of Hearth: no value read back yet
    on_window = []
    real_get = vault.Vault.get
    monkeypatch.setattr(vault.Vault, "get", lambda self, key: (
        on_window.append(key) if threading.current_thread() is threading.main_thread() else None,
        real_get(self, key))[1])
    w = wiki_window(qtbot, ui_pod, shown=True)
    qloop.wait_until(lambda: w.wiki.tree.topLevelItemCount() == 1 and not w.wiki._reads, what="the list of pages")
    beats: list[float] = []
    beat = QTimer()
    beat.setInterval(50)
    beat.timeout.connect(lambda: beats.append(time.monotonic()))
    beat.start()
    qloop.run(w.wiki.open_page(scope, "Contacts"), timeout=300)
    shown = w.wiki.page.toPlainText()
    w.wiki.edit.click()
    qloop.wait_until(lambda: w.wiki._editing is not None, timeout=300, what="the editor")
    beat.stop()
    worst = max((b - a for a, b in zip(beats, beats[1:], strict=False)), default=0.0)
    assert "Person149 the plumber: +44 7700 900149 [1]" in shown and "Person149 the roofer is on +44 7700 901149" in shown
    assert "#" not in shown and "#" not in w.wiki.editor.toPlainText()
    print(f"worst gap {worst:.2f} s, {len(on_window)} keyring read(s) on the window's thread")
    assert worst < 1.0, f"opening and editing her Contacts page stopped the window for {worst:.1f} s"
    assert on_window == [], f"{len(on_window)} keyring read(s) on the window's thread"


def test_a_value_forgotten_is_not_shown_again_nor_kept_once_someone_else_is_shown(
        qtbot, qloop, ui_pod, fake_model) -> None:
    """The values read back are kept in memory: one whose vault entry a forget deletes is not shown from there, and
    the person's all leave memory when someone else takes the window."""
    scope = f"private/{ui_pod.person.id}"
    said = ui_pod.redact_own("The plumber is on +44 7700 900123.")
    sid = qloop.run(ui_pod.in_memory_thread(lambda: ui_pod.memory.add_source(said, scope=scope)))
    assert ui_pod.restore_redactions(said) == "The plumber is on +44 7700 900123."
    qloop.run(ui_pod.memory_delete_source(sid))  # nothing holds its placeholder: its value leaves the vault
    assert ui_pod.restore_redactions(said) == said
    kept = ui_pod.redact_own("The roofer is on +44 7700 900456.")
    assert "900456" in ui_pod.restore_redactions(kept) and ui_pod.pod.restored.holds(ui_pod.person.id)
    w = wiki_window(qtbot, ui_pod)
    switch_to_bob(qloop, w, ui_pod, fake_model)
    assert ui_pod.pod.restored.holds(ui_pod.person.id) == 0
    assert ui_pod.restore_redactions(kept) == "The roofer is on +44 7700 900456."  # read from her vault again
