"""MCP content as the model's content blocks: text kept, images the Messages API takes (jpeg, png, gif, webp)
kept as images, anything else (svg, audio, binary) replaced by a note saying what it was; resource links
become a line naming the server and URI, so the model can read them with ReadMcpResourceTool.

Works on the SDK's content models as plain dicts (`model_dump(by_alias=True)`), so nothing here imports it.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from pathlib import Path
from typing import Any

from bridge.messages import image_media_type
from bridge.tools.base import ToolResult
from bridge.transcript import private_dir, private_opener

API_IMAGE_TYPES = frozenset({"image/jpeg", "image/png", "image/gif", "image/webp"})
MAX_IMAGE_BYTES = 5 * 1024 * 1024  # the Messages API's limit for one base64 image


def blocks_of(items: list[dict[str, Any]], server: str, *, data_dir: Path | None = None) -> list[dict[str, Any]]:
    """Content blocks for `items` (tool result, prompt message, or resource contents)."""
    out: list[dict[str, Any]] = []
    for item in items:
        kind = item.get("type")
        if kind == "text":
            out.append(_text(str(item.get("text", ""))))
        elif kind == "image":
            out.append(image_block(item.get("data"), str(item.get("mimeType") or "image/png")))
        elif kind == "audio":
            out.append(
                _text(
                    f"[audio content ({item.get('mimeType') or 'audio'}, {_size(item.get('data'))}) "
                    "omitted: the model cannot take audio]"
                )
            )
        elif kind == "resource" and isinstance(item.get("resource"), dict):
            out.extend(resource_blocks([item["resource"]], server, data_dir=data_dir))
        elif kind == "resource_link":
            out.append(_text(link_text(item, server)))
        else:
            out.append(_text(f"[{kind} content omitted]"))
    return out


def resource_blocks(contents: list[dict[str, Any]], server: str, *, data_dir: Path | None) -> list[dict[str, Any]]:
    """`resources/read` contents (or an embedded resource): text as text, images as images, other binary
    saved to a file under `data_dir` when there is one, else described."""
    out: list[dict[str, Any]] = []
    for content in contents:
        uri = str(content.get("uri", "resource"))
        mime = str(content.get("mimeType") or "")
        if isinstance(content.get("text"), str):
            out.append(_text(f"[{uri}]\n{content['text']}"))
            continue
        blob = content.get("blob")
        if mime in API_IMAGE_TYPES or mime == "image/svg+xml":
            out.append(_text(f"[{uri}]"))
            out.append(image_block(blob, mime))
            continue
        raw = _decode(blob)
        if raw is None:
            out.append(_text(f"[{uri}: no readable content]"))
        elif data_dir is not None:
            path = save_blob(data_dir, uri, raw)
            out.append(_text(f"[{uri}: binary content ({mime or 'unknown type'}, {len(raw):,} bytes) saved to {path}]"))
        else:
            out.append(_text(f"[{uri}: binary content ({mime or 'unknown type'}, {len(raw):,} bytes) omitted]"))
    return out


def image_block(data: Any, mime: str) -> dict[str, Any]:
    """An image block when the API takes it; else a note with what it was and its size."""
    raw = _decode(data)
    if raw is None:
        return _text(f"[{mime} image omitted: its data is not valid base64]")
    if mime not in API_IMAGE_TYPES:
        return _text(f"[{mime} image omitted ({len(raw):,} bytes): the model takes only jpeg, png, gif and webp]")
    if len(data) > MAX_IMAGE_BYTES:
        return _text(f"[{mime} image omitted ({len(raw):,} bytes): over the model's 5 MB limit for an image]")
    sniffed = image_media_type(raw[:16])
    if sniffed is None:  # the API refuses data that is not the image it says it is
        return _text(f"[{mime} image omitted ({len(raw):,} bytes): its data is not a PNG, JPEG, GIF or WebP image]")
    return {"type": "image", "source": {"type": "base64", "media_type": sniffed, "data": data}}


def link_text(item: dict[str, Any], server: str) -> str:
    name = item.get("title") or item.get("name") or ""
    mime = f", {item['mimeType']}" if item.get("mimeType") else ""
    about = f": {item['description']}" if item.get("description") else ""
    return (
        f"[resource link {name!s} ({item.get('uri', '')}{mime}){about} — read it with ReadMcpResourceTool "
        f"(server {server!r}, uri {item.get('uri', '')!r})]"
    )


def tool_result(result: dict[str, Any], server: str, *, data_dir: Path | None) -> ToolResult:
    """A `CallToolResult` (as a dict) as the model's tool_result."""
    items = [c for c in result.get("content") or [] if isinstance(c, dict)]
    blocks = blocks_of(items, server, data_dir=data_dir)
    if not blocks and result.get("structuredContent") is not None:
        blocks.append(_text(json.dumps(result["structuredContent"], ensure_ascii=False, indent=2)))
    is_error = result.get("isError") is True
    raw = {"content_items": len(items)}
    if any(b["type"] == "image" for b in blocks):
        return ToolResult(_merge_text(blocks), is_error=is_error, raw_output=raw)
    text = "\n".join(b["text"] for b in blocks)
    return ToolResult(text if blocks else "(no output)", is_error=is_error, raw_output=raw)


def save_blob(data_dir: Path, uri: str, raw: bytes) -> Path:
    digest = hashlib.sha256(uri.encode()).hexdigest()[:12]
    tail = "".join(c if c.isalnum() or c in "._-" else "_" for c in uri.rsplit("/", 1)[-1])[:60] or "resource"
    path = data_dir / "mcp-resources" / f"{digest}-{tail}"
    private_dir(path.parent)  # the data dir's: its owner's alone
    with open(path, "wb", opener=private_opener) as out:
        out.write(raw)
    return path


def _merge_text(blocks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Consecutive text blocks joined by newlines (fewer, larger blocks for the model)."""
    out: list[dict[str, Any]] = []
    for block in blocks:
        if block["type"] == "text" and out and out[-1]["type"] == "text":
            out[-1] = _text(out[-1]["text"] + "\n" + block["text"])
        else:
            out.append(block)
    return out


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def _decode(data: Any) -> bytes | None:
    if not isinstance(data, str):
        return None
    try:
        return base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return None


def _size(data: Any) -> str:
    raw = _decode(data)
    return f"{len(raw):,} bytes" if raw is not None else "unknown size"
