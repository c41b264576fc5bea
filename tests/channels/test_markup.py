"""Markdown answers become Telegram HTML that Telegram's parser accepts, and long answers split at
paragraph or line boundaries without breaking a tag (checked with the fake's copy of the parser)."""

from __future__ import annotations

import random

import pytest

from runtime_host.channels.markup import MESSAGE_LIMIT, plain_parts, to_telegram, utf16_len
from tests.helpers.fake_telegram import parse_html


def one(md: str) -> str:
    [part] = to_telegram(md)
    return part.html


def test_formatting_maps_to_the_supported_tags() -> None:
    assert one("**b** *i* ~~s~~ `c`") == "<b>b</b> <i>i</i> <s>s</s> <code>c</code>"
    assert one("# Title") == "<b>Title</b>"
    assert one("[site](https://example.org/?a=1&b=2)") == '<a href="https://example.org/?a=1&amp;b=2">site</a>'
    assert one("```py\nif a < b:\n    pass\n```") == '<pre><code class="language-py">if a &lt; b:\n    pass</code></pre>'
    assert one("> quoted") == "<blockquote>quoted</blockquote>"
    assert one("- a\n- b\n\n1. x\n2. y") == "• a\n• b\n\n1. x\n2. y"


def test_everything_else_is_escaped_plain_text() -> None:
    assert one("a <b>not html</b> & <script>x</script>") == "a &lt;b&gt;not html&lt;/b&gt; &amp; &lt;script&gt;x&lt;/script&gt;"
    assert one("| a | b |\n|---|---|\n| 1 | 2 |") == "| a | b |\n|---|---|\n| 1 | 2 |"
    assert one("[x](ftp://host/file)") == "x"  # only http(s), tg and mailto links stay links
    assert one("![alt text](https://img/a.png)") == "alt text"
    text, entities = parse_html(one("x &amp; y <i>z</i>"))
    assert text == "x & y <i>z</i>"  # markdown entities decode; raw HTML stays visible text


@pytest.mark.parametrize("seed", range(12))
def test_random_markdown_always_parses_and_fits(seed: int) -> None:
    rng = random.Random(seed)
    pieces = ["**bold words**", "*it*", "`a<b`", "[l](https://x.org/a?b&c)", "plain & text", "<tag>", "😀 emoji",
              "~~gone~~", "\n\n", "\n", "\n- item **x**\n- item", "\n\n```\ncode <line>\nmore\n```\n\n", "> q *i*\n\n"]
    md = "".join(rng.choice(pieces) + (" " if rng.random() < 0.7 else "") for _ in range(rng.randint(50, 2500)))
    limit = rng.choice([MESSAGE_LIMIT, 700, 120])
    parts = to_telegram(md, limit)
    assert parts
    for p in parts:
        text, _ = parse_html(p.html)  # raises on any broken tag, like Telegram
        assert text == p.plain
        assert 0 < utf16_len(text) <= limit and text.strip() == text


def test_long_answer_split_at_paragraphs_then_lines() -> None:
    paras = [f"P{i} " + "word " * 150 for i in range(20)]
    parts = to_telegram("\n\n".join(paras))
    assert len(parts) >= 4
    assert all(p.plain.startswith("P") for p in parts)  # each message begins with a whole paragraph
    lines = "\n".join(f"line {i} " + "x" * 40 for i in range(400))
    parts = to_telegram(lines)
    assert all(p.plain.startswith("line ") for p in parts)
    assert sum(p.plain.count("\n") + 1 for p in parts) == 400


def test_tags_open_at_a_cut_are_closed_and_reopened() -> None:
    parts = to_telegram("**" + " ".join(["bold"] * 3000) + "**")
    assert len(parts) >= 4
    for p in parts:
        assert p.html.startswith("<b>") and p.html.endswith("</b>")
        parse_html(p.html)
    code = "```\n" + "\n".join(["x = 1"] * 2000) + "\n```"
    for p in to_telegram(code):
        assert p.html.startswith("<pre>") and p.html.endswith("</pre>")


def test_astral_characters_count_as_two_units() -> None:
    parts = to_telegram("😀" * 3000)
    assert [utf16_len(p.plain) for p in parts] == [4096, 1904]


def test_plain_parts() -> None:
    assert plain_parts("  hi  ") == ["hi"]
    assert plain_parts("") == []
