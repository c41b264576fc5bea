"""The wiki's ingest bar: when the next ingest runs, "Ingest now", and, when no ingest model is chosen, an
offer of one (a model server found on this machine, or a provider in Settings). Also the empty wiki's text,
which says why there are no pages yet and what makes them appear."""

from __future__ import annotations

import asyncio
import html
import logging
from datetime import datetime
from typing import Any

from PySide6.QtCore import QTimer, Signal
from PySide6.QtWidgets import QHBoxLayout, QPushButton, QSizePolicy, QWidget

from app.markdown import plain_label

log = logging.getLogger("hearth.app")

NO_MODEL = "No ingest model chosen: pages are written once one is."


def _when(dt: datetime | None) -> str:
    if dt is None:
        return "paused (schedules are paused)"
    local = dt.astimezone()
    mins = max(0, round((dt - datetime.now(dt.tzinfo)).total_seconds() / 60))
    return f"at {local:%H:%M}" + (f" (in {mins} min)" if mins < 120 else "")


def not_written(rejected: list[dict[str, str]]) -> list[str]:
    """What an ingest's line says of the pages its writer drafted that memory did not write (the report's
    ``rejected``): how many, which, and why, each reason as memory gave it."""
    from app.tray import cut_text

    def said(why: str) -> str:
        why = why.strip()
        return why if why.endswith((".", "!", "?")) else f"{why}."

    # the whole answer set aside (a note the writer was shown was deleted while it wrote): no page of it is named
    out = [f"The wiki-writer's answer was not written: {said(r['why'])}" for r in rejected if r["title"] == "ingest"]
    pages = [r for r in rejected if r["title"] != "ingest"]
    if pages:
        out.insert(0, f"{len(pages)} page(s) the wiki-writer drafted were not written:")
        out[1:1] = [f"“{cut_text(r['title'], 80)}”: {said(r['why'])}" for r in pages]
    return out


