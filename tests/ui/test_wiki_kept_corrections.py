"""A wiki correction memory did not save while another person was shown is kept for its owner across a quit:
sealed in pod.db with their key, given back to them alone after a restart, then forgotten."""

from __future__ import annotations

import base64
import logging
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from app.main_window import MainWindow
from tests.ui.conftest import answer_confirm
from tests.ui.test_wiki_view import _save_ends, _save_while_busy_then_bob, _texts_on_screen, pick_person

TYPED = "- Clara's birthday is on 13 June, I checked her passport [4]"
WHY = "Your correction to Family was not saved: [4] points at no source of this page."


def _refused_while_bob_then_quit(qtbot, qloop, ui_pod) -> None:
    """Me saves a correction to Family while memory is busy and switches to Bob; the save fails ([4] points at no
    source) while Bob is shown; Hearth quits before Me is back."""
    w, _scope, busy = _save_while_busy_then_bob(qtbot, qloop, ui_pod, TYPED)
    _save_ends(qloop, w, busy)
    assert TYPED not in _texts_on_screen(w)
    _quit(qloop, w)
    qloop.run(ui_pod.close())


def _quit(qloop, w: MainWindow) -> None:
    """The window's reads of memory end, then Hearth quits (as the tray's Quit)."""
    qloop.wait_until(lambda: not w.wiki._tasks and not w.wiki._reads, what="the wiki's reads")
    w.quit()


@contextmanager
def _hearth_started(qtbot, qloop, home: Path, name: str = "Me") -> Iterator[MainWindow]:
    """Hearth started again on the same home, showing ``name``."""
    from runtime_host.pod import Pod

    me = Pod(home).unlock(name, None)
    try:
        w = MainWindow(me)
        qtbot.addWidget(w)
        w.show()
        yield w
        qloop.wait_until(lambda: not w.wiki._tasks and not w.wiki._reads, what="the wiki's reads")
        w.close()  # closed by code (a shutdown): asks nothing
    finally:
        qloop.run(me.close())


def _pod_db(home: Path) -> bytes:
    return b"".join(p.read_bytes() for p in home.glob("pod.db*"))


def _given_back(w: MainWindow) -> bool:
    return (w.pages.currentWidget() is w.wiki and w.wiki.editor.isVisibleTo(w) and w.wiki.editor.toPlainText() == TYPED
            and w.wiki.edit_refused.isVisibleTo(w) and w.wiki.edit_refused.text().startswith(WHY))


def test_a_correction_refused_while_bob_was_shown_is_given_back_to_its_owner_after_a_restart(qtbot, qloop, ui_pod,
                                                                                           home) -> None:
    """Hearth quit (or crashed) before Me was shown again: what she typed was kept in the window's memory only, and
    lost for good without a word. Now it waits in pod.db, sealed (not a word of it readable there), and the window
    started again on Me reopens her editor with her text and why it was not saved; once given back it is gone."""
    _refused_while_bob_then_quit(qtbot, qloop, ui_pod)
    assert b"passport" not in _pod_db(home) and b"Clara" not in _pod_db(home)
    with _hearth_started(qtbot, qloop, home) as w:
        assert w.pod.person.name == "Me" and _given_back(w)
        assert w.statusBar().currentMessage() == w.wiki.edit_refused.text()
        answer_confirm("Discard")  # she lets it go and quits
        _quit(qloop, w)
        assert not w.isVisible()
    assert list(sqlite3.connect(home / "pod.db").execute("SELECT * FROM kept_correction")) == []
    with _hearth_started(qtbot, qloop, home) as w:  # given once: not again
        assert not w.wiki.editor.isVisibleTo(w) and "passport" not in _texts_on_screen(w)
        assert "not saved" not in _texts_on_screen(w).lower()


def test_bob_shown_first_after_a_restart_never_sees_mes_kept_correction(qtbot, qloop, ui_pod, home) -> None:
    """Hearth starts again on Bob: nothing of Me's kept correction is on his screen (the editor, the status bar,
    the Wiki page). Me picked in the person box: her editor reopens with her text and why."""
    _refused_while_bob_then_quit(qtbot, qloop, ui_pod)
    with _hearth_started(qtbot, qloop, home, "Bob") as w:
        assert w.pod.person.name == "Bob"
        w.show_wiki()
        shown = _texts_on_screen(w)
        assert "passport" not in shown and "Family" not in shown and "not saved" not in shown.lower(), shown
        assert not w.wiki.editor.isVisibleTo(w)
        w.pages.setCurrentIndex(0)
        pick_person(w, "Me")
        assert w.pod.person.name == "Me" and _given_back(w)


