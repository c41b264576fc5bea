"""Settings → Models shows only roles Hearth uses, and a choice there is what the pod then uses."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from app.dialogs import SettingsDialog
from runtime_host.store import StoreError
from tests.integration.test_memory_off_thread import minutes_folder


def _embedding_chosen(qtbot, pod, choice: str) -> Any:
    """Settings → Models opened for ``pod`` with ``choice`` picked as the embedding model, as a person picks it:
    the dialog (kept by the caller while its page is read)."""
    dlg = SettingsDialog(pod)
    qtbot.addWidget(dlg)
    page = dlg.models
    combo = page.combos["embedding"]
    combo.setCurrentIndex(combo.findData(choice))
    combo.activated.emit(combo.currentIndex())
    return dlg


def test_models_page_shows_only_roles_that_do_something_and_each_choice_is_used(qtbot, qloop, ui_pod) -> None:
    dlg = SettingsDialog(ui_pod)
    qtbot.addWidget(dlg)
    page = dlg.models
    assert set(page.combos) == {"extraction", "ingest", "ask_memory", "import", "embedding"}
    for role, combo in page.combos.items():
        if role == "embedding":
            continue
        combo.setCurrentIndex(combo.findData("fake"))
        combo.activated.emit(combo.currentIndex())
        assert "now uses fake" in page.message.text()
        assert ui_pod.role_route(role)["provider"] == "fake"  # the route the memory jobs ask for
    with pytest.raises(StoreError, match="Unknown role"):
        ui_pod.set_role_model("image", "fake")


def test_choosing_minilm_for_search_reembeds_memory_with_visible_progress(qtbot, qloop, ui_pod) -> None:
    scope = f"private/{ui_pod.person.id}"
    target = ui_pod.memory.add_source("Dr. Nwosu at Brightsmile Dental: check-up on 3 March at 10:40.", scope=scope)
    from wiki_engine import Item

    ui_pod.memory.add_items([Item(text=f"Shopping list {n}: bread and {n} apples.", scope=scope, ts=1.7e9 + n)
                             for n in range(200)])
    dlg = SettingsDialog(ui_pod)
    qtbot.addWidget(dlg)
    page = dlg.models
    combo = page.combos["embedding"]
    assert combo.findData("fake") == -1  # memory's vectors stay on this computer
    combo.setCurrentIndex(combo.findData("local/minilm"))
    combo.activated.emit(combo.currentIndex())
    assert "now uses local/minilm" in page.message.text()
    qtbot.waitUntil(lambda: "Memory is re-embedded: 201 items" in page.embedding_progress.text(), timeout=60_000)
    assert ui_pod.memory.index(scope).vecs.shape[1] == 384
    hits = qloop.run(ui_pod.memory_search("when do I see the tooth doctor", k=1))
    assert hits[0].id == target


def test_settings_left_open_while_a_folder_imports_on_minilm_keeps_the_window_answering(qtbot, qloop, ui_pod,
                                                                                         tmp_path) -> None:
    """Settings → Models reads memory's re-embedding progress every 400 ms on the window's event loop, and that read
    waited for memory's lock, which was held while MiniLM embedded each batch of a watched folder: with Settings
    open, the whole window stood still for a batch (11.7 s for these 84 long parts on a busy 2-core machine)."""
    ui_pod.set_role_model("embedding", "local/minilm")
    qloop.run(ui_pod.memory_search("anything", mode="keyword"))  # memory open, on MiniLM
    folder = minutes_folder(tmp_path)
    ui_pod.folders.add(folder)
    dlg = SettingsDialog(ui_pod)
    qtbot.addWidget(dlg)
    dlg.show()
    gaps: list[float] = []

    async def import_watching_the_window() -> Any:
        scan = asyncio.ensure_future(ui_pod.folders.scan(str(folder)))
        last = time.monotonic()
        while not scan.done():
            await asyncio.sleep(0.05)
            gaps.append(time.monotonic() - last)
            last = time.monotonic()
        return await scan

    rep = qloop.run(import_watching_the_window(), timeout=300)
    assert rep.sources_added == 84, rep
    assert max(gaps) < 1.0, f"with Settings open, the window stood still for {max(gaps):.1f} s during the import"


def test_a_providers_embeddings_can_be_chosen_for_search_and_memory_is_reembedded(qtbot, qloop, ui_pod, fake_model) -> None:
    from tests.helpers.fake_model import Error
    from wiki_engine import Item

    scope = f"private/{ui_pod.person.id}"
    dentist = "Appointment with the dentist on Friday at nine."
    target = ui_pod.memory.add_source(dentist, scope=scope)
    ui_pod.memory.add_items([Item(text=f"Shopping list {n}: bread and {n} apples.", scope=scope, ts=1.7e9 + n)
                             for n in range(100)])
    ui_pod.add_provider("claude", kind="anthropic", base_url=fake_model.base_url, model="claude-x")
    dlg = SettingsDialog(ui_pod)
    qtbot.addWidget(dlg)
    page = dlg.models
    combo = page.combos["embedding"]
    refs = [combo.itemData(i) for i in range(combo.count())]
    assert refs[1:] == ["local/static", "local/minilm", "fake/fake-1"]  # no embeddings API at Anthropic
    i = combo.findData("fake/fake-1")
    assert "fake — fake-1" in combo.itemText(i) and "sent to fake" in combo.itemText(i)
    combo.setCurrentIndex(i)
    combo.activated.emit(i)
    assert "now uses fake/fake-1" in page.message.text()
    qtbot.waitUntil(lambda: "Memory is re-embedded: 101 items" in page.embedding_progress.text(), timeout=60_000)
    assert ui_pod.models()["roles"]["embedding"] == {"provider": "fake", "model": "fake-1", "source": "set"}
    assert dentist in fake_model.embedded
    hits = qloop.run(ui_pod.memory_search("tooth", k=1, mode="meaning"))
    assert hits[0].id == target  # found by meaning alone, on the provider's vectors

    # The provider goes down: a new note is stored and found at once, and the page says what happened.
    fake_model.embed_fault = Error(500, "down")
    later = ui_pod.memory.add_source("The plumber comes on Tuesday.", scope=scope)
    qtbot.waitUntil(lambda: "HTTP 500" in page.embedding_progress.text(), timeout=30_000)
    assert "tries again" in page.embedding_progress.text()
    assert qloop.run(ui_pod.memory_search("plumber", k=1))[0].id == later


def test_a_second_person_sees_who_chooses_search_by_meaning_and_cannot_change_it(qtbot, qloop, ui_pod) -> None:
    """Search by meaning is one index for everyone. Bob could pick MiniLM in Settings → Models: it was saved and
    shown as his, and nothing changed. Now his page says whose choice it is, and the choice is not offered."""
    ui_pod.set_role_model("embedding", "local/minilm")
    ui_pod.rename("Alice")
    ui_pod.add_person("Bob")
    bob = ui_pod.pod.for_person(ui_pod.store.get_person("Bob"))
    dlg = SettingsDialog(bob)
    qtbot.addWidget(dlg)
    combo = dlg.models.combos["embedding"]
    assert not combo.isEnabled() and combo.count() == 1
    assert combo.currentText() == "On this computer — MiniLM (better at meaning, slower to index), chosen by Alice for everyone"
    assert "so Alice, who set Hearth up, chooses its model" in combo.toolTip()
    assert dlg.models.save()  # saving Bob's other choices is not stopped by it
    with pytest.raises(StoreError, match="chosen by Alice, who set Hearth up"):
        bob.set_role_model("embedding", "local/static")
    assert ui_pod.embedding_model() == "minilm"


def test_a_second_person_is_shown_nothing_of_the_first_persons_provider_for_search(qtbot, qloop, ui_pod,
                                                                                   fake_model) -> None:
    """The first person's provider for search by meaning fails: Bob's Settings → Models named her provider and
    model and told him to choose the model again, which he may not do. Her provider serves her notes alone."""
    from tests.helpers.fake_model import Error

    ui_pod.add_provider("alices-openai-work", kind="openai-compatible", base_url=fake_model.base_url,
                        model="text-embedding-secret")
    ui_pod.memory.add_source("Appointment with the dentist on Friday at nine.", scope=f"private/{ui_pod.person.id}")
    fake_model.embed_fault = Error(500, "down")
    ui_pod.set_role_model("embedding", "alices-openai-work/text-embedding-secret")
    qloop.wait_until(lambda: (ui_pod.embedding_status() or {}).get("error"), 30, "the provider's failure")
    mine = SettingsDialog(ui_pod)
    qtbot.addWidget(mine)
    assert "alices-openai-work" in mine.models.embedding_progress.text()  # her own: what failed and what to do
    ui_pod.add_person("Bob")
    bob = ui_pod.pod.for_person(ui_pod.store.get_person("Bob"))
    dlg = SettingsDialog(bob)
    qtbot.addWidget(dlg)
    assert dlg.models.embedding_progress.text() == "" and bob.embedding_status() is None
    assert dlg.models.combos["embedding"].currentText() == ("On this computer — static (fast), chosen by the person "
                                                            "who set Hearth up for everyone")


def test_a_provider_saved_in_settings_can_then_be_chosen_for_wiki_pages(qtbot, qloop, ui_pod, fake_model) -> None:
    """Bob has no provider: the Wiki page's "Choose a provider…" opens Settings on Providers. He saved one, then
    opened Models to choose it for writing wiki pages: it was not offered there until Settings was closed and
    opened again. Now it is, each role keeps the choice it shows, and a removed provider leaves the choices."""
    from tests.ui.conftest import answer_confirm
    from tests.ui.test_wiki_view import wiki_window

    ui_pod.add_person("Bob")
    w = wiki_window(qtbot, ui_pod, shown=True)
    w.refresh_people()
    assert w.switch_person("Bob")
    w.show_wiki()
    panel = w.wiki.ingest_panel
    panel.choose.click()
    dlg = panel.settings_dialog
    assert dlg.tabs.currentWidget() is dlg.providers
    models = dlg.models
    embedding = models.combos["embedding"].currentText()
    dlg.providers.name.setText("mine")
    dlg.providers.base_url.setText(fake_model.base_url)
    dlg.providers.model.setEditText("fake-model")
    qloop.run(dlg.providers.start_check(save=True))
    assert "Saved provider 'mine'" in dlg.providers.message.text(), dlg.providers.message.text()
    dlg.tabs.setCurrentWidget(models)
    combo = models.combos["ingest"]
    assert combo.findData("mine") > 0, [combo.itemText(i) for i in range(combo.count())]
    combo.setCurrentIndex(combo.findData("mine"))
    combo.activated.emit(combo.currentIndex())
    assert "now uses mine" in models.message.text()
    models.combos["extraction"].setCurrentIndex(models.combos["extraction"].findData("mine"))  # shown, not saved
    # a second provider saved: every role still shows what it showed
    dlg.tabs.setCurrentWidget(dlg.providers)
    dlg.providers.clear_form()
    dlg.providers.name.setText("other")
    dlg.providers.base_url.setText(fake_model.base_url)
    dlg.providers.model.setEditText("fake-model")
    qloop.run(dlg.providers.start_check(save=True))
    assert "Saved provider 'other'" in dlg.providers.message.text(), dlg.providers.message.text()
    assert models.combos["ingest"].currentText().startswith("mine") and models.combos["ingest"].findData("other") > 0
    assert models.combos["extraction"].currentData() == "mine"
    assert models.combos["embedding"].currentText() == embedding
    # a removed provider is no longer offered
    dlg.providers.list.setCurrentRow(next(i for i, p in enumerate(dlg.providers._rows) if p["name"] == "other"))
    answer_confirm("Remove")
    dlg.providers.remove_button.click()
    assert "Removed 'other'" in dlg.providers.message.text()
    assert models.combos["ingest"].findData("other") == -1 and models.combos["extraction"].currentData() == "mine"
    dlg.close()


def test_find_local_in_providers_fills_in_a_chat_model_not_the_embedding_model_listed_first(
        qtbot, qloop, ui_pod, monkeypatch) -> None:
    """Settings → Providers → Find local: the model filled in was the one Ollama lists first, often the embedding
    model pulled last (nomic-embed-text); saved so, every chat and page then failed. It fills in the chat model;
    a server with embedding models alone fills in none and says so."""
    import asyncio

    from runtime_host.providers import vendors
    from tests.helpers.fake_model import FakeModelServer
    from tests.ui.test_memory_status import _local_probe

    for models, want in ((["nomic-embed-text:latest", "llama3.2:latest"], "llama3.2:latest"),
                         (["nomic-embed-text:latest", "mxbai-embed-large:latest"], "")):
        here = FakeModelServer(models=models).start()
        try:
            monkeypatch.undo()  # the real probe, pointed at this server
            monkeypatch.setattr(vendors, "discover_local", _local_probe(here))
            dlg = SettingsDialog(ui_pod)
            qtbot.addWidget(dlg)
            page = dlg.providers
            page.find_local.click()
            qloop.wait_until(lambda page=page: page.find_local.isEnabled() and "Found" in page.message.text(),
                             what="the local server found")
            qloop.run(asyncio.sleep(0))
            assert page.base_url.text().startswith(here.base_url.rstrip("/")), page.base_url.text()
            assert page.model.currentText() == want, (page.model.currentText(), page.message.text())
            if not want:
                assert "embedding models alone" in page.message.text(), page.message.text()
        finally:
            here.stop()


def test_a_note_the_provider_refuses_on_its_own_is_named_with_what_to_do(qtbot, qloop, ui_pod, fake_model) -> None:
    """A long document made every later note wait for its vector, Settings saying "tries again in 16 s" for good."""
    scope = f"private/{ui_pod.person.id}"
    fake_model.embed_max_chars = 8_000  # a model of a small context: even a note's first 16,384 characters are refused
    ui_pod.memory.add_source("Committee minutes. " + "The committee discussed the budget at length. " * 400, scope=scope)
    dentist = ui_pod.memory.add_source("Appointment with the dentist on Friday at nine.", scope=scope)
    dlg = _embedding_chosen(qtbot, ui_pod, "fake/fake-1")
    page = dlg.models
    qtbot.waitUntil(lambda: "Memory is re-embedded: 2 items" in page.embedding_progress.text(), timeout=30_000)
    text = page.embedding_progress.text()
    assert "“Committee minutes." in text and "HTTP 400" in text and "words alone" in text, text
    assert "Settings → Models" in text and "tries again" not in text
    assert qloop.run(ui_pod.memory_search("tooth", k=1, mode="meaning"))[0].id == dentist


def test_minilm_chosen_right_after_a_start_shows_its_re_embedding_in_settings(qtbot, qloop, home, fake_model) -> None:
    """Hearth started and the person stayed on the chat page (memory not opened yet), then picked MiniLM in
    Settings → Models: the page said "now uses local/minilm", and then showed nothing, and nothing was re-embedded,
    until something else opened memory minutes later."""
    from app.main_window import MainWindow
    from runtime_host.pod import Pod
    from wiki_engine import Item

    async def seed() -> None:
        p = Pod(home).first_person()
        p.add_provider("fake", kind="openai-compatible", base_url=fake_model.base_url, model="fake-1")
        p.add_agent("helper", provider="fake", system="Test agent.")
        await p.in_memory_thread(lambda: p.memory.add_items(
            [Item(text=f"Note {k}: the plumber comes on day {k}.", scope=f"private/{p.person.id}", ts=1e6 + k)
             for k in range(200)]))
        await p.close()

    async def start() -> Any:
        p = Pod(home).first_person()
        p.pod.start_background()
        return p

    qloop.run(seed())
    pod = qloop.run(start())
    try:
        w = MainWindow(pod)
        qtbot.addWidget(w)
        w.show()
        w.show_chat()
        dlg = _embedding_chosen(qtbot, pod, "local/minilm")
        page = dlg.models
        assert "now uses local/minilm" in page.message.text()
        qloop.wait_until(lambda: "of 200 items done" in page.embedding_progress.text()
                         or "re-embedded: 200 items" in page.embedding_progress.text(), timeout=20,
                         what="Settings → Models to show how far the re-embedding of the 200 notes is")
        qloop.wait_until(lambda: "Memory is re-embedded: 200 items" in page.embedding_progress.text(), timeout=60,
                         what="the re-embedding to finish")
    finally:
        qloop.run(pod.close())
