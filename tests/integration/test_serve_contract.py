"""The pod host's HTTP contract, tested on both sides: the server answers every v1 route with the fields
the contract promises (and refuses without the token); the client reads only what it knows, so a server
that adds fields never breaks it. Then a real `serve` process on loopback answers a real client."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import time

import httpx
import pytest

from runtime_host.serve import CONTRACT, RemoteError, RemotePod, make_app, new_token
from tests.helpers.fake_model import Text

# What v1 promises, per route: these keys are always there (more may be added, never removed).
V1 = {
    "/v1/health": {"contract", "ok", "host"},
    "/v1/agents": {"contract", "agents"},
    "/v1/turns": {"contract", "turns"},
    "/v1/runs": {"contract", "runs"},
    "/v1/chat": {"contract", "turn_id", "conversation_id", "status", "text", "error", "model"},
}


async def test_server_side_every_route_keeps_its_promised_fields(pod, script) -> None:
    script([Text("hello over http")])
    token = new_token(pod)
    transport = httpx.ASGITransport(app=make_app(pod))
    async with httpx.AsyncClient(transport=transport, base_url="http://pod") as c:
        assert (await c.get("/v1/agents")).status_code == 401
        assert (await c.get("/v1/agents", headers={"Authorization": "Bearer wrong"})).status_code == 401
        auth = {"Authorization": f"Bearer {token}"}
        chat = await c.post("/v1/chat", json={"agent": "helper", "message": "hi"}, headers=auth)
        assert chat.status_code == 200 and V1["/v1/chat"] <= set(chat.json())
        assert chat.json()["text"] == "hello over http" and chat.json()["contract"] == CONTRACT
        for path in ("/v1/health", "/v1/agents", "/v1/turns", "/v1/runs"):
            r = await c.get(path, headers=auth)
            assert r.status_code == 200 and V1[path] <= set(r.json()), path
        agent = (await c.get("/v1/agents", headers=auth)).json()["agents"][0]
        assert {"name", "state"} <= set(agent)
        bad = await c.post("/v1/chat", json={"agent": "nobody", "message": "x"}, headers=auth)
        assert bad.status_code == 404 and "No agent named 'nobody'" in bad.json()["error"]


async def test_conversations_over_the_contract_list_read_rename_export_search_and_delete(pod, script) -> None:
    script([Text("the kettle is in the shed")])
    token = new_token(pod)
    auth = {"Authorization": f"Bearer {token}"}
    transport = httpx.ASGITransport(app=make_app(pod))
    async with httpx.AsyncClient(transport=transport, base_url="http://pod", headers=auth) as c:
        cid = (await c.post("/v1/chat", json={"agent": "helper", "message": "where is the kettle?"})).json()["conversation_id"]
        listed = (await c.get("/v1/conversations", params={"agent": "helper"})).json()["conversations"]
        assert [(x["id"], x["title"], x["origin"]) for x in listed] == [(cid, "where is the kettle?", "chat")]
        one = (await c.get(f"/v1/conversations/{cid}")).json()["conversation"]
        assert [m["content"] for m in one["messages"]] == ["where is the kettle?", "the kettle is in the shed"]
        assert one["turns"][0]["steps"][0]["kind"] == "model"
        assert (await c.patch(f"/v1/conversations/{cid}", json={"title": "Kettle"})).json()["title"] == "Kettle"
        md = (await c.get(f"/v1/conversations/{cid}/export", params={"format": "markdown"})).json()["text"]
        assert md.startswith("# Kettle") and "in the shed" in md
        hits = (await c.get("/v1/search", params={"q": "KETTLE shed"})).json()["results"]
        assert [(h["conversation_id"], h["role"]) for h in hits] == [(cid, "assistant")]
        assert (await c.delete(f"/v1/conversations/{cid}")).status_code == 200
        gone = await c.get(f"/v1/conversations/{cid}")
        assert gone.status_code == 404 and "does not exist" in gone.json()["error"]
        assert (await c.get("/v1/conversations", params={"agent": "helper"})).json()["conversations"] == []


async def test_the_remote_client_offers_the_pods_conversation_calls_under_the_same_names(pod, script) -> None:
    """What the local window calls on the Pod, the remote window can call on RemotePod (awaited) and gets
    the same answer, wherever the contract has the route."""
    script([Text("the kettle is in the shed")])
    client = RemotePod("http://pod", new_token(pod))
    client.http = httpx.AsyncClient(transport=httpx.ASGITransport(app=make_app(pod)), headers=client.http.headers)
    try:
        cid = (await client.chat("helper", "where is the kettle?"))["conversation_id"]
        assert await client.list_conversations("helper") == pod.list_conversations("helper")
        assert await client.conversation(cid) == pod.conversation(cid)
        assert await client.search_conversations("kettle") == pod.search_conversations("kettle")
        assert (await client.rename_conversation(cid, "Kettle"))["title"] == pod.conversation(cid)["title"] == "Kettle"
        assert await client.export_conversation(cid) == pod.export_conversation(cid)
        assert [r["id"] for r in await client.runs()] == [r["id"] for r in pod.runs()]
        await client.delete_conversation(cid)
        assert pod.list_conversations("helper") == []
        with pytest.raises(RemoteError, match="does not exist"):
            await client.conversation(cid)
    finally:
        await client.close()
    shared = {"runs", "list_conversations", "conversation", "rename_conversation", "delete_conversation",
              "export_conversation", "search_conversations", "turns", "chat"}
    assert all(callable(getattr(pod, n, None)) and callable(getattr(RemotePod, n, None)) for n in shared)


async def test_client_side_tolerates_added_fields_and_refuses_another_contract() -> None:
    from starlette.applications import Starlette
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    async def agents(_r):
        return JSONResponse({"contract": 1, "agents": [{"name": "a", "state": "ready", "new_field": 1}], "extra": True})

    async def old(_r):
        return JSONResponse({"contract": 2, "agents": []})

    for handler, ok in ((agents, True), (old, False)):
        client = RemotePod("http://pod", "t")
        client.http = httpx.AsyncClient(transport=httpx.ASGITransport(app=Starlette(routes=[Route("/v1/agents", handler)])))
        if ok:
            assert await client.agents() == [{"name": "a", "state": "ready"}]
        else:
            with pytest.raises(RemoteError, match="contract 2"):
                await client.agents()
        await client.close()


def test_a_real_serve_process_answers_a_remote_client(home, fake_model, script) -> None:
    from tests.integration.test_cli import cli, setup_agent

    setup_agent(home, fake_model.base_url)
    script([Text("served from another process")])
    token = cli(home, "serve", "--new-token").stdout.strip()
    assert token.startswith("hth_")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "HEARTH_HOME": str(home)}
    proc = subprocess.Popen([sys.executable, "-m", "runtime_host", "serve", "--port", str(port)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/v1/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.1)

        async def talk():
            client = RemotePod(f"http://127.0.0.1:{port}", token)
            try:
                assert await client.health()
                assert [a["name"] for a in await client.agents()] == ["helper"]
                r = await client.chat("helper", "hi")
                assert r["status"] == "done" and r["text"] == "served from another process"
                assert [t["id"] for t in await client.turns(r["conversation_id"])] == [r["turn_id"]]
            finally:
                await client.close()

        asyncio.run(talk())
    finally:
        proc.terminate()
        proc.wait(10)

