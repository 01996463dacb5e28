"""The chat conversation of an episode: what the model read and what it said.

One home for the OpenAI-style messages every exporter, trainer and driver
builds: the system prompt, the observations (``user`` messages in text mode,
``tool`` results in tool mode), the assistant's replies (text, or a
``make_move`` call). A trajectory (``Episode.to_dict()``) records the
observation each reply answered, so :func:`messages` rebuilds the chat from the
record alone: nothing is replayed.

>>> from core.episode import Episode
>>> episode = Episode({"game": "tictactoe", "seed": 1})
>>> _ = episode.reset()
>>> _ = episode.step("<move>4</move>")
>>> [m["role"] for m in messages(episode.to_dict())]
['system', 'user', 'assistant', 'user']
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from core.events import TOOL
from core.games import make_game
from core.parsing import decode_tool_arguments
from core.prompts import TOOL_NAME, system_prompt
from core.tasks import Task

if TYPE_CHECKING:
    from core.episode import Episode

SYSTEM = "system"
USER = "user"
ASSISTANT = "assistant"
TOOL_ROLE = "tool"


class ConversationError(ValueError):
    """A trajectory lacks what the conversation needs (a record written before
    events carried their observation)."""


def system(content: str) -> dict[str, Any]:
    return {"role": SYSTEM, "content": content}


def opening(system_prompt_text: str, observation: str) -> list[dict[str, Any]]:
    """The first two messages: the system prompt and the first observation."""
    return [system(system_prompt_text), {"role": USER, "content": observation}]


def call_id(turn: int) -> str:
    """The id of turn ``turn``'s tool call where the framework gave none."""
    return f"call_{turn}"


def assistant_text(reply: str) -> dict[str, Any]:
    return {"role": ASSISTANT, "content": reply}


def assistant_tool_call(arguments: Any, ident: str) -> dict[str, Any]:
    """An assistant turn calling ``make_move`` with ``arguments`` (JSON text in
    the message, as OpenAI clients send it)."""
    return {
        "role": ASSISTANT,
        "content": "",
        "tool_calls": [
            {
                "id": ident,
                "type": "function",
                "function": {"name": TOOL_NAME, "arguments": json.dumps(arguments)},
            }
        ],
    }


def observation(content: str, *, tool_call_id: str | None = None) -> dict[str, Any]:
    """An observation: a ``tool`` result answering ``tool_call_id``, else a
    ``user`` message."""
    if tool_call_id is not None:
        return {"role": TOOL_ROLE, "tool_call_id": tool_call_id, "content": content}
    return {"role": USER, "content": content}


def tool_mode(trajectory: Mapping[str, Any]) -> bool:
    """Whether the model moved by tool call (any event of kind ``tool``)."""
    return any(e.get("kind") == TOOL for e in trajectory.get("events") or [])


def tool_arguments(event: Mapping[str, Any]) -> Any:
    """A tool event's call arguments: the raw ones of a rejected (format) call,
    else ``{"move": <move text>}``."""
    return event["reply"] if event.get("error") == "format" else {"move": event["reply"]}


def seat_view(trajectory: Mapping[str, Any], seat: int | None = None) -> Mapping[str, Any]:
    """A trajectory as one outside seat lived it. A trajectory with several
    outside seats (``Task.seats``: a ``seats`` entry) interleaves them; this keeps
    ``seat``'s events (default: the model's seat, ``model_player``), its system
    prompt and its own last observation, so the other functions here read one
    seat's conversation. A one-seat trajectory comes back as it is."""
    if "seats" not in trajectory:
        return trajectory
    seat = int(trajectory["model_player"]) if seat is None else seat
    task = Task.from_dict(trajectory["task"], strict=False)
    return {
        **{k: v for k, v in trajectory.items() if k != "seats"},
        "model_player": seat,
        "system_prompt": system_prompt(make_game(task.game), task, seat=seat),
        "events": [e for e in trajectory.get("events") or [] if e.get("seat") == seat],
        "observation": trajectory["seats"]["observations"][str(seat)],
    }


def system_prompt_of(trajectory: Mapping[str, Any], *, tools: bool) -> str:
    """The system prompt the model read: the recorded one in text mode, the
    tool-mode prompt of the trajectory's task otherwise."""
    trajectory = seat_view(trajectory)
    if not tools:
        return str(trajectory["system_prompt"])
    task = Task.from_dict(trajectory["task"], strict=False)
    return system_prompt(
        make_game(task.game), task, tools=True, seat=int(trajectory["model_player"])
    )