def test_a_kept_correction_that_cannot_be_read_does_not_stop_hearth_starting(qtbot, qloop, ui_pod, home,
                                                                            caplog: Any) -> None:
    """Rows of Me's kept corrections damaged in pod.db (not base64, ciphertext changed, sealed but not a
    correction): the window starts, says each in the log, drops them, and still gives back the one that reads."""
    from runtime_host import keptcorrections

    keptcorrections.keep(ui_pod.pod, ui_pod.person.id, {"page": "family"})  # sealed, but not shaped as one
    _refused_while_bob_then_quit(qtbot, qloop, ui_pod)
    db = sqlite3.connect(home / "pod.db")
    sealed = db.execute("SELECT sealed FROM kept_correction ORDER BY created_at DESC").fetchone()[0]
    raw = bytearray(base64.b64decode(sealed))
    raw[20] ^= 1
    flipped = base64.b64encode(bytes(raw)).decode()
    with db:
        db.executemany("INSERT INTO kept_correction (id, person_id, sealed, created_at) VALUES (?, ?, ?, 1.0)",
                       [("junk", ui_pod.person.id, "not base64 at all!"), ("flipped", ui_pod.person.id, flipped)])
    caplog.set_level(logging.WARNING)
    with _hearth_started(qtbot, qloop, home) as w:
        assert _given_back(w)
    dropped = [r.getMessage() for r in caplog.records if "kept wiki correction could not be read" in r.getMessage()]
    assert len(dropped) == 3, dropped
    assert list(db.execute("SELECT * FROM kept_correction")) == []


CARD = "- Clara's birthday is on 13 June, I checked her passport; card 5555 5555 5555 4444 [4]"


def _kept_then_forgotten(qtbot, qloop, ui_pod, home, forget) -> MainWindow:
    """Me's correction (her card in it) is not saved while Bob is shown, so it is kept for her; ``forget`` then
    forgets everything about her (README: that takes "wiki corrections kept for you" too), and she is picked again."""
    w, _scope, busy = _save_while_busy_then_bob(qtbot, qloop, ui_pod, CARD)
    _save_ends(qloop, w, busy)
    assert len(list(sqlite3.connect(home / "pod.db").execute("SELECT * FROM kept_correction"))) == 1
    forget()
    assert list(sqlite3.connect(home / "pod.db").execute("SELECT * FROM kept_correction")) == []
    pick_person(w, "Me")
    qloop.wait_until(lambda: not w.wiki._tasks and not w.wiki._reads, what="the wiki to load for Me")
    assert w.pod.person.name == "Me"
    return w


def test_forget_me_in_a_terminal_forgets_the_correction_the_window_keeps_for_her(qtbot, qloop, ui_pod, home) -> None:
    """`memory forget-me` run in a terminal (another process) emptied pod.db's kept corrections, but the window
    still held hers in its memory: picked again, her forgotten correction reopened in the editor, her card in the
    clear, one Save from memory again. Now the window gives back only what pod.db still keeps."""
    from tests.integration.test_cli import cli

    def in_a_terminal() -> None:
        out = cli(home, "memory", "forget-me", "--yes", timeout=120)
        assert out.returncode == 0, out.stderr

    w = _kept_then_forgotten(qtbot, qloop, ui_pod, home, in_a_terminal)
    shown = _texts_on_screen(w)
    assert "5555 5555 5555 4444" not in shown and "passport" not in shown, shown
    assert not w.wiki.editor.isVisibleTo(w) and "not saved" not in shown.lower()


def test_forget_me_in_this_hearth_forgets_the_correction_the_window_keeps_for_her(qtbot, qloop, ui_pod, home) -> None:
    """The same forget done by this Hearth while Bob is shown (as a remote client or another window asks the Pod):
    the window lets her correction go at once, and nothing of it reopens when she is picked."""
    w = _kept_then_forgotten(qtbot, qloop, ui_pod, home, lambda: qloop.run(ui_pod.memory_forget_me()))
    shown = _texts_on_screen(w)
    assert "5555 5555 5555 4444" not in shown and "passport" not in shown, shown
