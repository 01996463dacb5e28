"""The reply parser: strict by default, linear time, format apart from legality."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from core.parsing import FormatError, ParsedReply, format_reply, parse_reply

GOOD = [
    ("<move>c4</move>", "c4", None),
    ("<think>take the corner</think><move>a1</move>", "a1", "take the corner"),
    ("<think>\nhm\n</think>\n\n<move> 5 </move>", "5", "hm"),
    ("I will play <move>7</move> now.", "7", None),
    ("<think>maybe <move>b2</move>?</think><move>c3</move>", "c3", "maybe <move>b2</move>?"),
]
BAD = [
    ("", "no <move>"),
    ("c4", "no <move>"),
    ("I play c4", "no <move>"),
    ("<move></move>", "empty"),
    ("<move>c4</move><move>d3</move>", "2 <move> tags"),
    ("<move>c4", "never closed"),
    ("c4</move>", "without <move>"),
    ("<move><move>c4</move></move>", "2 <move> tags"),
    ("<move>c4 d3\ne6</move>", "more than one move"),
    ("<think>unclosed <move>c4</move>", "never closed"),
    ("text <think>a</think><move>c4</move>", "before <think>"),
    ("</think><move>c4</move>", "without <think>"),
    ("<think>a</think><think>b</think><move>c4</move>", "more than one <think>"),
    ("<move>" + "x" * 65 + "</move>", "more than one move"),
]


@pytest.mark.parametrize(("reply", "move", "think"), GOOD)
def test_well_formed_replies(reply: str, move: str, think: str | None) -> None:
    assert parse_reply(reply) == ParsedReply(move, think)


@pytest.mark.parametrize(("reply", "reason"), BAD, ids=[repr(b[0])[:30] for b in BAD])
def test_malformed_replies_are_rejected_not_guessed(reply: str, reason: str) -> None:
    with pytest.raises(FormatError, match=reason):
        parse_reply(reply)


def test_think_required() -> None:
    with pytest.raises(FormatError, match="must begin with <think>"):
        parse_reply("<move>c4</move>", think_required=True)
    assert parse_reply("<think>x</think><move>c4</move>", think_required=True).move == "c4"


def test_lenient_mode_is_opt_in() -> None:
    assert parse_reply(" c4 ", lenient=True).move == "c4"
    with pytest.raises(FormatError):
        parse_reply("I play c4", lenient=True)
    with pytest.raises(FormatError):
        parse_reply(" c4 ")


def test_non_text_reply_is_a_format_error() -> None:
    with pytest.raises(FormatError, match="must be text"):
        parse_reply(None)  # type: ignore[arg-type]


def test_huge_reply_is_rejected_quickly() -> None:
    reply = "<move>" * 200_000 + "a" * 1_000_000
    with pytest.raises(FormatError):
        parse_reply(reply)


@given(
    st.from_regex(r"[a-h][1-8]|pass|[0-9]", fullmatch=True),
    st.none() | st.text(alphabet="abc xyz\n", max_size=20),
)
def test_format_reply_round_trips(move: str, think: str | None) -> None:
    parsed = parse_reply(format_reply(move, think))
    assert parsed.move == move
    assert parsed.think == (None if think is None else think.strip())
