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

from runtime_host.providers import (
    Finished,
    ProviderError,
    Route,
    TextDelta,
    ToolCall,
    open_provider,
    supports_tools,
)
from runtime_host.tools import Tool, ToolInputError, call_tool, tools_for
from runtime_host.worker.channel import Channel, PodGone

MAX_ITERATIONS = 90
SUBAGENT_MAX_ITERATIONS = 50
MAX_CONCURRENT_SUBAGENTS = 3
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
        # A message may choose another model for itself: its routes come with the turn.
        self.routes = [Route.from_dict(r) for r in msg.get("routes") or binding.get("routes", [])]
        profile = binding.get("profile", {})
        self.system: str = profile.get("system") or ""
        self.guard = _guard_for(binding, channel)
        # Only what the allowlist allows is even offered to the model (fail closed).
        self.tools: dict[str, Tool] = {n: t for n, t in tools_for(profile.get("toolkits", [])).items()
                                       if self.guard is None or self.guard.allowlist.allows(t.toolkit, n)}
        # MCP tools the Pod offers (listed by their server and allowed by a person); the Pod calls them.
        for spec in binding.get("mcp_tools", []):
            self.tools[spec["name"]] = _mcp_tool(spec)
        self.max_iterations = int(profile.get("max_iterations") or MAX_ITERATIONS)

    def emit(self, event: dict[str, Any]) -> None:
        self.channel.send({"type": "event", "turn_id": self.turn_id, "event": event})

    def emit_acked(self, event: dict[str, Any]) -> None:
        self.channel.request({"type": "event", "turn_id": self.turn_id, "event": event})

    def pod_call(self, step_id: str) -> Any:
        """A function that asks the Pod to carry out a Pod tool for this worker's identity."""

        def call(method: str, arguments: dict[str, Any]) -> Any:
            reply = self.channel.request({"type": "pod.call", "turn_id": self.turn_id, "step_id": step_id,
                                          "method": method, "args": arguments}, timeout=300)
            if not isinstance(reply, dict):
                raise RuntimeError("the Pod gave no answer")
            if not reply.get("ok"):
                raise ToolInputError(reply.get("error") or "the Pod refused")
            return reply.get("output")

        return call

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


def _mcp_tool(spec: dict[str, Any]) -> Tool:
    server, tool = spec["server"], spec["tool"]

    def call(_context: dict[str, Any] | None = None, **arguments: Any) -> Any:
        pod_call = (_context or {}).get("pod_call")
        if pod_call is None:
            raise RuntimeError("MCP tools need the Pod, and this run has no Pod connection")
        return pod_call("mcp", {"server": server, "tool": tool, "arguments": arguments})

    schema = dict(spec.get("parameters") or {"type": "object", "properties": {}})
    schema.setdefault("properties", {})
    schema.setdefault("required", [])
    return Tool(spec["name"], spec["toolkit"], spec.get("description") or f"{tool} from the {server} MCP server",
                schema, call)


def _guard_for(binding: dict[str, Any], channel: Channel) -> Any:
    """The pre-tool-call guard for this worker's binding, made once and kept on the binding."""
    if "_guard" in binding:
        return binding["_guard"]
    profile = binding.get("profile", {})
    if not profile.get("allowlist") or not binding.get("data_dir"):  # the bind check refuses this already
        raise RuntimeError("this worker has no allowlist or data folder, so it has no guard; it runs no tools")
    from runtime_host.allowlist import Allowlist
    from runtime_host.guard import Guard, shapes_for_tools

    allowlist = Allowlist.from_json(profile.get("name", "agent"), profile["allowlist"])
    turn_of = binding.setdefault("_turn", {})

    def audit(event: dict[str, Any]) -> None:
        channel.send({"type": "event", "turn_id": turn_of.get("id"), "event": event})

    tools = tools_for(profile.get("toolkits", []))
    guard = Guard.for_binding(binding, binding["data_dir"], allowlist, audit=audit,
                              shapes=shapes_for_tools(tools.values()))
    from runtime_host.guard import shape_from_schema

    for spec in binding.get("mcp_tools", []):  # judged like any tool: its allowlist action is the server's name
        guard.register(shape_from_schema(spec["name"], spec["toolkit"], spec.get("parameters") or {"properties": {}},
                                         action=spec["tool"]))
    binding["_guard"] = guard
    return guard


