"""The agent loop inside a worker: model call -> tool calls -> model call ... up to a ceiling.

Every step is announced before it runs and finished after (both acknowledged by the Pod, which
writes them first), so a turn can resume after a crash: finished steps are replayed from the
store, never executed again; a tool step that started but never finished goes back to the model
as interrupted.
"""

from __future__ import annotations

import json
import threading
import time
import traceback
import uuid
from concurrent.futures import ThreadPoolExecutor
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
from runtime_host.sizes import MAX_ANSWER_BYTES, MAX_TOOL_RESULT_BYTES, clip
from runtime_host.tools import Tool, ToolInputError, call_tool, tools_for
from runtime_host.worker.channel import Channel, PodGone
from runtime_host.worker.limits import ToolLimitExceeded, ToolRaised, run_limited

MAX_ITERATIONS = 90
SUBAGENT_MAX_ITERATIONS = 50
MAX_CONCURRENT_SUBAGENTS = 3
# Bounds a hostile (or confused) model cannot pass, whatever it answers:
MAX_TOOL_CALLS_PER_STEP = 16   # run from one answer; the rest are refused, each with a result
KEPT_TOOL_CALLS_PER_STEP = 64  # kept in the record; calls past this are dropped (the refusal says how many)
MODEL_CALL_BUDGET = 100        # model calls of one turn, its sub-agents included
REFUSED_ARGS_CHARS = 200       # what is kept of a refused call's arguments
TURN_TIME_LIMIT_S = 1800.0     # a whole turn, resumes included (the Pod sends what is left of it)
INTERRUPTED = (
    "interrupted: the agent's worker stopped while this tool was running, so its outcome is unknown. "
    "It was not run again. Check whether it took effect before calling it again."
)


def span(seconds: float) -> str:
    """30 minutes, 90 s: a limit in words."""
    return f"{seconds / 60:g} minutes" if seconds >= 120 else f"{seconds:g} s"


class ModelBudget:
    """Model calls a turn may still make, shared by the turn and its sub-agents (thread-safe)."""

    def __init__(self, limit: int, used: int = 0):
        self.limit = limit
        self.used = used
        self._lock = threading.Lock()

    def take(self) -> bool:
        with self._lock:
            if self.used >= self.limit:
                return False
            self.used += 1
            return True

    def exhausted_error(self) -> ProviderError:
        return ProviderError(
            "budget",
            f"This turn used all {self.limit} of its model calls (its sub-agents included) without finishing, so "
            "Hearth stopped it. Everything it did is kept; ask again with a narrower request.",
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
        self.budget = ModelBudget(int(profile.get("max_model_calls") or MODEL_CALL_BUDGET))
        self.time_limit_s = float(msg.get("time_limit_s") or TURN_TIME_LIMIT_S)
        left = self.time_limit_s if msg.get("time_left_s") is None else float(msg["time_left_s"])
        # End a little before the limit, so the end reaches the Pod in time (which stops the turn at the limit).
        self.deadline = time.monotonic() + left - min(5.0, self.time_limit_s / 10)

    def out_of_time(self) -> bool:
        return time.monotonic() > self.deadline

    def time_error(self) -> str:
        return (f"This turn ran for its limit of {span(self.time_limit_s)} without finishing, so Hearth stopped it. "
                "Everything it did is kept; ask again with a narrower request.")

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
                schema, call, in_process=True)


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


