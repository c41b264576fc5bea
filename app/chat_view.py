"""The conversation view: rendered messages, each answer with its own tool-call tree, a streaming answer; and
the steps tree and runs list used beside it."""

from __future__ import annotations

import json
import time
from typing import Any

from PySide6.QtCore import Qt, QTimer, QUrl, Signal
from PySide6.QtGui import QDesktopServices, QGuiApplication, QTextCursor
from PySide6.QtWidgets import QTextBrowser, QTreeWidget, QTreeWidgetItem

from app.confirm import confirm
from app.markdown import STYLE, escape, plain_tooltip, render_with_code

ROLE_LABEL = {"user": "You", "assistant": "Agent", "error": "Hearth"}


STATUS_MARK = {"started": "…", "finished": "✓", "failed": "✗", "interrupted": "⚠", "stopped": "■"}


def short_arguments(kind: str, arguments: Any, limit: int = 60) -> str:
    """A step's arguments in one short line: `expression=3*3, digits=2` (a model call: its provider)."""
    if kind == "model":
        return f"via {arguments['provider']}" if isinstance(arguments, dict) and arguments.get("provider") else ""
    if isinstance(arguments, dict):
        text = ", ".join(f"{k}={v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)}" for k, v in arguments.items())
    else:
        text = "" if arguments is None else json.dumps(arguments, ensure_ascii=False)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit - 1] + "…"


def step_duration(node: dict[str, Any]) -> str:
    if node.get("finished_at") and node.get("started_at"):
        ms = (node["finished_at"] - node["started_at"]) * 1000
        return f"{ms:.0f} ms" if ms < 10_000 else f"{ms / 1000:.1f} s"
    return ""


def cut_off_marker(nodes: list[dict[str, Any]]) -> str | None:
    """"Cut off" when the answer's last model call stopped at the model's length limit."""
    models = [n for n in nodes if n["kind"] == "model"]
    res = models[-1].get("result") if models else None
    if isinstance(res, dict) and res.get("finish_reason") == "length":
        return "Cut off: the model reached its length limit. Ask it to continue, or regenerate."
    return None


def _count(nodes: list[dict[str, Any]]) -> int:
    return sum(1 + _count(n.get("children") or []) for n in nodes)


def _worth_showing(nodes: list[dict[str, Any]]) -> bool:
    """A turn's steps are shown inline once there is more than one plain model call."""
    return len(nodes) > 1 or any(n["kind"] != "model" or n["status"] != "finished" or n.get("children") for n in nodes)


