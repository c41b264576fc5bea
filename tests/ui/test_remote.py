"""The desktop window for a pod on another machine: lists its agents and chats through the HTTP contract."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time

import httpx

from app.remote_window import RemoteWindow
from runtime_host.serve import RemotePod
from tests.helpers.fake_model import Text
from tests.integration.test_cli import cli, setup_agent


def test_the_window_works_against_a_remote_pod(qtbot, qloop, home, fake_model, script) -> None:
    setup_agent(home, fake_model.base_url)
    script([Text("answered by the remote pod")])
    token = cli(home, "serve", "--new-token").stdout.strip()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([sys.executable, "-m", "runtime_host", "serve", "--port", str(port)],
                            env={**os.environ, "HEARTH_HOME": str(home)}, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/v1/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.1)
        remote = RemotePod(f"http://127.0.0.1:{port}", token)
        w = RemoteWindow(remote, f"http://127.0.0.1:{port}")
        qtbot.addWidget(w)
        qloop.run(w.load())
        assert w.agents.count() == 1 and w.agents.item(0).text() == "helper"
        w.composer.setPlainText("hello from afar")
        w.send()
        qloop.wait_until(lambda: "answered by the remote pod" in w.chat.toPlainText(), what="the remote answer")
        qloop.run(remote.close())
        bad = RemoteWindow(RemotePod(f"http://127.0.0.1:{port}", "wrong-token"), "x")
        qtbot.addWidget(bad)
        qloop.run(bad.load())
        assert "Cannot reach the pod" in bad.status_line.text() and "token" in bad.status_line.text()
    finally:
        proc.terminate()
        proc.wait(10)