class IngestPanel(QWidget):
    """Signals:
    status(str): something the person should read in the status bar.
    ingested(): an ingest ran from here (the wiki reloads its pages).
    """

    status = Signal(str)
    ingested = Signal()

    def __init__(self, pod: Any, parent: QWidget | None = None):
        super().__init__(parent)
        self.pod = pod
        self._tasks: set[asyncio.Task[Any]] = set()
        self._ingesting: list[str] = []  # whose Ingest now from here is still writing (once per run)
        self._found: Any = None
        self.next_label = plain_label("")
        self.next_label.setAccessibleName("Next ingest")
        self.ingest_now = QPushButton("Ingest now")
        self.ingest_now.setToolTip("Write wiki pages from what memory has kept since the last ingest")
        self.ingest_now.clicked.connect(self._on_ingest_now)
        self.no_model = plain_label(NO_MODEL)
        self.no_model.setAccessibleName("No ingest model")
        self.no_model.setWordWrap(True)  # the bar fits a 900 px window
        self.find_local = QPushButton("Find a local model server")
        self.find_local.clicked.connect(self._on_find_local)
        self.use_local = QPushButton("")
        self.use_local.setVisible(False)
        self.use_local.clicked.connect(self._on_use_local)
        self.choose = QPushButton("Choose a provider…")
        self.choose.setToolTip("Settings → Providers and Models")
        self.choose.clicked.connect(self._on_choose)
        self.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Fixed)
        row = QHBoxLayout(self)
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(self.next_label)
        row.addWidget(self.ingest_now)
        row.addStretch(1)
        for w in (self.no_model, self.find_local, self.use_local, self.choose):
            row.addWidget(w)
        # "Next ingest at 14:30 (in 12 min)" moves on by itself: a timed ingest with nothing to write sends no
        # event that would reload the wiki, and the minutes count down.
        self.clock = QTimer(self)
        self.clock.setInterval(20_000)
        self.clock.timeout.connect(self._on_clock)
        self.clock.start()
        self.refresh()

    def _run(self, coro: Any) -> asyncio.Task[Any]:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    def reset(self) -> None:
        """Closes what was opened for the previous person: the Settings window from "Choose a provider…" (it lists
        their providers and acts on them), and the model server found for them and its offer. The bar shows the
        next person's own ingest: another's Ingest now still writing neither greys out theirs nor reads "Ingesting…"."""
        self._forget_found()
        self.refresh()
        dlg = self.__dict__.pop("settings_dialog", None)
        if dlg is not None:
            dlg.finished.disconnect(self._on_settings_closed)
            dlg.close()
            dlg.deleteLater()

    def _forget_found(self) -> None:
        self._found = None
        self.use_local.setVisible(False)
        self.no_model.setText(NO_MODEL)

    def has_model(self) -> bool:
        return self.pod.has_memory_model("ingest")

    def next_text(self) -> str:
        from runtime_host.memory_jobs import next_run

        return f"Next ingest {_when(next_run(self.pod))}"

    def refresh(self) -> None:
        """The whole bar from the person's settings as they are now: the next ingest's time and, with no ingest model
        chosen, the offer of one. The only place the bar is worked out: on a reload, when Settings closes and on the
        bar's clock (a model chosen in Settings from the menu or with `models set` in a terminal shows within 20 s).
        Cheap on the window's thread: the model chosen is read with no keyring read, the time from the schedules."""
        mine = self.pod.person.id in self._ingesting  # the person shown's own Ingest now is still writing
        missing = not self.has_model()
        self.ingest_now.setEnabled(not mine)
        # no time with no model: the timed ingest writes nothing of theirs (NO_MODEL beside says why)
        self.next_label.setText("Ingesting…" if mine else "" if missing else self.next_text())
        for w in (self.no_model, self.find_local, self.choose):
            w.setVisible(missing)
        if not missing:
            self.use_local.setVisible(False)

    def empty_html(self, sources: int, held: int = 0) -> str:
        """What the wiki shows while it has no pages: why, and what to do (``held``: the person's notes waiting
        under Held back)."""
        parts = ["<h2>No wiki pages yet</h2>",
                 "<p>Hearth writes pages from what it keeps of your chats, your mail and your watched folders "
                 "(the <i>Watched folders</i> tab). Each page's claims cite the sources they come from.</p>"]
        if sources:
            parts.append(f"<p>Memory holds <b>{sources}</b> source(s) now; search finds them already.</p>")
        elif not held:
            parts.append("<p>Memory holds nothing yet: chat with an agent, add a mail inbox or a watched folder.</p>")
        if held:
            parts.append(f"<p><b>{held}</b> note(s) read like orders to the assistant and wait for you under "
                         "<i>Held back</i>: keep what is harmless, discard the rest.</p>")
        if self.has_model():
            parts.append(f"<p>{html.escape(self.next_text())}; <b>Ingest now</b> writes pages at once.</p>")
        else:
            from runtime_host.memory_jobs import NO_INGEST_MODEL

            parts.append(f"<p><b>{html.escape(NO_INGEST_MODEL)}</b></p>"
                         "<p>Use <b>Find a local model server</b> (Ollama, LM Studio, llama.cpp) or "
                         "<b>Choose a provider…</b> above.</p>")
        return "".join(parts)

    # -- slots
    def _on_clock(self) -> None:
        self.show_next()

    def show_next(self) -> None:
        """The bar anew while it is on screen (the clock moved on, schedules were paused or resumed, or a model was
        chosen elsewhere meanwhile)."""
        if self.isVisible():
            self.refresh()

    def _on_ingest_now(self) -> None:
        self.ingest()

    def ingest(self) -> asyncio.Task[Any]:
        from runtime_host.memory_jobs import MemoryModelError

        # Whose run it is: its outcome (a failure quotes their model's answer) is told to them only, and only their
        # Ingest now waits for it (another person shown meanwhile has theirs).
        pod, who = self.pod, self.pod.person.id

        async def go() -> None:
            self._ingesting.append(who)
            self.refresh()
            try:
                out = await pod.memory_ingest()
            except MemoryModelError as exc:
                if self.pod.person.id == who:
                    self.status.emit(f"Ingest failed: {exc}")
                return
            except Exception as exc:  # noqa: BLE001 - a disk, database or lease failure: said, never silent
                log.exception("ingest from the Wiki page failed")
                if self.pod.person.id == who:
                    self.status.emit(f"Ingest stopped: {exc} Nothing waiting in the inbox is lost; try again, or "
                                     "see Hearth's log.")
                return
            finally:
                self._ingesting.remove(who)
                self.refresh()
            if self.pod.person.id != who:  # the person was switched meanwhile: the report is not the new one's
                self.ingested.emit()  # what the run wrote may be theirs too: the wiki reloads for them
                return
            from app.tray import cut_text
            from wiki_engine.sources import said_of

            # a note whose file is lost or damaged waits in the inbox: which file, and what to do
            damaged = " ".join(line if line.endswith(".") else f"{line}."
                               for line in said_of(out.get("unreadable", []), self.pod.scope_label))
            # a line of a page that gave the assistant orders, left out of it: which page, which line, why
            left = [f"“{r['title']}” left out a line that {r['why']}: “{cut_text(r['line'], 80)}”."
                    for r in out.get("left_out", [])]
            # a page the writer drafted that memory did not write (titled with an id, citing nothing…): which, why
            refused = not_written(out.get("rejected", []))
            if out.get("message"):
                self.status.emit(" ".join([out["message"], *refused, *left, damaged]).rstrip())
            else:
                self.status.emit(" ".join([f"Ingest wrote {len(out['written'])} page(s), proposed "
                                           f"{len(out['proposed'])} change(s) to verified pages; "
                                           f"{out['left_in_inbox']} item(s) left in the inbox.", *refused, *left,
                                           damaged]).rstrip())
            self.ingested.emit()

        return self._run(go())

    def _on_find_local(self) -> None:
        self.find_server()

    def find_server(self, probe: Any = None) -> asyncio.Task[Any]:
        """Looks for a model server on this machine and offers its first chat model for ingest (an embedding model it
        lists, Ollama's nomic-embed-text say, cannot write pages)."""
        from runtime_host.providers.vendors import chat_model, discover_local

        self.find_local.setEnabled(False)
        self.no_model.setText("Looking for model servers on this machine…")
        who = self.pod.person.id

        def look() -> tuple[list[Any], list[tuple[Any, str]]]:
            found = [f for f in (probe or discover_local)() if f.models]
            return found, [(f, m) for f in found if (m := chat_model(f)) is not None]

        async def go() -> None:
            try:
                found, offers = await asyncio.to_thread(look)
            finally:
                self.find_local.setEnabled(True)
            if self.pod.person.id != who:  # the window changed hands meanwhile: the offer was for the other person
                return
            if not found:
                self.no_model.setText("No Ollama, LM Studio or llama.cpp server with a model answered on this "
                                      "machine: start one and look again, or choose a provider.")
                return
            if not offers:
                self.no_model.setText("; ".join(f"{f.label} at {f.base_url} has embedding models alone "
                                                f"({', '.join(f.models)})" for f in found)
                                      + ": they cannot write wiki pages. Add a chat model to it (for Ollama: "
                                      "`ollama pull llama3.2`) and look again, or choose a provider.")
                return
            self._found = offers[0]
            server, model = self._found
            self.no_model.setText(f"Found {server.label} at {server.base_url}.")
            self.use_local.setText(f"Use {model} for wiki pages")
            self.use_local.setVisible(True)

        return self._run(go())

    def _on_use_local(self) -> None:
        if self._found is not None:
            self.use()

    def use(self) -> asyncio.Task[Any]:
        """Chooses the server found for ingest: asked again first (it may have stopped since it was found), saved as
        a provider of its own address (a provider of the same name elsewhere, another machine's Ollama say, is
        left alone: the person's notes go to the server the offer named)."""
        from runtime_host.providers.vendors import recheck
        from runtime_host.store import StoreError

        (found, model), who = self._found, self.pod.person.id

        async def go() -> None:
            self.use_local.setEnabled(False)
            try:
                there = await asyncio.to_thread(recheck, found)
            finally:
                self.use_local.setEnabled(True)
            if self.pod.person.id != who:
                return
            if there is None or model not in there.models:
                self._forget_found()
                self.status.emit(f"Not chosen: {found.label} at {found.base_url} no longer answers with {model}. "
                                 "Start it and look again, or choose a provider.")
                return
            providers = [p for p in self.pod.list_providers() if not p["builtin"]]
            name = next((p["name"] for p in providers if p["base_url"].rstrip("/") == found.base_url.rstrip("/")), None)
            try:
                if name is None:
                    taken = {p["name"] for p in self.pod.list_providers()}
                    name = next(n for n in (found.vendor, *(f"{found.vendor}-local{'' if i == 1 else f'-{i}'}"
                                                            for i in range(1, 100))) if n not in taken)
                    self.pod.add_provider(name, kind="openai-compatible", base_url=found.base_url, model=model)
                self.pod.set_role_model("ingest", f"{name}/{model}")
            except StoreError as exc:
                self.status.emit(f"Not chosen: {exc}")
                return
            self.status.emit(f"Wiki pages are now written by {model} on {found.label}.")
            self.refresh()
            self.ingested.emit()

        return self._run(go())

    def _on_choose(self) -> None:
        from app.dialogs import SettingsDialog

        dlg = self.__dict__.get("settings_dialog")
        if dlg is not None:  # one Settings window from here: the open one comes forward
            dlg.raise_()
            dlg.activateWindow()
            return
        dlg = SettingsDialog(self.pod, self)
        # with no provider of their own there is no model to choose yet: adding one comes first
        own = [p for p in self.pod.list_providers() if not p["builtin"]]
        dlg.tabs.setCurrentWidget(dlg.models if own else dlg.providers)
        dlg.providers.saved.connect(self._on_provider_saved)
        dlg.finished.connect(self._on_settings_closed)
        dlg.show()
        self.settings_dialog = dlg

    def _on_provider_saved(self, name: str) -> None:
        """A provider saved from this offer, while no ingest model is chosen, is chosen for wiki pages (as "Use … for
        wiki pages" does for a server found here), with the model its form named; the Providers tab says so, and where
        another is chosen. A model chosen before stays."""
        from runtime_host.store import StoreError

        dlg = self.__dict__.get("settings_dialog")
        prov = self.pod.provider(name)
        if dlg is None or prov is None or self.has_model():
            return
        model = prov["model"]
        try:
            self.pod.set_role_model("ingest", f"{name}/{model}" if model else name)
        except StoreError as exc:
            dlg.providers.message.setText(f"{dlg.providers.message.text()} Not chosen for wiki pages: {exc} "
                                          "Choose a model under Models.")
            return
        said = f"Wiki pages are now written by {model or 'its default model'} on {name}."
        dlg.providers.message.setText(f"{dlg.providers.message.text()} {said} The Models tab chooses another.")
        self.status.emit(said)
        self.refresh()

    def _on_settings_closed(self, _result: int) -> None:
        self.__dict__.pop("settings_dialog", None)
        self.refresh()
        self.ingested.emit()
