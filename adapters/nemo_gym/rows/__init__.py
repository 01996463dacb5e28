"""NeMo Gym dataset rows for gamebridge tasks (core only: no NeMo Gym import).

A NeMo Gym row is ``{"responses_create_params": {...}, <extra fields>}``; its
agent sends the params to the model and the whole row to the resources
server. The extra field ``task`` carries the task; the params carry what the
model reads before the first move (the agent does not ask the server for it):

* ``gymnasium``: the system prompt (the agent appends ``/reset``'s observation);
* ``tools``: the tool-style system prompt, the first observation and the
  ``make_move`` tool in Responses API form.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from core.conversation import opening
from core.conversation import system as system_message  # `.system(` reads as os.system
from core.episode import Episode
from core.tasks import Task

STYLES = ("gymnasium", "tools")
DONE_HEADER = "x-gamebridge-done"
"""``/make_move`` answers the observation as plain text (what the model reads);
this response header says whether the game is over ("1") or not ("0")."""


def responses_tool(chat_tool: Mapping[str, Any]) -> dict[str, Any]:
    """A chat-completions function tool in the Responses API's flat form."""
    function = chat_tool["function"]
    return {
        "type": "function",
        "name": function["name"],
        "description": function["description"],
        "parameters": function["parameters"],
        "strict": False,
    }


def make_row(task: Task | Mapping[str, Any], style: str = "gymnasium") -> dict[str, Any]:
    """The dataset row that plays ``task`` on a server of ``style``."""
    if style not in STYLES:
        raise ValueError(f"style must be one of {STYLES}, got {style!r}")
    episode = Episode(task)
    if style == "gymnasium":
        params: dict[str, Any] = {"input": [system_message(episode.shared_system_prompt())]}
    else:
        params = {
            "input": opening(episode.shared_system_prompt(tools=True), episode.reset()),
            "tools": [responses_tool(episode.tool_schema)],
        }
    return {"responses_create_params": params, "task": episode.task.to_dict()}
