"""Settings → Models shows only roles Hearth uses, and a choice there is what the pod then uses."""

from __future__ import annotations

import pytest

from app.dialogs import SettingsDialog
from runtime_host.store import StoreError


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