def observations(trajectory: Mapping[str, Any]) -> list[str]:
    """Every observation in order: the one each reply answered, then the one
    after the last reply (the final observation once the game is over); one
    seat's (:func:`seat_view`) where the trajectory has several."""
    trajectory = seat_view(trajectory)
    events = list(trajectory.get("events") or [])
    missing = [i + 1 for i, e in enumerate(events) if "observation" not in e]
    if missing or "observation" not in trajectory:
        raise ConversationError(
            f"{trajectory.get('task_id')}: the trajectory records no observations "
            "(written before events carried them); run the episodes again"
        )
    return [str(e["observation"]) for e in events] + [str(trajectory["observation"])]


def final_observation(trajectory: Mapping[str, Any]) -> str:
    """The observation after the last reply (the game's end, once done)."""
    return observations(trajectory)[-1]


def messages(
    trajectory: Mapping[str, Any],
    *,
    tools: bool | None = None,
    closing: bool = False,
    seat: int | None = None,
) -> list[dict[str, Any]]:
    """The chat messages of a recorded episode, as the model saw and said them.

    ``tools``: tool mode (default: :func:`tool_mode`). The observation after
    the last reply is left out once the game is over (the model never answered
    it), unless ``closing``: then it follows, as a tool result in tool mode.
    Tool calls get the ids ``call_<turn>``. ``seat``: with several outside seats,
    whose conversation (:func:`seat_view`; default the model's seat)."""
    trajectory = seat_view(trajectory, seat)
    tools = tool_mode(trajectory) if tools is None else tools
    seen = observations(trajectory)
    out = opening(system_prompt_of(trajectory, tools=tools), seen[0])
    events = list(trajectory.get("events") or [])
    for i, event in enumerate(events):
        ident = call_id(i + 1)
        if event.get("kind") == TOOL:
            out.append(assistant_tool_call(tool_arguments(event), ident))
        else:
            out.append(assistant_text(str(event["reply"])))
        if i + 1 < len(events) or not trajectory.get("done") or closing:
            out.append(observation(seen[i + 1], tool_call_id=ident if tools else None))
    return out


def decisions(messages_: Sequence[Mapping[str, Any]]) -> list[tuple[str, str]]:
    """Each text reply of a chat and the observation it answered (the last ``user`` or
    ``tool`` message before it): the one-decision rows a model trained on the last
    observation alone learns from. Tool calls and empty replies are not text decisions.

    >>> decisions([system("rules"), {"role": "user", "content": "board 1"},
    ...            assistant_text("<move>4</move>"), {"role": "user", "content": "board 2"},
    ...            assistant_text("<move>0</move>")])
    [('board 1', '<move>4</move>'), ('board 2', '<move>0</move>')]
    """
    out: list[tuple[str, str]] = []
    seen: str | None = None
    for m in messages_:
        if m.get("role") in (USER, TOOL_ROLE):
            seen = str(m.get("content") or "")
        elif m.get("role") == ASSISTANT and m.get("content") and seen is not None:
            out.append((seen, str(m["content"])))
    return out


def as_turns(messages_: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Messages in one schema (``role``, ``content``, ``tool_calls``), tool-call
    arguments as objects (chat templates render them with ``tojson``)."""
    out = []
    for m in messages_:
        calls = None
        if m.get("tool_calls"):
            calls = []
            for c in m["tool_calls"]:
                fn = dict(c.get("function") or {})
                args = fn.get("arguments")
                if isinstance(args, str):
                    args = json.loads(args) if args.strip() else {}
                calls.append(
                    {"type": "function", "function": {"name": fn.get("name"), "arguments": args}}
                )
        out.append({"role": m["role"], "content": m.get("content") or "", "tool_calls": calls})
    return out


def answer_tool_calls(
    episode: Episode, calls: Sequence[tuple[str, object]]
) -> list[dict[str, Any]]:
    """Play one reply's tool calls on ``episode``, in order, each ``(id, arguments)`` with
    the arguments as the model wrote them (core judges them: ``decode_tool_arguments``,
    then ``Episode.answer_tool``); the tool messages answering them. A reply without a call
    stopped playing: core settles the game. A call after the game ended is not played:
    it is answered with the final observation."""
    if not calls:
        episode.settle()
    answers = []
    for ident, arguments in calls:
        answer = episode.answer_tool(decode_tool_arguments(arguments))
        answers.append(observation(answer, tool_call_id=ident))
    return answers


__all__ = [
    "ASSISTANT",
    "SYSTEM",
    "TOOL_ROLE",
    "USER",
    "ConversationError",
    "answer_tool_calls",
    "as_turns",
    "assistant_text",
    "assistant_tool_call",
    "call_id",
    "final_observation",
    "messages",
    "observation",
    "observations",
    "opening",
    "seat_view",
    "system",
    "system_prompt_of",
    "tool_arguments",
    "tool_mode",
]
