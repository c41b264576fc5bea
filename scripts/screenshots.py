"""Renders each main view of Hearth with a seeded demo pod into docs/screenshots/*.png (offscreen).

The demo pod talks to the loopback fake model, so no key and no network are needed.
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ["HEARTH_LOOPBACK_ONLY"] = "1"
os.environ["HEARTH_HOME"] = tempfile.mkdtemp(prefix="hearth-shots-")
os.environ["XDG_CONFIG_HOME"] = tempfile.mkdtemp(prefix="hearth-shots-cfg-")

import qasync  # noqa: E402
from PySide6.QtWidgets import QApplication  # noqa: E402

from tests.helpers.fake_model import FakeModelServer, Text, ToolCalls  # noqa: E402

OUT = ROOT / "docs" / "screenshots"


def model(req):
    q = req.last_user.lower()
    if "weekend" in q and not req.tool_results:
        return ToolCalls([("current_time", {"timezone": "Europe/Lisbon"}), ("calculate", {"expression": "3 * 24"})])
    if "weekend" in q:
        return Text("You have **72 hours** for the Lisbon weekend. A plan:\n\n| Day | Plan |\n|---|---|\n"
                    "| Fri | Arrive, dinner in Alfama |\n| Sat | Belém, pastéis |\n| Sun | Sintra day trip |\n\n"
                    "```\ncheck-in: 15:00\n```")
    return Text("Noted — I'll remember that Clara's birthday is on **3 June** and that she loves orchids.")


async def seed(pod) -> None:
    from wiki_engine import Page

    pod.add_agent("Research", profile="research", provider="local")
    pod.add_agent("Inbox", profile="inbox", provider="local")
    await pod.chat("Assistant", "Clara's birthday is on 3 June and she loves orchids.")
    await pod.chat("Assistant", "Plan my weekend in Lisbon: how many hours do I have?")
    scope = f"private/{pod.person.id}"

    def wiki() -> None:
        sid = pod.memory.add_source("Clara's birthday is on 3 June; she loves orchids.", scope=scope)
        sid2 = pod.memory.add_source("The boiler service is due every October (Acme Heating).", scope="public")
        pod.memory.write_page(Page(title="Family", scope=scope, category="family",
                                   body="- Clara's birthday is on 3 June [1]\n- Clara loves orchids [1]\n\nSee also: [[Gifts]]",
                                   citations={1: sid}), author="agent:wiki-writer")
        pod.memory.write_page(Page(title="Home", scope="public", category="home",
                                   body="- The boiler is serviced every October by Acme Heating [1]", citations={1: sid2}),
                              author="agent:wiki-writer")

    await pod.in_memory_thread(wiki)


def main() -> int:
    OUT.mkdir(parents=True, exist_ok=True)
    fake = FakeModelServer(model).start()
    app = QApplication.instance() or QApplication(sys.argv[:1])
    app.setQuitOnLastWindowClosed(False)
    loop = qasync.QEventLoop(app)
    asyncio.set_event_loop(loop)

    from app.main_window import MainWindow
    from runtime_host.pod import Pod

    async def run() -> list[Path]:
        pod = Pod()
        pod.add_provider("local", kind="openai-compatible", base_url=fake.base_url, model="demo-model")
        pod.add_agent("Assistant", profile="assistant", provider="local")
        try:
            await seed(pod)
            w = MainWindow(pod)
            w.resize(1280, 800)
            w.show()
            await asyncio.sleep(0.5)
            shots = []
            w.agents.setCurrentRow(0)
            await asyncio.sleep(0.3)
            shots.append(OUT / "chat.png")
            w.grab().save(str(shots[-1]))
            w.show_wiki()
            await w.wiki.refresh()
            scope = f"private/{pod.person.id}"
            await w.wiki.open_page(scope, "family")
            await asyncio.sleep(0.3)
            shots.append(OUT / "wiki.png")
            w.grab().save(str(shots[-1]))
            from app.dialogs import SettingsDialog

            dlg = SettingsDialog(pod, w)
            dlg.resize(640, 520)
            dlg.show()
            await asyncio.sleep(0.2)
            shots.append(OUT / "settings.png")
            dlg.grab().save(str(shots[-1]))
            dlg.close()
            w.close()
            return shots
        finally:
            await pod.close()

    with loop:
        shots = loop.run_until_complete(run())
    fake.stop()
    for s in shots:
        print(s.relative_to(ROOT))
    return 0


if __name__ == "__main__":
    sys.exit(main())