def _replay(ctx: TurnContext, steps: list[dict[str, Any]],
            messages: list[dict[str, Any]]) -> tuple[int, list[dict[str, Any]]]:
    """Rebuilds the conversation from written steps; returns (model calls finished, calls still to run).

    Each finished model call is followed by exactly one result for each of its tool calls, so the
    next request pairs every call with its result as the providers demand: a finished tool step
    gives its written output; one that started but never finished is asked to its tool's own record
    first (a tool with side effects can tell whether that exact call took effect), otherwise it goes
    back to the model as interrupted; a refused call gives its refusal. Calls of the last model step
    that never started are returned, to be run now. Nothing that started is executed again.
    """
    ctx.budget.used = sum(1 for s in steps if s["kind"] == "model")
    for step in steps:  # a sub-agent's unfinished inner steps: their delegate step carries the result
        if step.get("parent_id") and step["status"] == "started":
            ctx.finish_step(step["id"], "interrupted", {"error": "worker stopped"})
    groups: list[tuple[list[dict[str, Any]], list[dict[str, Any]]]] = []
    done_calls = 0
    for step in steps:
        if step.get("parent_id"):
            continue
        if step["kind"] == "model":
            if step["status"] == "finished":
                res = step.get("result") or {}
                calls = list(res.get("tool_calls") or [])
                messages.append({"role": "assistant", "content": res.get("text") or "", "tool_calls": calls})
                groups.append((calls, []))
                done_calls += 1
            elif step["status"] == "started":
                ctx.finish_step(step["id"], "interrupted", {"error": "worker stopped during the model call"})
        elif step["kind"] == "tool" and groups:
            groups[-1][1].append(step)
    # Results go right after their own assistant message: rebuild with each group's results in place.
    rebuilt: list[dict[str, Any]] = []
    pending: list[dict[str, Any]] = []
    gi = 0
    for m in messages:
        rebuilt.append(m)
        if m["role"] != "assistant" or gi >= len(groups) or m.get("tool_calls") is not groups[gi][0]:
            continue
        calls, tool_steps = groups[gi]
        last = gi == len(groups) - 1
        gi += 1
        for call in calls:
            found = [s for s in tool_steps if s.get("call_id") == call["id"]]
            if found:
                step = found[0]
                tool_steps.remove(step)
                content = _replayed_result(ctx, step)
            elif call.get("refused"):
                content = call["refused"]
            elif last:
                pending.append(call)
                continue
            else:
                content = INTERRUPTED
            rebuilt.append({"role": "tool", "tool_call_id": call["id"], "name": call["name"], "content": content})
    messages[:] = rebuilt
    return done_calls, pending


def _replayed_result(ctx: TurnContext, step: dict[str, Any]) -> str:
    if step["status"] != "started":
        res = step.get("result")
        return str(res.get("output", "")) if isinstance(res, dict) else str(res)
    tool = ctx.tools.get(step["name"])
    recovered = tool.recover(step["id"]) if tool and tool.recover else None
    if recovered is not None:
        ctx.finish_step(step["id"], "finished", {"output": recovered, "recovered": True})
        return recovered
    ctx.finish_step(step["id"], "interrupted", {"error": INTERRUPTED})
    return INTERRUPTED


