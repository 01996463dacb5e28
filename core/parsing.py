"""Reading a move out of a model's reply.

Replies look like ``<think>...</think><move>c4</move>``. The parser is strict by
default and refuses to guess: no ``<move>`` tag, two of them, a tag left open,
or a move findable only in prose is a format failure (``FormatError``), never
a guess. Whether the move inside the tag is a move at all, and a legal one, is
the game's business (``InvalidMoveError``, ``IllegalMoveError``): format
compliance is reported apart from legality.

The parser is linear in the reply's length (plain ``str.find``, no
backtracking regex), so a 1 MB reply costs microseconds, not seconds.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

THINK_OPEN, THINK_CLOSE = "<think>", "</think>"
MOVE_OPEN, MOVE_CLOSE = "<move>", "</move>"
MAX_MOVE_CHARS = 64
"""A move is a short token; longer tag contents are a format failure."""


class FormatError(ValueError):
    """The reply does not follow the required ``<think>``/``<move>`` format."""


class ToolArgumentsError(FormatError):
    """A ``make_move`` tool call's arguments are not ``{"move": <text>}``: not a
    JSON object, no ``move`` key, other keys, or a ``move`` that is not text."""


TOOL_ARGUMENT = "move"
"""The one argument of the ``make_move`` tool (``core.prompts.tool_schema``)."""


@dataclass(frozen=True)
class ParsedReply:
    """A well-formed reply: the move text (stripped) and the reasoning, if any."""

    move: str
    think: str | None


def parse_reply(text: str, *, think_required: bool = False, lenient: bool = False) -> ParsedReply:
    """Parse a reply into its move text; raise ``FormatError`` when malformed.

    ``think_required``: the reply must begin with one ``<think>...</think>``.
    ``lenient`` (opt-in): a reply with no tags at all that is a single short
    token is taken as the move.

    >>> parse_reply("<think>corner</think> <move>a1</move>")
    ParsedReply(move='a1', think='corner')
    >>> parse_reply("I play c4")
    Traceback (most recent call last):
    ...
    core.parsing.FormatError: no <move>...</move> tag in the reply
    """
    if not isinstance(text, str):
        raise FormatError(f"a reply must be text, not {type(text).__name__}")
    think: str | None = None
    body = text
    start = text.find(THINK_OPEN)
    if start != -1:
        if text[:start].strip():
            raise FormatError("text before <think>; the reply must begin with <think>")
        end = text.find(THINK_CLOSE, start)
        if end == -1:
            raise FormatError("<think> is never closed")
        think = text[start + len(THINK_OPEN) : end].strip()
        body = text[end + len(THINK_CLOSE) :]
        if THINK_OPEN in body or THINK_CLOSE in body:
            raise FormatError("more than one <think> block")
    elif THINK_CLOSE in text:
        raise FormatError("</think> without <think>")
    elif think_required:
        raise FormatError("the reply must begin with <think>...</think>")

    count = body.count(MOVE_OPEN)
    if count == 0:
        if MOVE_CLOSE in body:
            raise FormatError("</move> without <move>")
        stripped = body.strip()
        if (
            lenient
            and stripped
            and len(stripped) <= MAX_MOVE_CHARS
            and stripped.isprintable()
            and "<" not in stripped
            and len(stripped.split()) == 1
        ):
            return ParsedReply(stripped, think)
        raise FormatError("no <move>...</move> tag in the reply")
    if count > 1:
        raise FormatError(f"{count} <move> tags; give exactly one move")
    open_at = body.find(MOVE_OPEN)
    close_at = body.find(MOVE_CLOSE, open_at)
    if close_at == -1:
        raise FormatError("<move> is never closed")
    if body.count(MOVE_CLOSE) > 1:
        raise FormatError("more than one </move>")
    move = body[open_at + len(MOVE_OPEN) : close_at].strip()
    if not move:
        raise FormatError("the <move> tag is empty")
    if len(move) > MAX_MOVE_CHARS or "<" in move or ">" in move or "\n" in move:
        raise FormatError("the <move> tag holds more than one move token")
    return ParsedReply(move, think)


def decode_tool_arguments(raw: object) -> object:
    """A tool call's arguments as a framework received them (the JSON text the model
    wrote, or an already decoded value) -> the JSON value ``parse_tool_arguments`` and
    ``Episode.step_tool`` judge: blank text is no arguments (``None``), text that is
    not JSON stays the text (to be rejected as not an object, and recorded as it came).

    >>> decode_tool_arguments('{"move": "c4"}')
    {'move': 'c4'}
    >>> decode_tool_arguments("{move: c4")
    '{move: c4'
    >>> decode_tool_arguments("  ") is None
    True
    """
    if not isinstance(raw, str):
        return raw
    if not raw.strip():
        return None
    try:
        return json.loads(raw)
    except ValueError:
        return raw


def parse_tool_arguments(arguments: object) -> str:
    """The move text of a ``make_move`` call's arguments, as the framework decoded
    them from the model's JSON (any JSON value). Exactly ``{"move": "<text>"}``
    is a move; anything else is a ``ToolArgumentsError`` (the schema is strict and
    the parser refuses to guess: a number is not a move text, an extra key is not
    ignored). JSON ``null`` is no arguments at all, an object without ``move``
    (TRL and OpenAI clients turn a missing ``arguments`` into ``{}``). The move
    text itself is the game's to judge.

    >>> parse_tool_arguments({"move": "c4"})
    'c4'
    >>> parse_tool_arguments({"move": 4})
    Traceback (most recent call last):
    ...
    core.parsing.ToolArgumentsError: the "move" argument must be a string, not int (4)
    """
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        raise ToolArgumentsError(
            f'the arguments must be a JSON object {{"{TOOL_ARGUMENT}": ...}}, '
            f"not {_json_type(arguments)}"
        )
    if TOOL_ARGUMENT not in arguments:
        keys = ", ".join(sorted(repr(k) for k in arguments)[:8]) or "none"
        raise ToolArgumentsError(f'the arguments have no "{TOOL_ARGUMENT}" key (keys: {keys})')
    extra = sorted(repr(k) for k in arguments if k != TOOL_ARGUMENT)
    if extra:
        raise ToolArgumentsError(
            f'unexpected arguments {", ".join(extra[:8])}: give only "{TOOL_ARGUMENT}"'
        )
    move = arguments[TOOL_ARGUMENT]
    if not isinstance(move, str):
        shown = repr(move)
        shown = shown if len(shown) <= 40 else shown[:37] + "..."
        raise ToolArgumentsError(
            f'the "{TOOL_ARGUMENT}" argument must be a string, not {_json_type(move)} ({shown})'
        )
    return move


def _json_type(value: object) -> str:
    """A value's JSON type name (what the model wrote), else its Python type."""
    names = {bool: "boolean", int: "int", float: "float", str: "string", list: "list"}
    if value is None:
        return "null"
    if isinstance(value, dict):
        return "object"
    return names.get(type(value), type(value).__name__)


def format_reply(move: str, think: str | None = None) -> str:
    """The canonical well-formed reply for ``move`` (used by scripted players)."""
    prefix = f"{THINK_OPEN}{think}{THINK_CLOSE}\n" if think is not None else ""
    return f"{prefix}{MOVE_OPEN}{move}{MOVE_CLOSE}"
