"""The window holds at 900 px wide: the sidebar plus any page fits, so no page forces a wider window."""
from __future__ import annotations

from app.main_window import MainWindow


def test_every_page_fits_beside_the_sidebar_at_900_px(qtbot, qloop, ui_pod) -> None:
    w = MainWindow(ui_pod)
    qtbot.addWidget(w)
    w.resize(900, 700)
    w.show()
    too_wide = {}
    for i in range(w.pages.count()):
        w.pages.setCurrentIndex(i)
        qloop.run(__import__("asyncio").sleep(0.02))
        page = w.pages.widget(i)
        if page.minimumSizeHint().width() > 900 or w.minimumSizeHint().width() > 900:
            too_wide[type(page).__name__ + f"#{i}"] = (page.minimumSizeHint().width(), w.minimumSizeHint().width())
    assert not too_wide, f"pages wider than a 900 px window allows (page, window): {too_wide}"
    assert w.width() <= 900
