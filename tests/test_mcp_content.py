"""MCP content as the model's content (bridge/mcp/content.py) and elicitation answers (bridge/mcp/elicit.py)."""

from __future__ import annotations

import base64
from pathlib import Path

from bridge.mcp.content import blocks_of, resource_blocks, tool_result
from bridge.mcp.elicit import form_content, question_for, result_of
from bridge.mcp.host import Reply

PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="


def test_images_the_api_takes_stay_images_and_others_become_notes() -> None:
    svg = base64.b64encode(b"<svg/>" * 10).decode()
    blocks = blocks_of(
        [
            {"type": "image", "data": PNG, "mimeType": "image/png"},
            {"type": "image", "data": svg, "mimeType": "image/svg+xml"},
            {"type": "image", "data": PNG, "mimeType": "image/bmp"},
            {"type": "image", "data": "%%%", "mimeType": "image/png"},
            {"type": "audio", "data": PNG, "mimeType": "audio/wav"},
            {"type": "mystery"},
        ],
        "srv",
    )
    assert blocks[0] == {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}}
    assert [b["text"] for b in blocks[1:]] == [
        "[image/svg+xml image omitted (60 bytes): the model takes only jpeg, png, gif and webp]",
        "[image/bmp image omitted (70 bytes): the model takes only jpeg, png, gif and webp]",
        "[image/png image omitted: its data is not valid base64]",
        "[audio content (audio/wav, 70 bytes) omitted: the model cannot take audio]",
        "[mystery content omitted]",
    ]


def test_resource_links_and_embedded_resources_are_readable(tmp_path: Path) -> None:
    [link] = blocks_of(
        [{"type": "resource_link", "uri": "mem://readme", "name": "readme", "mimeType": "text/markdown"}], "docs"
    )
    assert link["text"] == (
        "[resource link readme (mem://readme, text/markdown) — read it with ReadMcpResourceTool "
        "(server 'docs', uri 'mem://readme')]"
    )
    blocks = resource_blocks(
        [
            {"uri": "mem://a.txt", "text": "hello"},
            {"uri": "mem://logo.png", "mimeType": "image/png", "blob": PNG},
            {
                "uri": "mem://x/data.bin",
                "mimeType": "application/octet-stream",
                "blob": base64.b64encode(b"\0\1").decode(),
            },
        ],
        "docs",
        data_dir=tmp_path,
    )
    assert blocks[0]["text"] == "[mem://a.txt]\nhello"
    assert blocks[2]["type"] == "image"
    saved = Path(blocks[3]["text"].split("saved to ")[1].rstrip("]"))
    assert saved.read_bytes() == b"\0\1" and saved.is_relative_to(tmp_path)
    assert "application/octet-stream, 2 bytes" in blocks[3]["text"]


def test_a_tool_result_is_text_unless_it_carries_an_image() -> None:
    text = tool_result({"content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}, "s", data_dir=None)
    assert text.content == "a\nb" and not text.is_error
    structured = tool_result({"content": [], "structuredContent": {"n": 1}, "isError": True}, "s", data_dir=None)
    assert structured.content == '{\n  "n": 1\n}' and structured.is_error
    assert tool_result({"content": []}, "s", data_dir=None).content == "(no output)"
    mixed = tool_result(
        {
            "content": [
                {"type": "text", "text": "a"},
                {"type": "text", "text": "b"},
                {"type": "image", "data": PNG, "mimeType": "image/png"},
            ]
        },
        "s",
        data_dir=None,
    )
    assert isinstance(mixed.content, list) and [b["type"] for b in mixed.content] == ["text", "image"]
    assert mixed.content[0]["text"] == "a\nb"


SCHEMA = {
    "type": "object",
    "properties": {
        "colour": {"type": "string", "enum": ["red", "blue"]},
        "count": {"type": "integer"},
        "sure": {"type": "boolean", "default": False},
        "tags": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["colour"],
}
FORM = {"mode": "form", "message": "Pick", "requestedSchema": SCHEMA}


def test_an_elicitation_is_a_permission_style_question_with_its_schema() -> None:
    question = question_for("srv", FORM, "q1")
    assert question.title == "MCP server 'srv' asks: Pick"
    assert [(c.id, c.kind) for c in question.choices] == [("accept", "allow_once"), ("decline", "reject_once")]
    assert question.meta == {
        "elicitation": {"server": "srv", "mode": "form", "message": "Pick", "requestedSchema": SCHEMA}
    }
    assert "- colour: string, one of red, blue, required" in question.text
    url = question_for("srv", {"mode": "url", "message": "Pay", "url": "https://pay"}, "q2")
    assert url.meta["elicitation"]["url"] == "https://pay" and url.choices[0].name == "Open https://pay"


def test_answers_are_checked_and_converted_against_the_schema() -> None:
    accepted = result_of(Reply("accept", {"content": {"colour": "red", "count": "3", "sure": "true"}}), FORM)
    assert accepted == {"action": "accept", "content": {"colour": "red", "count": 3, "sure": True}}
    assert result_of(Reply("decline"), FORM) == {"action": "decline"}
    assert result_of(Reply(None), FORM) == {"action": "cancel"}
    assert result_of(Reply("accept"), FORM) == {"action": "cancel"}, "no form shown: a required field has no value"
    assert result_of(Reply("accept"), {"mode": "url", "url": "x", "message": ""}) == {"action": "accept"}
    assert form_content(SCHEMA, {"colour": "green"})[1] == "colour: 'green' is not one of ['red', 'blue']"
    assert form_content(SCHEMA, {"colour": "red", "count": "many"})[1] == "count: 'many' is not an integer"
    assert form_content(SCHEMA, {"colour": "red", "tags": ["a", 1]})[1] == "tags: must be a list of strings"
    assert form_content(SCHEMA, {"colour": "blue"}) == ({"colour": "blue", "sure": False}, None)


def test_an_image_whose_data_is_not_the_type_it_says_becomes_a_note_and_a_misnamed_one_its_real_type() -> None:
    """Attack round 7: an MCP server's `image/png` that is text was sent as a PNG, which the API refuses (and then
    every later request of the session, the result being in the history)."""
    text = base64.b64encode(b"hello, not an image at all").decode()
    [fake, misnamed] = blocks_of(
        [
            {"type": "image", "data": text, "mimeType": "image/png"},
            {"type": "image", "data": PNG, "mimeType": "image/gif"},
        ],
        "srv",
    )
    assert fake["type"] == "text" and "not a PNG, JPEG, GIF or WebP" in fake["text"]
    assert misnamed["source"]["media_type"] == "image/png"
