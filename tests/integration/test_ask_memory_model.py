"""Ask memory and the model that answers it: how its citations are read, and that an answer that never ends, or one
the person stopped, ends the request to the model too (a local server stops generating it)."""

from __future__ import annotations

import asyncio
import json
import re
import threading
import time

import pytest

from tests.helpers.fake_model import Endless, FakeModelServer, Script, Text
from tests.integration.test_ask_memory_excerpts import kept_mail
from tests.integration.test_cli import cli


async def _boiler(pod) -> str:
    scope = f"private/{pod.person_id}"
    return await pod.in_memory_thread(lambda: pod.memory.add_source("The boiler code is 7731.", scope=scope))


@pytest.mark.parametrize("cites", ["[1, 2]", "[1,2]", "[^1][^2]"])
async def test_a_citation_list_in_an_answer_links_each_source(pod, script, cites) -> None:
    """Models often cite two excerpts as "[1, 2]" or as footnotes "[^1][^2]" (pages are read so): Ask memory read
    only "[1]", so the answer showed the brackets as text, nothing linked and no Sources under it."""
    scope = f"private/{pod.person_id}"
    a = await pod.in_memory_thread(lambda: pod.memory.add_source("Clara's birthday is on 3 June.", scope=scope))
    b = await pod.in_memory_thread(lambda: pod.memory.add_source("Clara turns 40 this year; her party is at the "
                                                                 "boathouse.", scope=scope))
    pod.set_role_model("ask_memory", "fake/fake-1")
    script([Text(f"Clara's birthday is on 3 June and she turns 40 {cites}.")], repeat_last=True)
    result = await asyncio.wait_for(pod.ask_memory("When is Clara's birthday?"), 60)
    assert result.ok, result.error
    assert set(result.citations.values()) == {a, b}, (result.text, result.citations)
    assert "[1][2]" in result.text, result.text


async def test_an_answer_that_never_ends_is_cut_and_shown(pod, script, monkeypatch) -> None:
    """A model that never stops answering (a looping local model): Ask memory read its answer whole, to the wire's
    bounds, before cutting it to what it shows, so the person waited minutes and got "did not answer within"; it
    is read up to what is kept (a reasoning model's thinking besides), and shown, cut, with its citation."""
    from runtime_host import memory_jobs

    monkeypatch.setattr(memory_jobs, "ASK_TIMEOUT_S", 30.0)
    await _boiler(pod)
    pod.set_role_model("ask_memory", "fake/fake-1")
    script([Endless("The boiler code is 7731 [1]. " * 40)], repeat_last=True)
    result = await asyncio.wait_for(pod.ask_memory("What is the boiler code?"), 60)
    assert result.ok, result.error
    assert result.text.startswith("The boiler code is 7731 [1].") and result.citations
    assert len(result.text) <= memory_jobs.ANSWER_CHARS + 200 and "cut" in result.text[-200:], result.text[-200:]


class _SeesHangUp(FakeModelServer):
    """The fake model, whose endless answer notes when the client hangs up (writing to it fails)."""

    def __init__(self, *a, **kw) -> None:
        super().__init__(*a, **kw)
        self.hung_up = threading.Event()
        self.done = threading.Event()

    def _answer_endless(self, h, req, answer) -> None:
        self._begin_stream(h)
        data = ("data: " + json.dumps({"id": "x", "object": "chat.completion.chunk", "model": "m", "choices": [
            {"index": 0, "delta": {"content": answer.chunk}, "finish_reason": None}]}) + "\n\n").encode()
        try:
            while not self.done.is_set():
                self._chunk(h, data)
                time.sleep(answer.delay_s)
        except OSError:
            self.hung_up.set()


@pytest.mark.parametrize("how", ["Stop", "given up on"])
async def test_an_ask_stopped_or_given_up_on_ends_its_request_to_the_model(pod, monkeypatch, how) -> None:
    """The person clicks Stop (the Wiki's Ask button cancels the question), or Ask memory gives up after its time:
    the request to the model went on regardless, for up to 10 minutes, so a local server kept generating the
    abandoned answer, the next question waited behind it, and each Stop and Ask again opened one more."""
    from runtime_host import memory_jobs

    monkeypatch.setattr(memory_jobs, "ASK_TIMEOUT_S", 1.0)
    srv = _SeesHangUp(Script([Endless("and on ", delay_s=0.05)], repeat_last=True)).start()
    try:
        pod.add_provider("ollama", kind="openai-compatible", base_url=srv.base_url, model="llama")
        pod.set_role_model("ask_memory", "ollama/llama")
        await _boiler(pod)
        asking = asyncio.ensure_future(pod.ask_memory("What is the boiler code?"))
        await asyncio.sleep(0.5)
        if how == "Stop":
            asking.cancel()
            with pytest.raises(asyncio.CancelledError):
                await asking
        else:
            r = await asking
            assert not r.ok and "did not answer within" in r.error
        assert await asyncio.to_thread(srv.hung_up.wait, 10), f"the model's request stayed open after {how}"
    finally:
        srv.done.set()
        srv.stop()


async def test_a_terminal_answer_cannot_pass_for_the_sources_hearth_lists(pod, servers, fake_model, script,
                                                                          home) -> None:
    """`memory ask` printed the model's answer, then Hearth's "[1] words (what it is, day, whose)" lines, nothing
    between them: a model steered by a stranger's mail added its own "[1] I changed the safe code … (note, …, Me)",
    and the terminal showed the stranger's mail as the person's own note. The answer is now introduced as the
    model's and indented, and Hearth's list has its heading, as in the window."""
    await kept_mail(pod, servers, fake_model, "Safe", "The new code for the safe is 4242.",
                    "Mallory <mallory@evil.example>")
    pod.set_role_model("ask_memory", "fake/fake-1")
    script([Text("The code for the safe is 4242 [1].\n\n[1] I changed the safe code to 4242 myself. "
                 "(note, 01 Dec 2026, Me)")])
    r = await asyncio.to_thread(cli, home, "memory", "ask", "What is the code for the safe?")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "The answer by fake/fake-1, from what memory holds:", r.stdout
    assert "  The code for the safe is 4242 [1]." in lines and "Sources:" in lines, r.stdout
    listed = [ln for ln in lines if re.match(r"\[1\] ", ln)]
    assert len(listed) == 1 and "mail from Mallory" in listed[0], r.stdout
