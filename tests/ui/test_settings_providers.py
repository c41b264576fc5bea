"""Settings → Providers as a person uses it: check lists models and tests the key, edit, remove (asks first)."""

from __future__ import annotations

import socket
import time

from app.dialogs import SettingsDialog
from tests.helpers.fake_model import FakeModelServer
from tests.ui.conftest import answer_confirm

KEY = "sk-window-check-9"


def test_check_lists_the_models_and_refuses_a_wrong_key_before_saving(qtbot, qloop, ui_pod, secure_keyring) -> None:
    server = FakeModelServer(key=KEY, models=["alpha-1", "beta-2"]).start()
    try:
        dlg = SettingsDialog(ui_pod)
        qtbot.addWidget(dlg)
        page = dlg.providers
        page.name.setText("mine")
        page.base_url.setText(server.base_url)
        page.key.setText("wrong")
        qloop.run(page.start_check(save=True))
        assert "refused the key" in page.message.text() and page.save_button.text() == "Save anyway"
        assert "mine" not in [p["name"] for p in ui_pod.list_providers()]
        page.key.setText(KEY)
        qloop.run(page.start_check(save=True))
        assert [page.model.itemText(i) for i in range(page.model.count())] == ["alpha-1", "beta-2"]
        assert "key was accepted" in page.message.text() or "Saved" in page.message.text()
        saved = next(p for p in ui_pod.list_providers() if p["name"] == "mine")
        assert saved["model"] == "alpha-1" and saved["has_key"]
    finally:
        server.stop()


def test_a_dead_address_is_reported_at_once(qtbot, qloop, ui_pod) -> None:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    dlg = SettingsDialog(ui_pod)
    qtbot.addWidget(dlg)
    page = dlg.providers
    page.name.setText("dead")
    page.base_url.setText(f"http://127.0.0.1:{port}/v1")
    started = time.monotonic()
    qloop.run(page.start_check(save=False))
    assert time.monotonic() - started < 5
    assert "Nothing answers" in page.message.text()


def test_pick_a_provider_to_edit_it_and_remove_asks_first(qtbot, qloop, ui_pod, fake_model) -> None:
    ui_pod.add_provider("spare", kind="openai-compatible", base_url=fake_model.base_url, model="old-1")
    dlg = SettingsDialog(ui_pod)
    qtbot.addWidget(dlg)
    page = dlg.providers
    names = [r["name"] for r in page._rows]
    page.list.setCurrentRow(names.index("spare"))
    assert page.name.text() == "spare" and page.base_url.text() == fake_model.base_url
    assert page.model.currentText() == "old-1"
    page.model.setEditText("new-2")
    assert page.save()
    assert next(p for p in ui_pod.list_providers() if p["name"] == "spare")["model"] == "new-2"

    page.list.setCurrentRow([r["name"] for r in page._rows].index("spare"))
    shown = answer_confirm("Cancel")
    page._on_remove()
    assert shown and "spare" in shown[0]
    assert "spare" in [p["name"] for p in ui_pod.list_providers()]
    page.list.setCurrentRow([r["name"] for r in page._rows].index("spare"))
    answer_confirm("Remove")
    page._on_remove()
    assert "spare" not in [p["name"] for p in ui_pod.list_providers()]
    assert "Removed" in page.message.text()
    # a provider an agent uses is not removed; the message names the agent
    page.list.setCurrentRow([r["name"] for r in page._rows].index("fake"))
    answer_confirm("Remove")
    page._on_remove()
    assert "helper" in page.message.text() and "fake" in [p["name"] for p in ui_pod.list_providers()]


def test_the_dialogs_save_checks_a_typed_provider_before_saving_it(qtbot, qloop, ui_pod) -> None:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    dlg = SettingsDialog(ui_pod)
    qtbot.addWidget(dlg)
    dlg.show()
    page = dlg.providers
    page.name.setText("typo")
    page.base_url.setText(f"http://127.0.0.1:{port}/v1")
    dlg._save()
    qloop.wait_until(lambda: "Check failed" in page.message.text(), what="the check")
    assert dlg.isVisible() and "typo" not in [p["name"] for p in ui_pod.list_providers()]
