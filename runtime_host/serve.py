"""`python -m runtime_host serve`: a headless pod host with an authenticated HTTP contract.

Contract v1 (JSON; every answer carries "contract": 1): GET /v1/health (no token), GET /v1/agents,
POST /v1/chat {agent, message, conversation_id?, new?}, GET /v1/turns?conversation_id=, GET /v1/runs,
POST /v1/turns/{id}/cancel (stops a turn at once; answers {turn_id, status, text, error}).
The contract may only add fields; a breaking change gets a new route (/v2/...). Requests carry
`Authorization: Bearer <token>`; only the token's scrypt hash is stored (pod_meta "serve_token").
"""

from __future__ import annotations

import secrets
from typing import Any

CONTRACT = 1


def new_token(pod: Any) -> str:
    """Makes a new access token (shown once) and keeps only its hash."""
    from runtime_host.pod import hash_passphrase

    token = "hth_" + secrets.token_urlsafe(32)
    pod.store.set_meta("serve_token", hash_passphrase(token))
    return token


def token_ok(pod: Any, presented: str) -> bool:
    from runtime_host.pod import check_passphrase

    stored = pod.store.meta("serve_token")
    return bool(stored) and bool(presented) and check_passphrase(presented, stored)


def make_app(pod: Any) -> Any:
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    from runtime_host.store import StoreError

    checked: dict[str, bool] = {}

    def answer(data: dict[str, Any], status: int = 200) -> JSONResponse:
        return JSONResponse({"contract": CONTRACT, **data}, status_code=status)

    def authorised(request: Request) -> bool:
        header = request.headers.get("authorization", "")
        token = header[7:] if header.lower().startswith("bearer ") else ""
        if token in checked:  # scrypt is slow on purpose: remember recent answers for this process
            return checked[token]
        ok = token_ok(pod, token)
        if len(checked) < 64:
            checked[token] = ok
        return ok

    def guarded(handler: Any) -> Any:
        async def wrapper(request: Request) -> JSONResponse:
            if not authorised(request):
                return answer({"error": "missing or wrong token: create one with `python -m runtime_host serve "
                                        "--new-token` on the host and send it as 'Authorization: Bearer …'"}, 401)
            try:
                return await handler(request)
            except StoreError as exc:
                return answer({"error": str(exc)}, 404)
            except ValueError as exc:
                return answer({"error": str(exc)}, 400)
        return wrapper

    async def health(_request: Request) -> JSONResponse:
        return answer({"ok": True, "host": pod.owner})

    async def agents(_request: Request) -> JSONResponse:
        return answer({"agents": [{"name": a["name"], "provider": a["provider"], "model": a["model"],
                                   "state": a["worker"]["state"]} for a in pod.list_agents()]})

    async def chat(request: Request) -> JSONResponse:
        try:
            body = await request.json()
        except ValueError:
            raise ValueError("the body must be JSON: {\"agent\": …, \"message\": …}") from None
        if not isinstance(body, dict) or not body.get("agent") or not body.get("message"):
            raise ValueError("agent and message are required")
        r = await pod.chat(str(body["agent"]), str(body["message"]), conversation_id=body.get("conversation_id"),
                           new_conversation=bool(body.get("new")))
        return answer({"turn_id": r.turn_id, "conversation_id": r.conversation_id, "status": r.status,
                       "text": r.text, "error": r.error, "model": r.model})

    async def turns(request: Request) -> JSONResponse:
        return answer({"turns": pod.turns(request.query_params.get("conversation_id"))})

    async def runs(_request: Request) -> JSONResponse:
        return answer({"runs": pod.runs()})

    async def cancel(request: Request) -> JSONResponse:
        return answer(await pod.stop_turn(request.path_params["turn_id"], "a remote client"))

    return Starlette(routes=[
        Route("/v1/health", health),
        Route("/v1/agents", guarded(agents)),
        Route("/v1/chat", guarded(chat), methods=["POST"]),
        Route("/v1/turns", guarded(turns)),
        Route("/v1/runs", guarded(runs)),
        Route("/v1/turns/{turn_id}/cancel", guarded(cancel), methods=["POST"]),
    ])


async def serve(pod: Any, host: str, port: int) -> None:
    import uvicorn

    pod.start_background()
    await pod.recover()
    config = uvicorn.Config(make_app(pod), host=host, port=port, log_level="warning", lifespan="off")
    server = uvicorn.Server(config)
    print(f"Hearth pod host {pod.owner} serving contract v{CONTRACT} on http://{host}:{port}", flush=True)
    await server.serve()


class RemoteError(Exception):
    """The remote pod refused or failed a request; the message is its own explanation."""


class RemotePod:
    """The client side of the contract: reads only the fields it knows, so new fields never break it."""

    def __init__(self, base_url: str, token: str, *, timeout: float = 120.0):
        import httpx

        self.base = base_url.rstrip("/")
        self.http = httpx.AsyncClient(timeout=timeout, headers={"Authorization": f"Bearer {token}"})

    async def _get(self, path: str, **params: Any) -> dict[str, Any]:
        return self._check(await self.http.get(self.base + path, params=params or None))

    def _check(self, resp: Any) -> dict[str, Any]:
        try:
            data = resp.json()
        except ValueError:
            raise RemoteError(f"the pod answered HTTP {resp.status_code} without JSON") from None
        if resp.status_code >= 400:
            raise RemoteError(data.get("error") or f"HTTP {resp.status_code}")
        if data.get("contract") != CONTRACT:
            raise RemoteError(f"the pod speaks contract {data.get('contract')!r}, this client speaks {CONTRACT}")
        return data

    async def health(self) -> bool:
        return bool((await self._get("/v1/health")).get("ok"))

    async def agents(self) -> list[dict[str, Any]]:
        return [{"name": a["name"], "state": a.get("state")} for a in (await self._get("/v1/agents"))["agents"]]

    async def chat(self, agent: str, message: str, conversation_id: str | None = None) -> dict[str, Any]:
        body = {"agent": agent, "message": message, "conversation_id": conversation_id}
        data = self._check(await self.http.post(self.base + "/v1/chat", json=body))
        return {k: data.get(k) for k in ("turn_id", "conversation_id", "status", "text", "error", "model")}

    async def turns(self, conversation_id: str | None = None) -> list[dict[str, Any]]:
        params = {"conversation_id": conversation_id} if conversation_id else {}
        return (await self._get("/v1/turns", **params))["turns"]

    async def cancel(self, turn_id: str) -> dict[str, Any]:
        data = self._check(await self.http.post(f"{self.base}/v1/turns/{turn_id}/cancel"))
        return {k: data.get(k) for k in ("turn_id", "status", "text", "error")}

    async def close(self) -> None:
        await self.http.aclose()


