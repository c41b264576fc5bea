"""The desktop window for a pod on another machine: lists its agents and chats through the HTTP contract."""

from __future__ import annotations

from app.remote_window import RemoteWindow
from runtime_host.serve import RemotePod
from tests.helpers.fake_model import Text
from tests.helpers.serve import running_serve
from tests.integration.test_cli import cli, setup_agent


def test_the_window_works_against_a_remote_pod(qtbot, qloop, home, fake_model, script) -> None:
    setup_agent(home, fake_model.base_url)
    script([Text("answered by the remote pod")])
    token = cli(home, "serve", "--new-token").stdout.strip()
    with running_serve(home) as base:
        remote = RemotePod(base, token)
        w = RemoteWindow(remote, base)
        qtbot.addWidget(w)
        qloop.run(w.load())
        assert w.agents.count() == 1 and w.agents.item(0).text() == "helper"
        w.composer.setPlainText("hello from afar")
        w.send()
        qloop.wait_until(lambda: "answered by the remote pod" in w.chat.toPlainText(), what="the remote answer")
        qloop.run(remote.close())
        bad = RemoteWindow(RemotePod(base, "wrong-token"), "x")
        qtbot.addWidget(bad)
        qloop.run(bad.load())
        assert "Cannot reach the pod" in bad.status_line.text() and "token" in bad.status_line.text()
