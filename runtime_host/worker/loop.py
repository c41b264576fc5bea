"""The agent loop inside a worker: model call -> tool calls -> model call ... up to a ceiling.

Every step is announced before it runs and finished after (both acknowledged by the Pod, which
writes them first), so a turn can resume after a crash: finished steps are replayed from the
store, never executed again; a tool step that started but never finished goes back to the model
as interrupted.
"""

from __future__ import annotations

import threading
import traceback
import uuid
from typing import Any

from runtime_host.providers import Finished, ProviderError, Route, TextDelta, ToolCall, open_provider
from runtime_host.tools import Tool, ToolInputError, call_tool, tools_for
from runtime_host.worker.channel import Channel, PodGone

MAX_ITERATIONS = 90
INTERRUPTED = (
    "interrupted: the agent's worker stopped while this tool was running, so its outcome is unknown. "
    "It was not run again. Check whether it took effect before calling it again."
)


class TurnContext:
    def __init__(self, channel: Channel, binding: dict[str, Any], msg: dict[str, Any], cancel: threading.Event):
        self.channel = channel
        self.binding = binding
        self.turn_id: str = msg["turn_id"]
        self.cancel = cancel
        self.routes = [Route.from_dict(r) for r in binding.get("routes", [])]
        profile = binding.get("profile", {})
        self.system: str = profile.get("system") or ""
        self.tools: dict[str, Tool] = tools_for(profile.get("toolkits", []))
        self.max_iterations = int(profile.get("max_iterations") or MAX_ITERATIONS)

    def emit(self, event: dict[str, Any]) -> None:
        self.channel.send({"type": "event", "turn_id": self.turn_id, "event": event})

    def emit_acked(self, event: dict[str, Any]) -> None:
        self.channel.request({"type": "event", "turn_id": self.turn_id, "event": event})

    def start_step(self, kind: str, name: str, *, arguments: Any = None, call_id: str | None = None,
                   parent_id: str | None = None) -> str:
        step_id = uuid.uuid4().hex
        self.emit_acked(
            {"type": "step.started", "step_id": step_id, "parent_id": parent_id, "kind": kind, "name": name,
             "arguments": arguments, "call_id": call_id}
        )
        return step_id

    def finish_step(self, step_id: str, status: str, result: Any) -> None:
        self.emit_acked({"type": "step.finished", "step_id": step_id, "status": status, "result": result})


def run_turn(channel: Channel, binding: dict[str, Any], msg: dict[str, Any], cancel: threading.Event) -> None:
    ctx = TurnContext(channel, binding, msg, cancel)
    try:
        outcome = _loop(ctx, msg)
    except PodGone:
        return
    except Exception as exc:  # a bug in the loop itself: end the turn with a reason, never hang it
        traceback.print_exc()
        outcome = {"status": "failed", "error": f"Internal error in the agent loop: {exc!r}", "error_kind": "internal"}
    try:
        ctx.emit_acked({"type": "turn.finished", **outcome})
    except PodGone:
        return


def _replay(ctx: TurnContext, steps: list[dict[str, Any]], messages: list[dict[str, Any]]) -> int:
    """Rebuilds the conversation from written steps; returns how many model calls already finished."""
    done_calls = 0
    for step in steps:
        if step["kind"] == "model":
            if step["status"] == "finished":
                res = step.get("result") or {}
                messages.append(
                    {"role": "assistant", "content": res.get("text") or "", "tool_calls": res.get("tool_calls") or []}
                )
                done_calls += 1
            elif step["status"] == "started":
                ctx.finish_step(step["id"], "interrupted", {"error": "worker stopped during the model call"})
        elif step["kind"] == "tool":
            if step["status"] == "started":
                ctx.finish_step(step["id"], "interrupted", {"error": INTERRUPTED})
                content = INTERRUPTED
            else:
                res = step.get("result")
                content = res.get("output", "") if isinstance(res, dict) else str(res)
            messages.append(
                {"role": "tool", "tool_call_id": step.get("call_id") or step["id"], "name": step["name"], "content": content}
            )
    return done_calls


