"""Settings → Models shows only roles Hearth uses, and a choice there is what the pod then uses."""

from __future__ import annotations

import pytest

from app.dialogs import SettingsDialog
from runtime_host.store import StoreError


def test_models_page_shows_only_roles_that_do_something_and_each_choice_is_used(qtbot, qloop, ui_pod) -> None:
    dlg = SettingsDialog(ui_pod)
    qtbot.addWidget(dlg)
    page = dlg.models
    assert set(page.combos) == {"extraction", "ingest", "ask_memory", "import"}
    for role, combo in page.combos.items():
        combo.setCurrentIndex(combo.findData("fake"))
        combo.activated.emit(combo.currentIndex())
        assert "now uses fake" in page.message.text()
        assert ui_pod.role_route(role)["provider"] == "fake"  # the route the memory jobs ask for
    with pytest.raises(StoreError, match="Unknown role"):
        ui_pod.set_role_model("image", "fake")
