"""One mapping from a coding session's messages to the context engine, shared by every driver.

The `ours` replay strategy (a transcript) and `ectx gateway` (live Claude Code requests) both
turn messages into `replay.flow` blocks and hand them to a `ContextEngine` here, so what the
benchmark measures is what the gateway does. Read results go in as file reads (so repeats
become references or diffs), the model's own changes (`Block.file_change`) as edits, Skill
loads as skills (the Skill tool's result, or the skill body Claude Code sends as a user
message), everything else as tool results. An assistant block that carries the API dict it
came from (`Block.raw`, the gateway's case) goes in as that dict, so thinking signatures and
fields the engine does not know survive. So do images and documents (`Block.media`), in a
user message or in a tool result's content (an image Read is no file read): the engine sends
them as they came and keeps them. The replay has no such dict (the reader keeps no image
bytes): a stand-in of the block's content key goes in, priced by key and tokens as the
image would be. A result that holds a secret (by its file's name or its text,
model/secrets.py) goes in as it came too, kept and stored nowhere: no id names it; so does
the model's call that writes one.

API:
- `feed_message(...)`: one message of a session into the engine.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from ephemeral_context.claude_tools import SKILL_TOOLS, client_path
from ephemeral_context.context.engine import BlockKind, ContextEngine, ToolOutput
from ephemeral_context.context.skills import HARNESS_HEADER
from ephemeral_context.context.state import as_written
from ephemeral_context.model.secrets import SecretPolicy, find_secret
from ephemeral_context.replay.flow import Block, FileChange, Message

ASSISTANT_TYPES = frozenset({"text", "thinking", "tool_use"})
_SECRETS = SecretPolicy()
"""The built-in secret file names, for a driver that knows no user settings (the replay, the
standalone gateway); the hosted gateway passes the editor's (`secretPatterns`)."""


def after_change(change: FileChange) -> str | None:
    """The whole file after the model's change, when the messages let us know it."""
    if change.content is not None:
        return change.content
    if change.original is None:
        return None
    text = change.original
    for replacement in change.replacements:
        text = replacement.apply(text)
    return text


def api_block(block: Block) -> dict[str, Any]:
    """The Messages API shape of an assistant block: the dict it came from when known."""
    if block.raw is not None:
        return {k: v for k, v in block.raw.items() if k != "cache_control"}
    if block.type == "tool_use":
        return {
            "type": "tool_use",
            "id": block.tool_use_id,
            "name": block.tool,
            "input": dict(block.tool_input or {}),
        }
    if block.type == "thinking":
        return {"type": "thinking", "thinking": block.text, "signature": ""}
    return {"type": "text", "text": block.text or " "}


def feed_message(
    engine: ContextEngine, conv: str, message: Message, secrets: SecretPolicy = _SECRETS
) -> None:
    """Append one message of the session to conversation `conv` of the engine; `secrets`
    names the files whose content is never stored."""
    if message.role == "assistant":
        blocks = [b for b in message.blocks if b.type in ASSISTANT_TYPES]
        engine.add_assistant_content(
            conv,
            [api_block(b) for b in blocks],
            tokens=[b.tokens for b in blocks],
            unstored={
                n
                for n, b in enumerate(blocks)
                if b.type == "tool_use" and holds_secret(b, secrets, engine.config.follow_path)
            },
        )
        return
    for block in message.blocks:
        if block.type == "tool_result":
            feed_result(engine, conv, block, secrets)
        elif block.type == "text" and block.text.startswith(HARNESS_HEADER):
            engine.add_user_content(conv, block.text, kind="skill", tokens=block.tokens)
        elif block.type in ("text", "hidden"):
            engine.add_user_text(conv, block.text or " ", tokens=block.tokens)
        else:  # an image or a document
            engine.add_user_block(conv, media_block(block), tokens=block.tokens)


def media_block(block: Block) -> dict[str, Any]:
    """An image or document as the client sent it (`Block.raw`), else a stand-in of its key."""
    return dict(block.raw) if block.raw is not None else _stand_in(block)


def media_parts(block: Block) -> list[Mapping[str, Any]]:
    """The content list of a tool result carrying images, as the client sent it (`Block.raw`),
    else its text and a stand-in of its key."""
    if block.raw is not None:
        content = block.raw.get("content")
        return list(content) if isinstance(content, list) else []
    text = [{"type": "text", "text": block.text}] if block.text else []
    return [*text, _stand_in(block)]


def _stand_in(block: Block) -> dict[str, Any]:
    return {"type": "image", "source": {"type": "stand-in", "key": block.key}}


def holds_secret(
    block: Block, secrets: SecretPolicy = _SECRETS, follow: Callable[[str], str] = as_written
) -> bool:
    """A tool call or result of a file whose name marks it secret (a file tool's, or one a
    shell command names: `head .env` shows it as a Read would; or the name of the file it
    leads to, `follow`ing links: EngineConfig.follow_path), or whose text (or the file
    after the change it made) holds a well-known secret (model/secrets.py). The client sent
    it; the engine sends it as it came and stores it nowhere, so no id names it and no fetch
    by id (a Read of /.ectx/) can return it."""
    view, change = block.file_view, block.file_change
    paths = [p for p in (block.path, view and view.path, change and change.path) if p]
    paths += _command_words(block)
    texts = [block.text, change and after_change(change)]
    named = {q for p in paths for q in (p, follow(p))}
    return any(secrets.path_reason(client_path(p)) for p in named) or any(
        find_secret(text) for text in texts if text
    )


_WORDS = re.compile(r"[^\s'\"`=<>|;&()]+")
MAX_COMMAND_SCANNED = 10_000
"""Characters of a shell command whose words are checked against the secret names."""


def _command_words(block: Block) -> set[str]:
    """The words of the shell command a call ran (Bash's `command`), each maybe a path:
    those before a heredoc's body, which is data (a file written so can be megabytes)."""
    command = (block.tool_input or {}).get("command")
    if not isinstance(command, str):
        return set()
    return set(_WORDS.findall(command.split("<<", 1)[0][:MAX_COMMAND_SCANNED]))


def feed_result(
    engine: ContextEngine, conv: str, block: Block, secrets: SecretPolicy = _SECRETS
) -> None:
    """A tool_result block: a Read as a file read, an edit as an edit, one carrying images
    as it came, one holding a secret as it came too, the rest as output."""
    tool_use_id = block.tool_use_id or ""
    view, change = block.file_view, block.file_change
    if block.media:
        result = ToolOutput(
            tool_use_id, block.text, is_error=block.is_error, tokens=block.tokens,
            parts=media_parts(block),
        )  # fmt: skip
    elif holds_secret(block, secrets, engine.config.follow_path):
        result = ToolOutput(
            tool_use_id, block.text, is_error=block.is_error, tokens=block.tokens, unstored=True
        )
    elif view is not None and not block.is_error:
        result = ToolOutput(
            tool_use_id, block.text, BlockKind.FILE, uri=engine.config.file_uri(view.path),
            content=view.content, start_line=view.start_line, whole=view.whole_file,
            tokens=block.tokens,
        )  # fmt: skip
    elif change is not None and not block.is_error:
        result = ToolOutput(
            tool_use_id, block.text, BlockKind.EDIT, uri=engine.config.file_uri(change.path),
            content=after_change(change), tokens=block.tokens,
        )  # fmt: skip
    else:
        kind = BlockKind.SKILL if block.tool in SKILL_TOOLS else BlockKind.TOOL_RESULT
        result = ToolOutput(
            tool_use_id, block.text, kind, is_error=block.is_error, tokens=block.tokens
        )
    engine.add_tool_result(conv, result)