def run_turn(channel: Channel, binding: dict[str, Any], msg: dict[str, Any], cancel: threading.Event) -> None:
    binding.setdefault("_turn", {})["id"] = msg["turn_id"]
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
    """Rebuilds the conversation from written top-level steps; returns how many model calls finished.

    A tool step that started but never finished is asked to its tool's own record first (a tool
    with side effects can tell whether that exact call took effect); otherwise it goes back to the
    model as interrupted. Nothing is executed again.
    """
    done_calls = 0
    for step in steps:
        if step.get("parent_id"):
            continue  # a sub-agent's inner steps: history only; its delegate step carries the result
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
                tool = ctx.tools.get(step["name"])
                recovered = tool.recover(step["id"]) if tool and tool.recover else None
                if recovered is not None:
                    ctx.finish_step(step["id"], "finished", {"output": recovered, "recovered": True})
                    content = recovered
                else:
                    ctx.finish_step(step["id"], "interrupted", {"error": INTERRUPTED})
                    content = INTERRUPTED
            else:
                res = step.get("result")
                content = res.get("output", "") if isinstance(res, dict) else str(res)
            messages.append(
                {"role": "tool", "tool_call_id": step.get("call_id") or step["id"], "name": step["name"], "content": content}
            )
    return done_calls


def _call_model(ctx: TurnContext, messages: list[dict[str, Any]], tools: dict[str, Tool],
                parent_id: str | None) -> dict[str, Any]:
    """One model call through the route chain. Returns {text, tool_calls, model} or raises ProviderError."""
    if not ctx.routes:
        raise ProviderError(
            "bad_request",
            "This agent has no model to talk to. Add a provider in Settings → Providers (or "
            "`python -m runtime_host provider add`) and choose it for the agent.",
        )
    last_error: ProviderError | None = None
    specs = [t.spec() for t in tools.values()]
    for i, route in enumerate(ctx.routes):
        step_id = ctx.start_step("model", route.model or route.provider, parent_id=parent_id,
                                 arguments={"provider": route.provider})
        text: list[str] = []
        calls: list[dict[str, Any]] = []
        model = route.model
        try:
            provider = open_provider(route)
            for ev in provider.stream(messages, specs if supports_tools(route.kind) else []):
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
            failed: dict[str, Any] = {"error": str(exc), "error_kind": exc.kind, "status": exc.status}
            last_error = exc
            later = ctx.routes[i + 1:]
            if exc.may_fall_back and later and not text:  # the fallback rule (README): before any answer only
                failed["moved_to"] = f"{later[0].provider}/{later[0].model}".rstrip("/")
                failed["why"] = f"{exc.kind}: {exc}"
                ctx.finish_step(step_id, "failed", failed)
                continue
            partial = "".join(text)
            if partial:
                failed["text"] = partial
            ctx.finish_step(step_id, "failed", failed)
            if exc.may_fall_back and later:
                raise ProviderError(exc.kind, f"{exc} {route.model or route.provider} had already begun answering, "
                                    "so the turn was not handed to the next model (two answers would be mixed); "
                                    "what it wrote is kept in the turn's steps. Send the message again to retry.",
                                    status=exc.status) from exc
            raise
        result = {"text": "".join(text), "tool_calls": calls, "model": model, "provider": route.provider}
        ctx.finish_step(step_id, "finished", result)
        return result
    assert last_error is not None
    raise last_error


def _run_tool(ctx: TurnContext, call: dict[str, Any], tools: dict[str, Tool], parent_id: str | None,
              step_id: str | None = None) -> str:
    step_id = step_id or ctx.start_step("tool", call["name"], arguments=call["arguments"], call_id=call["id"],
                                        parent_id=parent_id)
    tool = tools.get(call["name"])
    if tool is None:
        output = f"error: there is no tool named {call['name']!r}. Available: {', '.join(sorted(tools)) or 'none'}."
        ctx.finish_step(step_id, "failed", {"output": output})
        return output
    if ctx.guard is not None:
        decision = ctx.guard.check(call["name"], call["arguments"])
        if not decision.allowed:
            output = f"error: refused by Hearth's guard ({decision.rule}): {decision.reason}"
            ctx.finish_step(step_id, "failed", {"output": output, "guard": decision.rule})
            return output
    try:
        output = call_tool(tool, call["arguments"], {"turn_id": ctx.turn_id, "step_id": step_id,
                                                      "pod_call": ctx.pod_call(step_id)})
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


SUBAGENT_SYSTEM = (
    "You are a sub-agent. Another agent handed you one task; you cannot see its conversation and cannot "
    "delegate further. Do the task with the tools you have, then reply with the result only."
)


