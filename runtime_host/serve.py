"""`python -m runtime_host serve`: a headless pod host with an authenticated HTTP contract.

Contract v1 (JSON; every answer carries "contract": 1): GET /v1/health (no token), GET /v1/agents,
POST /v1/chat {agent, message, conversation_id?, new?}, GET /v1/turns?conversation_id=, GET /v1/runs,
POST /v1/turns/{id}/cancel (stops a turn at once; answers {turn_id, status, text, error}).
Conversations: GET /v1/conversations?agent= (newest first, with origin and schedule), GET /v1/conversations/{id}
(messages and turns with their steps), PATCH /v1/conversations/{id} {title}, DELETE /v1/conversations/{id},
GET /v1/conversations/{id}/export?format=markdown|json ({text}), GET /v1/search?q= (messages in every
conversation, each with conversation_id and message_id).
A message larger than one turn can carry is refused with 413 and the reason in "error".
The contract may only add fields; a breaking change gets a new route (/v2/...). Requests carry
`Authorization: Bearer <token>`. A token belongs to the person who made it (`--person NAME serve --new-token`)
and every request acts as that person only: their agents, their conversations, their turns. Only the token's
scrypt hash is stored (pod_meta "serve_token/<person id>"; a token from before tokens had a person is the
first person's).

The stored hash is read on every request, so `serve --new-token` revokes the old token in a running host
at once. The slow scrypt check runs off the event loop (health stays fast), and a client with too many
failed attempts in a window gets 429 without any check until the window passes.
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import hashlib
import logging
import secrets
import time
from typing import Any

CONTRACT = 1
MAX_FAILURES = 10        # failed token checks per client ...
FAILURE_WINDOW_S = 60.0  # ... within this many seconds; then 429 until the oldest failure ages out

log = logging.getLogger("hearth.serve")


def new_token(me: Any) -> str:
    """Makes a new access token for one person (shown once; it replaces their old one) and keeps only its hash."""
    from runtime_host.pod import hash_passphrase

    token = f"hth_{me.person_id}_{secrets.token_urlsafe(32)}"
    me.store.set_meta(f"serve_token/{me.person_id}", hash_passphrase(token))
    return token


def token_person(pod: Any, token: str) -> tuple[str, str]:
    """(person id, pod_meta key of their token's hash) for a presented token."""
    parts = token.split("_", 2)
    if len(parts) == 3 and parts[0] == "hth" and len(parts[1]) == 32 and pod.store.get_person_by_id(parts[1]):
        return parts[1], f"serve_token/{parts[1]}"
    return pod.store.default_person().id, "serve_token"  # a token made before tokens had a person


class TokenGate:
    """Decides whether a request's bearer token is the current one.

    An accepted token is remembered only together with the stored hash it matched, so a new token (a new
    hash in the store) revokes every remembered acceptance. scrypt runs on a small thread pool, never on the
    event loop; each client may fail `max_failures` times per `window_s`, then gets 429 with no check."""

    def __init__(self, pod: Any, *, max_failures: int = MAX_FAILURES, window_s: float = FAILURE_WINDOW_S):
        self.pod = pod
        self.max_failures = max_failures
        self.window_s = window_s
        self._accepted: dict[tuple[str, str], float] = {}  # (sha256 of token, stored hash) -> when
        self._failures: dict[str, collections.deque[float]] = {}
        self._checking: collections.Counter[str] = collections.Counter()  # checks in flight, per client
        self._pool = concurrent.futures.ThreadPoolExecutor(max_workers=2, thread_name_prefix="serve-token")

    def retry_after(self, client: str) -> float:
        """Seconds until `client` may try again (0 when it may try now)."""
        fails = self._failures.get(client)
        if not fails:
            return 0.0
        now_m = time.monotonic()
        while fails and now_m - fails[0] > self.window_s:
            fails.popleft()
        if not fails:
            self._failures.pop(client, None)
            return 0.0
        return self.window_s - (now_m - fails[0]) if len(fails) >= self.max_failures else 0.0

    def _limited(self, client: str) -> bool:
        """Failed checks (and checks still running) from `client` have reached the limit."""
        return self.retry_after(client) > 0 or \
            len(self._failures.get(client, ())) + self._checking[client] >= self.max_failures

    async def check(self, client: str, token: str) -> str:
        """"ok", "wrong" or "limited" (too many failures from this client: nothing was checked)."""
        loop = asyncio.get_running_loop()
        digest = hashlib.sha256(token.encode()).hexdigest()
        if self._limited(client) and not any(d == digest for d, _ in self._accepted):
            return "limited"  # a limited client costs nothing more (no database read, no scrypt)
        _person, key = await asyncio.to_thread(token_person, self.pod, token)
        stored = await asyncio.to_thread(self.pod.store.meta, key) or ""
        if token and stored and (digest, stored) in self._accepted:
            return "ok"
        if self._limited(client):
            return "limited"
        from runtime_host.pod import check_passphrase

        self._checking[client] += 1
        try:
            ok = bool(token) and bool(stored) and await loop.run_in_executor(self._pool, check_passphrase, token, stored)
        finally:
            self._checking[client] -= 1
            if not self._checking[client]:
                del self._checking[client]
        if ok:
            if len(self._accepted) >= 64:
                self._accepted.clear()
            self._accepted[(digest, stored)] = time.monotonic()
            return "ok"
        fails = self._failures.setdefault(client, collections.deque())
        fails.append(time.monotonic())
        if len(fails) == self.max_failures:
            log.warning("serve: %d failed token checks from %s within %g s; refusing it for a while",
                        len(fails), client, self.window_s)
        if len(self._failures) > 10000:  # a flood from many addresses: keep the table bounded
            self._failures = {c: f for c, f in self._failures.items() if len(f) >= self.max_failures}
        return "wrong"

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)


