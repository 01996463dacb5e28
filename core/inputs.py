"""What a framework hands core, judged in core: a task from a framework's row or
reset arguments, and text a JSON reply could not carry back.

* ``task_from_row``: the task of a dataset row that carries it under ``task``
  (strict: an unknown field is an error) or as its own top-level fields (the
  framework's own columns left out, unknown ones ignored);
* ``task_from_arguments``: the task of a ``reset(task=row)`` or
  ``reset(seed=..., **fields)`` call, never both;
* both refuse a ``task`` that is not a row (a JSON object), and ``Task`` refuses
  a seed outside ``0..core.tasks.MAX_SEED``: one rule for every server;
* ``wrap_arguments``/``unwrap_arguments``: tool-call arguments that are not an
  object carried through a framework that carries objects only (ORS), for core to judge;
* ``require_unicode``: a reply or tool arguments holding a lone UTF-16 surrogate
  are refused (``NotUnicodeError``) before they reach a game: no UTF-8 JSON reply
  could carry them back.

>>> task_from_row({"task": {"game": "nim", "seed": 3}}, "tictactoe").game
'nim'
>>> task_from_arguments("tictactoe", seed=2).seed
2
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from core.tasks import Task, TaskError


class ResetArgumentsError(TaskError, TypeError):
    """``reset`` got a task row and task fields at once."""


class NotUnicodeError(ValueError):
    """A reply or move holding a lone UTF-16 surrogate: not Unicode text."""


def task_from_row(row: Mapping[str, Any], default_game: str, ignore: Iterable[str] = ()) -> Task:
    """The task of ``row``: its ``task`` field (strict), else its top-level fields but
    ``ignore`` (lenient); ``default_game`` where it names none."""
    raw = row.get("task")
    _require_row(raw)
    skip = set(ignore)
    fields = (
        dict(raw) if isinstance(raw, Mapping) else {k: v for k, v in row.items() if k not in skip}
    )
    return Task.from_dict({"game": default_game, **fields}, strict=isinstance(raw, Mapping))


def task_from_arguments(
    default_game: str,
    seed: int | None = None,
    task: Mapping[str, Any] | None = None,
    **fields: Any,
) -> Task:
    """``task`` (a ``Task.to_dict()`` row), or ``default_game`` with ``seed`` and the
    other task ``fields``; strict either way (an unknown field is an error)."""
    if task is not None and fields:
        raise ResetArgumentsError(
            f"pass a task row or task fields, not both (got {sorted(fields)})"
        )
    _require_row(task)
    if task is not None:
        return Task.from_dict(dict(task))
    return Task.from_dict(
        {"game": default_game, **({} if seed is None else {"seed": seed}), **fields}
    )


def _require_row(task: object) -> None:
    """A ``task`` given at all must be a task row (a JSON object): ``"tictactoe"``,
    ``5`` or a list is refused, never read as fields nor replaced by the default game."""
    if task is not None and not isinstance(task, Mapping):
        raise TaskError(
            f"task must be a task row (a JSON object such as "
            f'{{"game": "tictactoe", "seed": 0}}), not {type(task).__name__}: {str(task)[:80]}'
        )


RAW_ARGUMENTS = "gamebridge_raw_arguments"
"""The one key of the object that carries a tool call's arguments when they are not a
JSON object (text that is not JSON, a list, a number) through a framework that carries
objects only (ORS: openreward refused the call, ``bad_input_shape``, and the task
failed). The environment unwraps it and core judges the value: an invalid reply."""


def wrap_arguments(arguments: Any) -> dict[str, Any]:
    """A tool call's decoded arguments as an object: an object as it came, ``None`` (no
    arguments) as ``{}``, anything else under :data:`RAW_ARGUMENTS`.

    >>> wrap_arguments({"move": "c4"}), wrap_arguments("{move: c4")
    ({'move': 'c4'}, {'gamebridge_raw_arguments': '{move: c4'})
    """
    if arguments is None:
        return {}
    if isinstance(arguments, dict) and set(arguments) != {RAW_ARGUMENTS}:
        return arguments
    return {RAW_ARGUMENTS: arguments}


def unwrap_arguments(received: Mapping[str, Any]) -> Any:
    """Inverse of :func:`wrap_arguments`: the arguments the model wrote."""
    if set(received) == {RAW_ARGUMENTS}:
        return received[RAW_ARGUMENTS]
    return dict(received)


def require_unicode(value: Any) -> Any:
    """``value`` unchanged, unless a string in it (keys included) holds a lone surrogate."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise NotUnicodeError(
                f"the action holds a lone UTF-16 surrogate at index {exc.start}: not Unicode"
            ) from None
    elif isinstance(value, dict):
        for key, item in value.items():
            require_unicode(key), require_unicode(item)
    elif isinstance(value, list):
        for item in value:
            require_unicode(item)
    return value


__all__ = [
    "RAW_ARGUMENTS",
    "NotUnicodeError",
    "ResetArgumentsError",
    "require_unicode",
    "task_from_arguments",
    "task_from_row",
    "unwrap_arguments",
    "wrap_arguments",
]
