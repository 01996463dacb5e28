"""The ``gamebridge train`` flags from a settings dataclass: one flag per field
(``--field-name``), its type and default, and its help from the field's
docstring (the string written under the field in the class body), so every
flag in ``--help`` says what it does and a setting is documented once."""

from __future__ import annotations

import argparse
import ast
import inspect
import itertools
import re
import textwrap
from collections.abc import Callable, Mapping, Sequence
from dataclasses import fields
from typing import Any


def field_docs(cls: type) -> dict[str, str]:
    """Each field's docstring's first sentence (whitespace folded, reST quotes
    dropped, ``%`` escaped for argparse), read from ``cls``'s source."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    except (OSError, TypeError):  # no source (a frozen or byte-code-only install): no help
        return {}
    body = tree.body[0].body if tree.body and isinstance(tree.body[0], ast.ClassDef) else []
    docs: dict[str, str] = {}
    for prev, node in itertools.pairwise(body):
        if (
            isinstance(prev, ast.AnnAssign)
            and isinstance(prev.target, ast.Name)
            and isinstance(node, ast.Expr)
            and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)
        ):
            text = " ".join(node.value.value.split())
            text = re.split(r"(?<=\.)\s+(?=[A-Z])", text)[0]  # the first sentence
            text = re.sub(r":\w+:`([^`]*)`", r"\1", text).replace("``", "")  # reST markup
            docs[prev.target.id] = text.replace("%", "%%")
    return docs


def add_settings_arguments(
    p: argparse.ArgumentParser,
    cls: type,
    *,
    choices: Mapping[str, Sequence[str]] | None = None,
    types: Mapping[str, Callable[[str], Any]] | None = None,
    required: Sequence[str] = (),
    negatable: bool = False,
) -> None:
    """A flag per field of the dataclass ``cls`` (``negatable``: booleans get
    ``--x/--no-x``, else ``--x`` sets them); ``choices``/``types``/``required``
    per field name."""
    defaults = cls()
    docs = field_docs(cls)
    for f in fields(cls):
        value = getattr(defaults, f.name)
        flag = "--" + f.name.replace("_", "-")
        help_text = docs.get(f.name, "")
        if isinstance(value, bool):
            action = argparse.BooleanOptionalAction if negatable else "store_true"
            p.add_argument(flag, action=action, default=value, help=help_text)
            continue
        p.add_argument(
            flag,
            type=(types or {}).get(f.name, type(value)),
            default=value,
            required=f.name in required,
            choices=(choices or {}).get(f.name),
            help=help_text,
        )