def make_app(pod: Any, gate: TokenGate | None = None) -> Any:
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    from runtime_host.pod import MessageTooLarge
    from runtime_host.sizes import MAX_MESSAGE_BYTES, human, json_size, message_problem
    from runtime_host.store import StoreError

    gate = gate or TokenGate(pod)

    def answer(data: dict[str, Any], status: int = 200, headers: dict[str, str] | None = None) -> JSONResponse:
        return JSONResponse({"contract": CONTRACT, **data}, status_code=status, headers=headers)

    def guarded(handler: Any) -> Any:
        async def wrapper(request: Request) -> JSONResponse:
            header = request.headers.get("authorization", "")
            token = header[7:] if header.lower().startswith("bearer ") else ""
            client = request.client.host if request.client else "unknown"
            verdict = await gate.check(client, token)
            if verdict == "limited":
                wait = max(1, round(gate.retry_after(client)))
                return answer({"error": f"too many wrong tokens from {client}: try again in {wait} s with the "
                                        "token `python -m runtime_host serve --new-token` printed"}, 429,
                              headers={"Retry-After": str(wait)})
            if verdict != "ok":
                return answer({"error": "missing or wrong token: create one with `python -m runtime_host serve "
                                        "--new-token` on the host and send it as 'Authorization: Bearer …'"}, 401)
            me = pod.for_person(token_person(pod, token)[0])
            try:
                return await handler(request, me)
            except MessageTooLarge as exc:
                return answer({"error": str(exc)}, 413)
            except StoreError as exc:
                return answer({"error": str(exc)}, 404)
            except ValueError as exc:
                return answer({"error": str(exc)}, 400)
        return wrapper

    async def health(_request: Request) -> JSONResponse:
        return answer({"ok": True, "host": pod.owner})

    async def agents(_request: Request, me: Any) -> JSONResponse:
        return answer({"agents": [{"name": a["name"], "provider": a["provider"], "model": a["model"],
                                   "state": a["worker"]["state"]} for a in me.list_agents()]})

    async def chat(request: Request, me: Any) -> JSONResponse:
        # A body far past the message limit is refused before it is read (413, with the reason).
        length = request.headers.get("content-length") or ""
        if length.isdigit() and int(length) > 2 * MAX_MESSAGE_BYTES + 65536:
            return answer({"error": f"The request is {human(int(length))}; one message may be at most "
                                    f"{human(MAX_MESSAGE_BYTES)}. Nothing was sent: shorten it or split it."}, 413)
        try:
            body = await request.json()
        except ValueError:
            raise ValueError("the body must be JSON: {\"agent\": …, \"message\": …}") from None
        if not isinstance(body, dict) or not body.get("agent") or not body.get("message"):
            raise ValueError("agent and message are required")
        problem = message_problem(str(body["message"]))
        if problem is not None:  # 413 when too large; 400 for a character that cannot be stored
            raise (MessageTooLarge if json_size(str(body["message"])) > MAX_MESSAGE_BYTES else ValueError)(problem)
        r = await me.chat(str(body["agent"]), str(body["message"]), conversation_id=body.get("conversation_id"),
                           new_conversation=bool(body.get("new")))
        return answer({"turn_id": r.turn_id, "conversation_id": r.conversation_id, "status": r.status,
                       "text": r.text, "error": r.error, "model": r.model})

    async def turns(request: Request, me: Any) -> JSONResponse:
        return answer({"turns": me.turns(request.query_params.get("conversation_id"))})

    async def runs(_request: Request, me: Any) -> JSONResponse:
        return answer({"runs": me.runs()})

    async def cancel(request: Request, me: Any) -> JSONResponse:
        return answer(await me.stop_turn(request.path_params["turn_id"], "a remote client"))

    async def conversations(request: Request, me: Any) -> JSONResponse:
        agent = request.query_params.get("agent")
        if not agent:
            raise ValueError("agent is required: /v1/conversations?agent=NAME")
        return answer({"conversations": me.list_conversations(agent)})

    async def conversation(request: Request, me: Any) -> JSONResponse:
        cid = request.path_params["conversation_id"]
        if request.method == "DELETE":
            await me.delete_conversation(cid)
            return answer({"deleted": cid})
        if request.method == "PATCH":
            body = await request.json()
            if not isinstance(body, dict) or not isinstance(body.get("title"), str):
                raise ValueError("the body must be JSON: {\"title\": …}")
            return answer(me.rename_conversation(cid, body["title"]))
        return answer({"conversation": me.conversation(cid)})

    async def export(request: Request, me: Any) -> JSONResponse:
        fmt = request.query_params.get("format", "markdown")
        return answer({"format": fmt, "text": me.export_conversation(request.path_params["conversation_id"], fmt)})

    async def search(request: Request, me: Any) -> JSONResponse:
        return answer({"results": me.search_conversations(request.query_params.get("q", ""))})

    return Starlette(routes=[
        Route("/v1/health", health),
        Route("/v1/agents", guarded(agents)),
        Route("/v1/chat", guarded(chat), methods=["POST"]),
        Route("/v1/turns", guarded(turns)),
        Route("/v1/runs", guarded(runs)),
        Route("/v1/turns/{turn_id}/cancel", guarded(cancel), methods=["POST"]),
        Route("/v1/conversations", guarded(conversations)),
        Route("/v1/conversations/{conversation_id}", guarded(conversation), methods=["GET", "PATCH", "DELETE"]),
        Route("/v1/conversations/{conversation_id}/export", guarded(export)),
        Route("/v1/search", guarded(search)),
    ])