def _run_subagent(ctx: TurnContext, call: dict[str, Any], gate: threading.Semaphore) -> str:
    """Runs one delegated task as a nested agent loop under the delegate step."""
    step_id = ctx.start_step("tool", "delegate", arguments=call["arguments"], call_id=call["id"])
    task = str(call["arguments"].get("task") or "").strip()
    if not task:
        output = "error: delegate needs a task"
        ctx.finish_step(step_id, "failed", {"output": output})
        return output
    with gate:
        ctx.emit({"type": "subagent.started", "step_id": step_id, "task": task[:200]})
        sub_tools = {n: t for n, t in ctx.tools.items() if t.toolkit != "delegate"}  # one level deep
        messages = [{"role": "system", "content": SUBAGENT_SYSTEM}, {"role": "user", "content": task}]
        outcome = _agent_loop(ctx, messages, sub_tools, SUBAGENT_MAX_ITERATIONS, parent_id=step_id)
        ctx.emit({"type": "subagent.finished", "step_id": step_id, "status": outcome["status"]})
    if outcome["status"] == "done":
        output = outcome.get("text") or "(the sub-agent returned nothing)"
        ctx.finish_step(step_id, "finished", {"output": output})
    else:
        output = f"error: the sub-agent did not finish: {outcome.get('error')}"
        ctx.finish_step(step_id, "failed", {"output": output})
    return output


def _run_tool_calls(ctx: TurnContext, calls: list[dict[str, Any]], tools: dict[str, Tool],
                    parent_id: str | None) -> list[str]:
    """Runs one answer's tool calls: ordinary tools in order, delegate calls concurrently (at most 3)."""
    outputs: list[str | None] = [None] * len(calls)
    threads: list[threading.Thread] = []
    gate = threading.Semaphore(MAX_CONCURRENT_SUBAGENTS)
    for i, call in enumerate(calls):
        if call["name"] == "delegate" and parent_id is None and "delegate" in tools:
            def work(i: int = i, call: dict[str, Any] = call) -> None:
                try:
                    outputs[i] = _run_subagent(ctx, call, gate)
                except PodGone:
                    outputs[i] = "error: the pod went away"
            t = threading.Thread(target=work, name=f"subagent-{i}", daemon=True)
            t.start()
            threads.append(t)
        else:
            outputs[i] = _run_tool(ctx, call, tools, parent_id)
    for t in threads:
        t.join()
    return [o if o is not None else "error: no result" for o in outputs]


def _agent_loop(ctx: TurnContext, messages: list[dict[str, Any]], tools: dict[str, Tool], max_iterations: int,
                parent_id: str | None, iteration: int = 0) -> dict[str, Any]:
    model_used = None
    while iteration < max_iterations:
        if ctx.cancel.is_set():
            return {"status": "cancelled", "error": "The turn was cancelled.", "iterations": iteration}
        iteration += 1
        if parent_id is None:
            ctx.emit({"type": "iteration", "n": iteration, "max": max_iterations})
        try:
            answer = _call_model(ctx, messages, tools, parent_id)
        except ProviderError as exc:
            return {"status": "failed", "error": str(exc), "error_kind": exc.kind, "iterations": iteration}
        model_used = answer["model"]
        messages.append({"role": "assistant", "content": answer["text"], "tool_calls": answer["tool_calls"]})
        if not answer["tool_calls"]:
            return {"status": "done", "text": answer["text"], "model": model_used, "iterations": iteration}
        outputs = _run_tool_calls(ctx, answer["tool_calls"], tools, parent_id)
        for call, output in zip(answer["tool_calls"], outputs, strict=True):
            messages.append({"role": "tool", "tool_call_id": call["id"], "name": call["name"], "content": output})
    return {
        "status": "failed",
        "error_kind": "iteration_limit",
        "error": f"The agent reached its ceiling of {max_iterations} steps without finishing, so Hearth stopped it. "
        "Everything it did is kept; ask again with a narrower request.",
        "model": model_used,
        "iterations": iteration,
    }


def _loop(ctx: TurnContext, msg: dict[str, Any]) -> dict[str, Any]:
    messages: list[dict[str, Any]] = []
    if ctx.system:
        messages.append({"role": "system", "content": ctx.system})
    messages.extend(msg.get("messages", []))
    done_calls = _replay(ctx, msg.get("steps", []), messages)
    return _agent_loop(ctx, messages, ctx.tools, ctx.max_iterations, None, iteration=done_calls)