def _call_model(ctx: TurnContext, messages: list[dict[str, Any]], parent_id: str | None) -> dict[str, Any]:
    """One model call through the route chain. Returns {text, tool_calls, model} or raises ProviderError."""
    if not ctx.routes:
        raise ProviderError(
            "bad_request",
            "This agent has no model to talk to. Add a provider in Settings → Providers (or "
            "`python -m runtime_host provider add`) and choose it for the agent.",
        )
    last_error: ProviderError | None = None
    for route in ctx.routes:
        step_id = ctx.start_step("model", route.model or route.provider, parent_id=parent_id,
                                 arguments={"provider": route.provider})
        text: list[str] = []
        calls: list[dict[str, Any]] = []
        model = route.model
        try:
            provider = open_provider(route)
            tools = [t.spec() for t in ctx.tools.values()]
            for ev in provider.stream(messages, tools):
                if ctx.cancel.is_set():
                    raise ProviderError("cancelled", "The turn was cancelled.")
                if isinstance(ev, TextDelta):
                    text.append(ev.text)
                    ctx.emit({"type": "delta", "text": ev.text, "step_id": step_id, "parent_id": parent_id})
                elif isinstance(ev, ToolCall):
                    calls.append({"id": ev.id, "name": ev.name, "arguments": ev.arguments})
                elif isinstance(ev, Finished):
                    model = ev.model or model
        except ProviderError as exc:
            ctx.finish_step(step_id, "failed", {"error": str(exc), "error_kind": exc.kind, "status": exc.status})
            last_error = exc
            if exc.may_fall_back and route is not ctx.routes[-1]:
                continue
            raise
        result = {"text": "".join(text), "tool_calls": calls, "model": model, "provider": route.provider}
        ctx.finish_step(step_id, "finished", result)
        return result
    assert last_error is not None
    raise last_error


def _run_tool(ctx: TurnContext, call: dict[str, Any], parent_id: str | None) -> str:
    step_id = ctx.start_step("tool", call["name"], arguments=call["arguments"], call_id=call["id"], parent_id=parent_id)
    tool = ctx.tools.get(call["name"])
    if tool is None:
        output = f"error: there is no tool named {call['name']!r}. Available: {', '.join(sorted(ctx.tools)) or 'none'}."
        ctx.finish_step(step_id, "failed", {"output": output})
        return output
    try:
        output = call_tool(tool, call["arguments"], {"turn_id": ctx.turn_id, "step_id": step_id})
    except ToolInputError as exc:
        output = f"error: {exc}"
        ctx.finish_step(step_id, "failed", {"output": output})
        return output
    except Exception as exc:  # a tool that raises goes back to the model as a result, never kills the turn
        output = f"error: the tool {call['name']!r} failed: {type(exc).__name__}: {exc}"
        ctx.finish_step(step_id, "failed", {"output": output})
        return output
    ctx.finish_step(step_id, "finished", {"output": output})
    return output


def _loop(ctx: TurnContext, msg: dict[str, Any]) -> dict[str, Any]:
    messages: list[dict[str, Any]] = []
    if ctx.system:
        messages.append({"role": "system", "content": ctx.system})
    messages.extend(msg.get("messages", []))
    iteration = _replay(ctx, msg.get("steps", []), messages)
    model_used = None
    while iteration < ctx.max_iterations:
        if ctx.cancel.is_set():
            return {"status": "cancelled", "error": "The turn was cancelled.", "iterations": iteration}
        iteration += 1
        ctx.emit({"type": "iteration", "n": iteration, "max": ctx.max_iterations})
        try:
            answer = _call_model(ctx, messages, None)
        except ProviderError as exc:
            return {"status": "failed", "error": str(exc), "error_kind": exc.kind, "iterations": iteration}
        model_used = answer["model"]
        messages.append({"role": "assistant", "content": answer["text"], "tool_calls": answer["tool_calls"]})
        if not answer["tool_calls"]:
            return {"status": "done", "text": answer["text"], "model": model_used, "iterations": iteration}
        for call in answer["tool_calls"]:
            output = _run_tool(ctx, call, None)
            messages.append({"role": "tool", "tool_call_id": call["id"], "name": call["name"], "content": output})
    return {
        "status": "failed",
        "error_kind": "iteration_limit",
        "error": f"The agent reached its ceiling of {ctx.max_iterations} steps without finishing, so Hearth stopped it. "
        "Everything it did is kept below; ask again with a narrower request.",
        "model": model_used,
        "iterations": iteration,
    }
