"""The ``gamebridge`` parser's parts: defaults, the help formatter, strict
subcommands, and the argument types (a bad value is one line and exit status 2)."""

from __future__ import annotations

import argparse
import copy
from collections.abc import Callable
from typing import Any

from rollouts.frameworks import aliases as framework_aliases

DEFAULT_EVAL_POLICY = "minimax:2"
DEFAULT_COMPARE_POLICY = "noisy:0.3/minimax:1"
"""Compare and demo use a noisy player so malformed and illegal replies are
exercised too (the conformance suite's policy)."""
DEMO_GAMES = ("tictactoe", "othello")
DEMO_POLICY = "noisy:0.1/minimax:1"
"""Less noise than compare's default, so that Othello games are played out
rather than forfeited after four bad replies."""
FRAMEWORK_ALIASES = framework_aliases()
"""Other names a framework goes by (its pip extra): ``--framework skyrl`` runs
``skyrl_gym`` (the manifest's ``aliases``, ``rollouts.frameworks``)."""
POLICY_HELP = "random | minimax:D | noisy:P[/minimax:D] (D 1..12, P 0..1)"
OPPONENT_CHOICES = ("random", "minimax", "mcts")
"""The built-in opponents ``--opponent`` offers (``core.tasks.OPPONENTS``; the play
page offers the same)."""


def _game_help() -> str:
    from core import list_games

    return f"{', '.join(list_games())}, or openspiel:NAME (e.g. openspiel:hex(board_size=7))"


def _framework_help() -> str:
    from rollouts.drivers import DRIVERS

    return ", ".join(DRIVERS)


# --- the parser: one line for a bad value, the subcommand's usage for a bad flag ------


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Every option's help ends with its default (unless it says one already)."""

    def _format_action(self, action: argparse.Action) -> str:
        text = action.help or ""
        if (
            action.option_strings
            and action.help is not argparse.SUPPRESS
            and action.default is not None
            and action.default is not argparse.SUPPRESS
            and action.default != ""
            and (action.default is not False or isinstance(action, argparse.BooleanOptionalAction))
            and "(default" not in text
        ):
            action = copy.copy(action)
            action.help = f"{text} (default: %(default)s)".strip()
        return super()._format_action(action)


class _SubParsers(argparse._SubParsersAction):  # type: ignore[type-arg]
    """Subcommands parsed strictly, so that a misspelt flag is reported with the
    subcommand's own usage (argparse hands unknown flags up to the top parser,
    whose usage says nothing about them)."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        name, rest = values[0], values[1:]
        chosen = self._name_parser_map.get(name)
        if chosen is None:  # argparse's own "invalid choice" error
            super().__call__(parser, namespace, values, option_string)
            return
        if self.dest is not argparse.SUPPRESS:
            setattr(namespace, self.dest, name)
        for key, value in vars(chosen.parse_args(rest)).items():
            setattr(namespace, key, value)


class Parser(argparse.ArgumentParser):
    """``argparse`` with :class:`HelpFormatter`, strict subcommands, and one line
    (no usage) for a bad value of a flag; other errors show the usage."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kwargs)
        self.register("action", "parsers", _SubParsers)

    def error(self, message: str) -> Any:  # -> NoReturn
        if message.startswith("argument -"):  # a flag's value: the line says it all
            self.exit(2, f"{self.prog}: error: {message}\n")
        super().error(message)


def _game(text: str) -> str:
    """``--game``: a name ``make_game`` can make (else exit 2 with one line)."""
    from core.games import game_arg

    return game_arg(text)


def _games(text: str) -> list[str]:
    """``--games``: comma-separated names (commas inside brackets belong to an
    OpenSpiel name's parameters), each checked like ``--game``."""
    names, depth, current = [], 0, ""
    for ch in text:
        depth += (ch == "(") - (ch == ")")
        if ch == "," and depth == 0:
            names.append(current)
            current = ""
        else:
            current += ch
    names.append(current)
    return [_game(n.strip()) for n in names if n.strip()]


def _framework(text: str) -> str:
    """``--framework``: a registered driver name (or an alias such as ``skyrl``)."""
    from rollouts.drivers import DRIVERS

    name = text.strip().replace("-", "_")
    name = FRAMEWORK_ALIASES.get(name, name)
    if name not in DRIVERS:
        aliases = ", ".join(f"{k} = {v}" for k, v in FRAMEWORK_ALIASES.items())
        raise argparse.ArgumentTypeError(
            f"unknown framework {text!r}; known: {', '.join(DRIVERS)} ({aliases})"
        )
    return name


def _frameworks_arg(text: str) -> list[str]:
    """``--frameworks``: comma-separated, each checked like ``--framework``."""
    names = [_framework(x) for x in text.split(",") if x.strip()]
    if not names:
        raise argparse.ArgumentTypeError("no framework named")
    return names


def _policy(text: str) -> str:
    """``--policy``: a scripted policy ``core.players.Policy`` can parse."""
    from core.players import Policy

    try:
        Policy.parse(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(f"{e}; a policy is {POLICY_HELP}") from None
    return text


def _depth(text: str) -> int:
    """``--depth``: the opponent's search depth (MCTS: its level), 1..12."""
    value = _at_least(1)(text)
    if value > 12:
        raise argparse.ArgumentTypeError(f"a depth is 1..12, not {value}")
    return value


def _at_least(low: int) -> Callable[[str], int]:
    def check(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"must be at least {low}, not {value}")
        return value

    check.__name__ = f"int>={low}"
    return check


_positive = _at_least(1)


def _port(text: str) -> int:
    value = _at_least(0)(text)
    if value > 65535:
        raise argparse.ArgumentTypeError(f"a port is 0..65535, not {value}")
    return value