async def serve(pod: Any, host: str, port: int) -> None:
    import uvicorn

    pod.start_background()
    await pod.recover()
    gate = TokenGate(pod)
    config = uvicorn.Config(make_app(pod, gate), host=host, port=port, log_level="warning", lifespan="off")
    server = uvicorn.Server(config)
    print(f"Hearth pod host {pod.owner} serving contract v{CONTRACT} on http://{host}:{port}", flush=True)
    try:
        await server.serve()
    finally:
        gate.close()


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

    # The rest of the contract, under the local Pod's names (awaited here), so a window can call either.
    async def runs(self) -> list[dict[str, Any]]:
        return (await self._get("/v1/runs"))["runs"]

    async def list_conversations(self, agent: str) -> list[dict[str, Any]]:
        return (await self._get("/v1/conversations", agent=agent))["conversations"]

    async def conversation(self, conversation_id: str) -> dict[str, Any]:
        return (await self._get(f"/v1/conversations/{conversation_id}"))["conversation"]

    async def rename_conversation(self, conversation_id: str, title: str) -> dict[str, Any]:
        data = self._check(await self.http.patch(f"{self.base}/v1/conversations/{conversation_id}", json={"title": title}))
        return {k: v for k, v in data.items() if k != "contract"}

    async def delete_conversation(self, conversation_id: str) -> None:
        self._check(await self.http.delete(f"{self.base}/v1/conversations/{conversation_id}"))

    async def export_conversation(self, conversation_id: str, fmt: str = "markdown") -> str:
        return (await self._get(f"/v1/conversations/{conversation_id}/export", format=fmt))["text"]

    async def search_conversations(self, query: str) -> list[dict[str, Any]]:
        return (await self._get("/v1/search", q=query))["results"]

    async def close(self) -> None:
        await self.http.aclose()