class ChatView(QTextBrowser):
    """Messages as rendered markdown, each answer with its own steps (model and tool calls, sub-agents nested
    under the call that delegated them) as a collapsible tree, message actions, and code blocks with a copy link.

    Finished messages are inserted once; only the live answer (its text and steps) is re-rendered, at most
    every 40 ms. A long conversation opens with its latest messages; earlier pages load as the person
    scrolls to the top. The view follows new text unless the person scrolled up.

    Signals:
    action(str, str): a message action was chosen: (copy|regenerate|edit|branch, message id).
    copied(str): something was put on the clipboard (a short description of what).
    said(str): a sentence for the status bar (a link Hearth does not open).
    """

    action = Signal(str, str)
    copied = Signal(str)
    said = Signal(str)

    PAGE = 150  # messages rendered at once; earlier ones load page by page
    MAX_CHARS = 88  # readable line length: the text column stops growing past this many characters

    def __init__(self, parent: Any = None):
        super().__init__(parent)
        self.setOpenLinks(False)
        self.anchorClicked.connect(self._on_anchor)
        self.setAccessibleName("Conversation")
        self.document().setDefaultStyleSheet(STYLE.replace("<style>", "").replace("</style>", ""))
        self._all: list[dict[str, Any]] = []
        self._shown = 0
        self._head_end = 0  # the "earlier messages" line occupies the document up to here
        self._open: set[str] = set()  # steps whose details are open
        self._collapsed: set[str] = set()  # turns whose steps are folded
        self._expanded: set[str] = set()  # turns whose steps were unfolded by the person
        self._cache: dict[tuple[str, str, str], tuple[str, list[str]]] = {}
        self._live: dict[str, Any] | None = None
        self._live_nodes: dict[str, dict[str, Any]] = {}
        self._stream_pos: int | None = None
        self._dirty = False
        self._follow = True
        self.agent_name = "Agent"
        self._timer = QTimer(self)
        self._timer.setInterval(40)
        self._timer.timeout.connect(self._flush)
        self.verticalScrollBar().valueChanged.connect(self._on_scrolled)

    # -- entries
    @staticmethod
    def _entry(m: Any) -> dict[str, Any]:
        if isinstance(m, dict):
            return {"id": m.get("id"), "role": m["role"], "text": m.get("text", m.get("content", "")),
                    "turn_id": m.get("turn_id"), "steps": m.get("steps") or [], "marker": m.get("marker"),
                    "expanded": bool(m.get("expanded")), "origin": m.get("origin") or "chat",
                    "by_hearth": bool(m.get("by_hearth"))}
        role, text = m
        return {"id": None, "role": role, "text": text, "turn_id": None, "steps": [], "marker": None, "expanded": False,
                "origin": "chat", "by_hearth": False}

    def clear_messages(self) -> None:
        self.set_messages([])

    # -- html
    def _steps_html(self, key: str, nodes: list[dict[str, Any]], expanded_default: bool) -> str:
        if not nodes or not _worth_showing(nodes):
            return ""
        open_ = key in self._expanded or (expanded_default and key not in self._collapsed)
        total = _count(nodes)
        running = any(n["status"] == "started" for n in nodes)
        took = ""
        starts = [n["started_at"] for n in nodes if n.get("started_at")]
        ends = [n["finished_at"] for n in nodes if n.get("finished_at")]
        if starts and ends and not running:
            took = f" · {max(ends) - min(starts):.1f} s"
        head = (f'<p class="steps"><a href="hearth-steps:{key}">{"▾" if open_ else "▸"} '
                f'{total} step{"s" if total != 1 else ""}{" (working…)" if running else ""}{took}</a></p>')
        if not open_:
            return head
        lines: list[str] = []

        def walk(ns: list[dict[str, Any]], depth: int) -> None:
            for n in ns:
                sid = n["id"]
                label = "model" if n["kind"] == "model" else "tool" if n["kind"] == "tool" else n["kind"]
                args = escape(short_arguments(n["kind"], n.get("arguments")))
                mark = STATUS_MARK.get(n["status"], n["status"])
                dur = step_duration(n)
                indent = 14 + depth * 18
                lines.append(
                    f'<p class="steps" style="margin-left:{indent}px"><a href="hearth-step:{sid}">'
                    f'{"▾" if sid in self._open else "▸"}</a> {label} <b>{escape(n["name"])}</b> '
                    f'<span style="color:gray">{args}</span> {mark} {n["status"] if n["status"] != "finished" else ""}'
                    f' <span style="color:gray">{dur}</span></p>')
                if sid in self._open:
                    lines.append(f'<pre class="detail" style="margin-left:{indent + 14}px">{escape(self._detail(n))}</pre>')
                walk(n.get("children") or [], depth + 1)

        walk(nodes, 0)
        return head + "".join(lines)

    @staticmethod
    def _detail(n: dict[str, Any]) -> str:
        parts = []
        if n.get("arguments") not in (None, {}):
            parts.append("Arguments: " + json.dumps(n["arguments"], ensure_ascii=False, indent=1)[:4000])
        res = n.get("result")
        if isinstance(res, dict):
            if res.get("moved_to"):
                parts.append(f"Moved to {res['moved_to']}: {res.get('why') or res.get('error') or ''}")
            out = res.get("output") or res.get("error") or res.get("text") or ""
            if out:
                parts.append(("Error: " if res.get("error") and not res.get("output") else "Result: ") + str(out)[:4000])
        elif res is not None:
            parts.append("Result: " + str(res)[:4000])
        return "\n".join(parts) or "(no details yet)"

    def _html(self, e: dict[str, Any], key: str, *, live: bool = False) -> str:
        role = e["role"]
        hearths = role == "user" and bool(e.get("by_hearth"))  # a run's prompt: Hearth's words, not yours
        label = self.agent_name if role == "assistant" else "Hearth" if hearths else ROLE_LABEL.get(role, role)
        anchor = f'<a name="m-{e["id"]}"></a>' if e.get("id") else ""
        acts = []
        if not live and role in ("user", "assistant"):
            acts.append(f'<a href="hearth-act:copy:{key}">Copy</a>')
            if e.get("id"):
                if role == "assistant":
                    acts.append(f'<a href="hearth-act:regenerate:{e["id"]}">Regenerate</a>')
                elif not hearths:  # only your own message is edited; a run is run again with Regenerate
                    acts.append(f'<a href="hearth-act:edit:{e["id"]}">Edit</a>')
                acts.append(f'<a href="hearth-act:branch:{e["id"]}">Branch from here</a>')
        actions = f' &nbsp; <span class="actions">{" · ".join(acts)}</span>' if acts else ""
        steps = self._steps_html(e.get("turn_id") or key, e["steps"], live or e.get("expanded", False))
        if role == "error":
            body = f'<p class="error">{escape(e["text"])}</p>'
            e["codes"] = []
        else:
            body, e["codes"] = self._markdown(e, key)
        marker = f'<p class="marker">{escape(e["marker"])}</p>' if e.get("marker") else ""
        return f'<p class="role">{anchor}{escape(label)}{actions}</p>{steps}{body}{marker}'

    def _markdown(self, e: dict[str, Any], key: str) -> tuple[str, list[str]]:
        """A stored message's markdown is rendered once (toggling a tree or reopening re-renders from here)."""
        if not e.get("id"):
            return render_with_code(e["text"], f"hearth-copy:{key}:")
        cache_key = (e["id"], key, e["text"])
        hit = self._cache.get(cache_key)
        if hit is None:
            if len(self._cache) > 20_000:
                self._cache.clear()
            hit = self._cache[cache_key] = render_with_code(e["text"], f"hearth-copy:{key}:")
        return hit

    def _head_html(self) -> str:
        hidden = len(self._all) - self._shown
        if not hidden:
            return ""
        return (f'<p><a href="hearth-earlier:">Show {min(hidden, self.PAGE * 2)} earlier messages</a> '
                f"({hidden} not shown)</p>")

    # -- the document
    def _insert(self, html_text: str, at: int | None = None) -> None:
        cur = QTextCursor(self.document())
        if at is None:
            cur.movePosition(QTextCursor.MoveOperation.End)
        else:
            cur.setPosition(at)
            cur.movePosition(QTextCursor.MoveOperation.End, QTextCursor.MoveMode.KeepAnchor)
            cur.removeSelectedText()
        cur.insertHtml(html_text)
        cur.insertBlock()

    def _at_bottom(self) -> bool:
        bar = self.verticalScrollBar()
        return bar.value() >= bar.maximum() - 4

    def _on_scrolled(self, value: int) -> None:
        bar = self.verticalScrollBar()
        self._follow = value >= bar.maximum() - 4
        if value == 0 and bar.maximum() > 0 and self._shown < len(self._all):
            QTimer.singleShot(0, self.show_earlier)  # reached the top: load the page before it

    def _scroll_if(self, was_bottom: bool) -> None:
        if was_bottom:
            self.verticalScrollBar().setValue(self.verticalScrollBar().maximum())

    def _render_document(self, keep_scroll: bool = False) -> None:
        bar = self.verticalScrollBar()
        value = bar.value()
        start = len(self._all) - self._shown
        head = self._head_html()
        body = "".join(self._html(e, str(start + i)) for i, e in enumerate(self._all[start:]))
        self.setHtml(head)
        self._head_end = self.document().characterCount() - 1 if head else 0
        if body:
            self._insert(body)
        self._apply_width()
        self._stream_pos = None
        if self._live is not None:
            self._stream_pos = self.document().characterCount() - 1
            self._insert(self._html(self._live, "live", live=True))
        if keep_scroll:
            bar.setValue(value)
        else:
            bar.setValue(bar.maximum())

    def set_messages(self, messages: list[Any]) -> None:
        """Loads a conversation: the latest messages at once, earlier ones page by page."""
        self._timer.stop()
        self._live = None
        self._live_nodes = {}
        self._dirty = False
        self._all = [self._entry(m) for m in messages]
        self._shown = min(len(self._all), self.PAGE)
        self._follow = True
        self._render_document()

    def append_message(self, role: str, text: str, *, message_id: str | None = None, marker: str | None = None) -> None:
        was_bottom = self._at_bottom()
        e = self._entry({"id": message_id, "role": role, "text": text, "marker": marker})
        self._all.append(e)
        self._shown += 1
        key = str(len(self._all) - 1)
        if self._live is not None and self._stream_pos is not None:  # keep the live answer last
            self._insert(self._html(e, key), at=self._stream_pos)
            self._stream_pos = self.document().characterCount() - 1
            self._insert(self._html(self._live, "live", live=True))
        else:
            self._insert(self._html(e, key))
        self._scroll_if(was_bottom)

    def show_earlier(self) -> None:
        """Adds the page before the first shown message at the top, keeping the view where it was."""
        if self._shown >= len(self._all):
            return
        n = min(len(self._all) - self._shown, self.PAGE * 2)  # larger fragments insert slower than linearly
        end = len(self._all) - self._shown
        self._shown += n
        bar = self.verticalScrollBar()
        old_max, old_val = bar.maximum(), bar.value()
        cur = QTextCursor(self.document())
        cur.beginEditBlock()
        cur.setPosition(0)
        cur.setPosition(self._head_end, QTextCursor.MoveMode.KeepAnchor)
        cur.removeSelectedText()
        head = self._head_html()
        chunk = head + "".join(self._html(e, str(end - n + i)) for i, e in enumerate(self._all[end - n:end]))
        cur.setPosition(0)
        cur.insertBlock()
        cur.setPosition(0)
        cur.insertHtml(chunk)
        added = cur.position() + 1
        cur.endEditBlock()
        if self._stream_pos is not None:
            self._stream_pos += added - self._head_end
        if head:
            self._head_end = self.document().find("not shown)").position() + 1
        else:
            self._head_end = 0
        bar.setValue(old_val + (bar.maximum() - old_max))

    def show_all(self) -> None:
        while self._shown < len(self._all):
            self.show_earlier()

    def scroll_to_message(self, message_id: str) -> bool:
        """Shows the message (loading earlier pages if needed) and scrolls to it; False if it is not here."""
        idx = next((i for i, e in enumerate(self._all) if e.get("id") == message_id), None)
        if idx is None:
            return False
        while idx < len(self._all) - self._shown:
            self.show_earlier()
        self._follow = False
        self.scrollToAnchor(f"m-{message_id}")
        return True

    def message_text(self, message_id: str) -> str | None:
        return next((e["text"] for e in self._all if e.get("id") == message_id), None)

    # -- width
    def max_content_width(self) -> int:
        return self.fontMetrics().horizontalAdvance("n" * self.MAX_CHARS) + 40

    def _apply_width(self) -> None:
        side = max(12, (self.viewport().width() - self.max_content_width()) // 2)
        root = self.document().rootFrame()
        fmt = root.frameFormat()
        if int(fmt.leftMargin()) != side:
            fmt.setLeftMargin(side)
            fmt.setRightMargin(side)
            root.setFrameFormat(fmt)

    def resizeEvent(self, event: Any) -> None:  # noqa: N802
        super().resizeEvent(event)
        self._apply_width()

    # -- links
    def _on_anchor(self, url: Any) -> None:
        href = url.toString()
        if href.startswith("hearth-earlier:"):
            self.show_earlier()
        elif href.startswith("hearth-steps:"):
            key = href.split(":", 1)[1]
            e = self._find_turn(key)
            open_now = key in self._expanded or ((e is self._live or bool(e and e.get("expanded")))
                                                 and key not in self._collapsed)
            (self._collapsed.add if open_now else self._collapsed.discard)(key)
            (self._expanded.discard if open_now else self._expanded.add)(key)
            self._refresh(e)
        elif href.startswith("hearth-step:"):
            sid = href.split(":", 1)[1]
            (self._open.discard if sid in self._open else self._open.add)(sid)
            self._refresh(self._live if sid in self._live_nodes else None)
        elif href.startswith("hearth-copy:"):
            _, key, n = href.split(":")
            e = self._live if key == "live" else self._all[int(key)]
            if e is not None and int(n) < len(e.get("codes") or []):
                QGuiApplication.clipboard().setText(e["codes"][int(n)])
                self.copied.emit("the code")
        elif href.startswith("hearth-act:"):
            _, kind, ref = href.split(":", 2)
            if kind == "copy":
                QGuiApplication.clipboard().setText(self._all[int(ref)]["text"])
                self.copied.emit("the message")
            else:
                self.action.emit(kind, ref)
        else:  # a link the message holds: a model's words (perhaps after reading a stranger's mail)
            self._open_web_link(url)

    def _open_web_link(self, url: Any) -> None:
        """Opens a web or mail address in the person's browser or mail program once they said yes to the address
        itself (it may carry what the model read in its query); any other kind of address (a file, a share, another
        program's) is never opened from a conversation."""
        address = url.toString(QUrl.ComponentFormattingOption.FullyEncoded)
        if url.scheme().lower() not in ("http", "https", "mailto"):
            self.said.emit(f"Hearth does not open this kind of link from a conversation: {address[:300]} "
                           "(copy it from the message to open it yourself).")
            return
        if confirm(self, "Open link", "Open this address outside Hearth?", "Open",
                   detail=f"{address[:2000]}\n\nIt was written in the conversation: check it is where you meant "
                          "to go. Anything in the address is sent to that site."):
            QDesktopServices.openUrl(url)

    def _find_turn(self, key: str) -> dict[str, Any] | None:
        if self._live is not None and (self._live.get("turn_id") or "live") == key:
            return self._live
        return next((e for e in self._all if (e.get("turn_id") or "") == key), None)

    def _refresh(self, e: dict[str, Any] | None) -> None:
        if e is not None and e is self._live:
            self._dirty = True
            self._flush()
        else:
            self._render_document(keep_scroll=True)

    # -- the live answer
    def stream_begin(self, turn_id: str | None = None) -> None:
        if self._live is not None:
            self.stream_end()
        self._live = {"id": None, "role": "assistant", "text": "", "turn_id": turn_id, "steps": [], "marker": None}
        self._live_nodes = {}
        self._stream_pos = self.document().characterCount() - 1
        self._dirty = True
        self._timer.start()

    def restore_live(self, turn_id: str | None, text: str, nodes: list[dict[str, Any]]) -> None:
        """Shows an answer still being written (after switching away and back), with what it wrote so far."""
        self.stream_begin(turn_id)
        assert self._live is not None
        self._live["text"] = text
        self._live["steps"] = nodes
        stack = list(nodes)
        while stack:
            n = stack.pop()
            self._live_nodes[n["id"]] = n
            stack.extend(n.get("children") or [])
        self._flush()

    def stream_append(self, text: str) -> None:
        if self._live is None:
            self.stream_begin()
        assert self._live is not None
        self._live["text"] += text
        self._dirty = True

    def step_started(self, step_id: str, parent_id: str | None, kind: str, name: str, arguments: Any,
                     started_at: float | None = None) -> None:
        if self._live is None:
            self.stream_begin()
        assert self._live is not None
        node = {"id": step_id, "kind": kind, "name": name, "arguments": arguments, "status": "started",
                "result": None, "started_at": started_at or time.time(), "finished_at": None, "children": []}
        parent = self._live_nodes.get(parent_id) if parent_id else None
        (parent["children"] if parent else self._live["steps"]).append(node)
        self._live_nodes[step_id] = node
        self._dirty = True

    def step_finished(self, step_id: str, status: str, result: Any, finished_at: float | None = None) -> None:
        node = self._live_nodes.get(step_id)
        if node is not None:
            node.update(status=status, result=result, finished_at=finished_at or time.time())
            self._dirty = True

    def _flush(self) -> None:
        if not self._dirty or self._stream_pos is None or self._live is None:
            return
        self._dirty = False
        started = time.perf_counter()
        was_bottom = self._follow and self._at_bottom()
        self._insert(self._html(self._live, "live", live=True), at=self._stream_pos)
        self._scroll_if(was_bottom)
        # A long answer costs more to draw: draw it less often, so drawing never takes over the loop.
        cost_ms = (time.perf_counter() - started) * 1000
        self._timer.setInterval(int(min(250, max(40, cost_ms * 3))))

    def stream_end(self, final_text: str | None = None, *, message_id: str | None = None,
                   marker: str | None = None) -> None:
        """The live answer becomes a message (its steps stay with it, folded)."""
        self._timer.stop()
        live, pos = self._live, self._stream_pos
        self._live, self._stream_pos, self._live_nodes = None, None, {}
        if live is None:
            return
        if final_text is not None:
            live["text"] = final_text
        live["id"] = message_id
        live["marker"] = marker
        live["expanded"] = True
        if not live["text"] and not live["steps"] and not marker:
            if pos is not None:
                self._insert("", at=pos)
            return
        was_bottom = self._follow and self._at_bottom()
        self._all.append(live)
        self._shown += 1
        if pos is not None:
            self._insert(self._html(live, str(len(self._all) - 1)), at=pos)
        self._scroll_if(was_bottom)

    def stream_discard(self) -> None:
        """Drops the live answer's text (the turn failed; the error replaces it); its steps stay."""
        if self._live is not None:
            self._live["text"] = ""
        self.stream_end()

    def assign_ids(self, messages: list[dict[str, Any]]) -> None:
        """Gives the person's just-sent messages their stored ids (so Edit and Branch work on them at once)."""
        for m in messages:
            if m["role"] != "user" or any(e.get("id") == m["id"] for e in self._all):
                continue
            e = next((e for e in reversed(self._all) if e["role"] == "user" and not e.get("id")
                      and e["text"].strip() == m["content"].strip()), None)
            if e is not None:
                e["id"], e["turn_id"] = m["id"], m["turn_id"]

    def live_steps(self) -> list[dict[str, Any]]:
        return list(self._live["steps"]) if self._live is not None else []

    @property
    def streaming_text(self) -> str:
        return self._live["text"] if self._live is not None else ""

    @property
    def live(self) -> bool:
        return self._live is not None


class StepsTree(QTreeWidget):
    """The turn's steps (model calls, tool calls) as a tree; sub-agent calls nest under their parent."""

    STATUS_ICON = {"started": "⏳", "finished": "✓", "failed": "✗", "interrupted": "⚠", "stopped": "■"}

    def __init__(self, parent: Any = None):
        super().__init__(parent)
        self.setColumnCount(4)
        self.setHeaderLabels(["Step", "Status", "Duration", "Details"])
        self.setAccessibleName("Tool calls")
        self.setUniformRowHeights(True)
        self.setColumnWidth(0, 240)
        self.setColumnWidth(1, 60)
        self.setColumnWidth(2, 80)
        self._items: dict[str, QTreeWidgetItem] = {}
        self._started: dict[str, float] = {}

    def clear_steps(self) -> None:
        self.clear()
        self._items.clear()
        self._started.clear()

    def add_step(self, step_id: str, parent_id: str | None, kind: str, name: str, arguments: Any,
                 started_at: float | None = None) -> QTreeWidgetItem:
        parent = self._items.get(parent_id) if parent_id else None
        label = f"{'model' if kind == 'model' else 'tool'}: {name}"
        if kind == "model":  # which provider this model call went to
            details = f"via {arguments['provider']}" if isinstance(arguments, dict) and arguments.get("provider") else ""
        else:
            details = json.dumps(arguments, ensure_ascii=False)[:300]
        item = QTreeWidgetItem([label, self.STATUS_ICON["started"], "", details])
        item.setData(0, Qt.ItemDataRole.UserRole, step_id)
        if parent is not None:
            parent.addChild(item)
            parent.setExpanded(True)
        else:
            self.addTopLevelItem(item)
        self._items[step_id] = item
        self._started[step_id] = started_at or time.time()
        return item

    def finish_step(self, step_id: str, status: str, result: Any, finished_at: float | None = None) -> None:
        item = self._items.get(step_id)
        if item is None:
            return
        item.setText(1, self.STATUS_ICON.get(status, status))
        item.setToolTip(1, status)
        took = (finished_at or time.time()) - self._started.get(step_id, time.time())
        item.setText(2, f"{took * 1000:.0f} ms")
        if isinstance(result, dict):
            out = result.get("output") or result.get("error") or result.get("text") or ""
            if result.get("moved_to"):  # a fallback: say where the turn went and why
                out = f"moved to {result['moved_to']} ({result.get('why') or out})"
            if out:
                item.setText(3, (item.text(3) + " → " if item.text(3) else "") + str(out)[:300])

    def load_tree(self, nodes: list[dict[str, Any]], parent_id: str | None = None) -> None:
        for n in nodes:
            self.add_step(n["id"], parent_id, n["kind"], n["name"], n.get("arguments"), n.get("started_at"))
            if n["status"] != "started":
                self.finish_step(n["id"], n["status"], n.get("result"), n.get("finished_at"))
            self.load_tree(n.get("children") or [], n["id"])

    def step_count(self) -> int:
        return len(self._items)


RUN_CONVERSATION = Qt.ItemDataRole.UserRole + 1  # a run item's (agent name, conversation id)


class RunsList(QTreeWidget):
    """Background, scheduled and mail-triggered runs with their state (newest first)."""

    def __init__(self, parent: Any = None):
        super().__init__(parent)
        self.setColumnCount(5)
        self.setHeaderLabels(["Agent", "Kind", "State", "Prompt", "Result"])
        self.setAccessibleName("Runs")
        self.setRootIsDecorated(False)
        self._ids: list[str] = []

    def load(self, runs: list[dict[str, Any]]) -> None:
        self.clear()
        self._ids = []
        for r in reversed(runs):
            state = r["status"] if r["status"] not in ("pending", "running") or r["live"] else f"{r['status']} (no owner)"
            result = r["result"] or r["error"] or ""
            item = QTreeWidgetItem([r["agent"], r["origin"], state, r["prompt"][:80], result[:120]])
            item.setToolTip(4, plain_tooltip(result[:2000]))
            item.setData(0, Qt.ItemDataRole.UserRole, r["id"])
            item.setData(0, RUN_CONVERSATION, (r["agent"], r["conversation_id"]))
            self.addTopLevelItem(item)
            self._ids.append(r["id"])

    def ids(self) -> list[str]:
        return list(self._ids)