def _bound_calls(calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One answer's tool calls within the bounds: the first ones run; the rest are refused, each with a
    result and only a short summary of its arguments; past KEPT_TOOL_CALLS_PER_STEP they are dropped."""
    asked = len(calls)
    if asked <= MAX_TOOL_CALLS_PER_STEP:
        return calls
    refusal = (f"refused: not run. Hearth runs at most {MAX_TOOL_CALLS_PER_STEP} tool calls of one answer and this "
               f"answer asked for {asked}, so calls {MAX_TOOL_CALLS_PER_STEP + 1} to {asked} were refused"
               + (f" (the {asked - KEPT_TOOL_CALLS_PER_STEP} past the first {KEPT_TOOL_CALLS_PER_STEP} are not even "
                  "kept)" if asked > KEPT_TOOL_CALLS_PER_STEP else "")
               + ". Ask again for what is still needed, a few calls at a time.")
    out = calls[:MAX_TOOL_CALLS_PER_STEP]
    for call in calls[MAX_TOOL_CALLS_PER_STEP:KEPT_TOOL_CALLS_PER_STEP]:
        out.append({"id": call["id"], "name": str(call["name"])[:100],
                    "arguments": {"summary": _summary(call["arguments"])}, "refused": refusal})
    return out


def _summary(arguments: Any) -> str:
    text = json.dumps(arguments, ensure_ascii=False, default=repr)
    if len(text) <= REFUSED_ARGS_CHARS:
        return text
    return f"{text[:REFUSED_ARGS_CHARS]}… ({len(text)} characters)"


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
        if not ctx.budget.take():
            raise ctx.budget.exhausted_error()
        ctx.emit({"type": "model_calls", "n": ctx.budget.used, "max": ctx.budget.limit})
        step_id = ctx.start_step("model", route.model or route.provider, parent_id=parent_id,
                                 arguments={"provider": route.provider})
        text: list[str] = []
        calls: list[dict[str, Any]] = []
        model = route.model
        finish = ""
        size = 0
        try:
            provider = open_provider(route)
            for ev in provider.stream(messages, specs if supports_tools(route.kind) else []):
                if ctx.cancel.is_set():
                    raise ProviderError("cancelled", "The turn was cancelled.")
                if ctx.out_of_time():
                    raise ProviderError("time_limit", ctx.time_error())
                if isinstance(ev, TextDelta):
                    size += len(ev.text)
                    if size > MAX_ANSWER_BYTES:  # a runaway answer: stop reading, keep what fits (sizes.py)
                        head = clip("".join(text) + ev.text, MAX_ANSWER_BYTES, "answer",
                                    "the model wrote more and Hearth stopped reading")
                        text = [head]
                        note = head[head.rfind("\n\n[… cut off by Hearth"):]
                        ctx.emit({"type": "delta", "text": note, "step_id": step_id, "parent_id": parent_id})
                        break
                    text.append(ev.text)
                    ctx.emit({"type": "delta", "text": ev.text, "step_id": step_id, "parent_id": parent_id})
                elif isinstance(ev, ToolCall):
                    calls.append({"id": ev.id, "name": ev.name, "arguments": ev.arguments})
                elif isinstance(ev, Finished):
                    model = ev.model or model
                    finish = ev.finish_reason
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
                failed["text"] = clip(partial, MAX_ANSWER_BYTES, "answer")
            ctx.finish_step(step_id, "failed", failed)
            if exc.may_fall_back and later:
                raise ProviderError(exc.kind, f"{exc} {route.model or route.provider} had already begun answering, "
                                    "so the turn was not handed to the next model (two answers would be mixed); "
                                    "what it wrote is kept in the turn's steps. Send the message again to retry.",
                                    status=exc.status) from exc
            raise
        result: dict[str, Any] = {"text": clip("".join(text), MAX_ANSWER_BYTES, "answer"),
                                  "tool_calls": _bound_calls(calls), "model": model, "provider": route.provider,
                                  "finish_reason": finish}
        if len(calls) > MAX_TOOL_CALLS_PER_STEP:
            result["refused_calls"] = len(calls) - MAX_TOOL_CALLS_PER_STEP
        ctx.finish_step(step_id, "finished", result)
        return result
    assert last_error is not None
    raise last_error


def _run_tool(ctx: TurnContext, call: dict[str, Any], tools: dict[str, Tool], parent_id: str | None,
              step_id: str | None = None) -> str:
    tool = tools.get(call["name"])
    refused: dict[str, Any] | None = None
    if tool is None:
        refused = {"output": f"error: there is no tool named {str(call['name'])[:100]!r}. "
                             f"Available: {', '.join(sorted(tools)) or 'none'}."}
    elif ctx.guard is not None:
        decision = ctx.guard.check(call["name"], call["arguments"])
        if not decision.allowed:
            refused = {"output": f"error: refused by Hearth's guard ({decision.rule}): {decision.reason}",
                       "guard": decision.rule}
    # A refused call keeps only a short summary of its arguments in the record.
    arguments = {"summary": _summary(call["arguments"])} if refused else call["arguments"]
    step_id = step_id or ctx.start_step("tool", str(call["name"])[:200], arguments=arguments, call_id=call["id"],
                                        parent_id=parent_id)
    if refused is not None or tool is None:
        refused = refused or {"output": "error: no such tool"}
        ctx.finish_step(step_id, "failed", refused)
        return str(refused["output"])
    context = {"turn_id": ctx.turn_id, "step_id": step_id}
    try:
        if tool.in_process:  # a Pod tool: it only waits for the Pod over the pipe
            output = call_tool(tool, call["arguments"], {**context, "pod_call": ctx.pod_call(step_id)})
        else:
            output = run_limited(call["name"], lambda: call_tool(tool, call["arguments"], context),
                                 time_s=tool.time_limit_s, memory_mb=tool.memory_mb, input_error=ToolInputError)
            if tool.name == "read_file" and ctx.guard is not None and ctx.guard.reads_household(call["arguments"]["path"]):
                # as data, who put it there said, and memory's guard's label on an order it finds (household.py,
                # loaded by the first household page read; failing, the page is not given at all)
                from runtime_host.household import as_given

                output = as_given(output, "this household page", by="written from what the household's people and "
                                  "their agents put in memory")
    except ToolInputError as exc:
        output = f"error: {exc}"
        ctx.finish_step(step_id, "failed", {"output": output})
        return output
    except ToolLimitExceeded as exc:
        output = f"error: {exc}"
        ctx.finish_step(step_id, "failed", {"output": output, "limit": exc.limit})
        return output
    except ToolRaised as exc:
        output = f"error: the tool {call['name']!r} failed: {exc.kind}: {exc}"
        ctx.finish_step(step_id, "failed", {"output": output})
        return output
    except Exception as exc:  # a tool that raises goes back to the model as a result, never kills the turn
        output = f"error: the tool {call['name']!r} failed: {type(exc).__name__}: {exc}"
        ctx.finish_step(step_id, "failed", {"output": output})
        return output
    if isinstance(output, str):
        output = clip(output, MAX_TOOL_RESULT_BYTES, "tool result", "ask the tool for a smaller part")
    ctx.finish_step(step_id, "finished", {"output": output})
    return output


SUBAGENT_SYSTEM = (
    "You are a sub-agent. Another agent handed you one task; you cannot see its conversation and cannot "
    "delegate further. Do the task with the tools you have, then reply with the result only."
)


def _run_subagent(ctx: TurnContext, call: dict[str, Any]) -> str:
    """Runs one delegated task as a nested agent loop under the delegate step."""
    step_id = ctx.start_step("tool", "delegate", arguments=call["arguments"], call_id=call["id"])
    task = str(call["arguments"].get("task") or "").strip()
    if not task:
        output = "error: delegate needs a task"
        ctx.finish_step(step_id, "failed", {"output": output})
        return output
    if ctx.cancel.is_set():
        output = "error: the turn was stopped before this sub-agent started"
        ctx.finish_step(step_id, "failed", {"output": output})
        return output
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
    """Runs one answer's tool calls: ordinary tools in order, delegate calls concurrently on at most
    MAX_CONCURRENT_SUBAGENTS threads; a refused call gets its refusal. One result per call, in order."""
    outputs: list[str | None] = [None] * len(calls)
    delegated = [i for i, call in enumerate(calls) if not call.get("refused") and call["name"] == "delegate"
                 and parent_id is None and "delegate" in tools]
    pool = ThreadPoolExecutor(MAX_CONCURRENT_SUBAGENTS, thread_name_prefix="subagent") if delegated else None

    def work(i: int) -> None:
        try:
            outputs[i] = _run_subagent(ctx, calls[i])
        except PodGone:
            outputs[i] = "error: the pod went away"

    futures = [pool.submit(work, i) for i in delegated] if pool else []
    for i, call in enumerate(calls):
        if call.get("refused"):
            outputs[i] = call["refused"]
        elif i not in delegated and ctx.out_of_time():
            outputs[i] = f"error: not run: {ctx.time_error()}"
        elif i not in delegated:
            outputs[i] = _run_tool(ctx, call, tools, parent_id)
    for f in futures:
        f.result()
    if pool:
        pool.shutdown()
    return [o if o is not None else "error: no result" for o in outputs]


def _agent_loop(ctx: TurnContext, messages: list[dict[str, Any]], tools: dict[str, Tool], max_iterations: int,
                parent_id: str | None, iteration: int = 0) -> dict[str, Any]:
    model_used = None
    while iteration < max_iterations:
        if ctx.cancel.is_set():
            return {"status": "cancelled", "error": "The turn was cancelled.", "iterations": iteration}
        if ctx.out_of_time():
            return {"status": "failed", "error_kind": "time_limit", "error": ctx.time_error(), "iterations": iteration}
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
    done_calls, pending = _replay(ctx, msg.get("steps", []), messages)
    if pending:  # calls of the last answer that never started: run them now, so each call has its result
        outputs = _run_tool_calls(ctx, pending, ctx.tools, None)
        for call, output in zip(pending, outputs, strict=True):
            messages.append({"role": "tool", "tool_call_id": call["id"], "name": call["name"], "content": output})
    return _agent_loop(ctx, messages, ctx.tools, ctx.max_iterations, None, iteration=done_calls)
