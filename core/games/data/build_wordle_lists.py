"""Build Wordle's word lists from SCOWL, as packaged by Debian.

Not imported by gamebridge: run it by hand to rebuild the shipped lists.

    apt-get install scowl wamerican-huge               # SCOWL 2020.12.07, Debian 12
    python core/games/data/build_wordle_lists.py        # rewrites the two .txt files
    python core/games/data/build_wordle_lists.py --check   # exit 1 if they differ

Answers: the 5-letter, all lower-case ASCII words of SCOWL's own word lists up
to size 40 (``english-words`` and ``american-words`` .10 .20 .35 .40: no
spelling variants, proper names, abbreviations or Roman numerals), minus
regular inflections whose stem is itself in those lists (plurals and third
persons ``-s``/``-es``/``-ies``, past tenses ``-ed``/``-d``/``-ied``/``-pt``,
present participles ``-ing``, superlatives ``-est``), minus a short list of
slurs and sexual words (those stay guessable). Allowed: the 5-letter, all
lower-case ASCII words of SCOWL size 80 (``american-english-huge``) that are
not Roman numerals, plus every answer. Both sorted, one word a line.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

DICT_DIR = Path("/usr/share/dict")
SCOWL_DIR = DICT_DIR / "scowl"  # Debian package scowl: SCOWL's lists by kind and size
ANSWER_LISTS = tuple(
    SCOWL_DIR / f"{kind}-words.{size}"
    for kind in ("english", "american")
    for size in (10, 20, 35, 40)
)
HUGE = DICT_DIR / "american-english-huge"  # SCOWL size 80 (wamerican-huge)
OUT_DIR = Path(__file__).resolve().parent

# Never drawn as an answer (still accepted as guesses).
EXCLUDED_ANSWERS = frozenset(
    {
        "bitch", "boobs", "chink", "dildo", "dykes", "horny", "kikes", "nigga", "penis",
        "porno", "prick", "pussy", "queer", "raped", "rapes", "semen", "sexed", "sluts",
        "spick", "whore", "bimbo", "gypsy", "welsh", "pubic",
    }
)  # fmt: skip

_WORD = re.compile(r"[a-z]+")
# A well-formed Roman numeral (lower case); "civil", "vivid" and "mimic" are not.
_ROMAN = re.compile(r"m{0,3}(cm|cd|d?c{0,3})(xc|xl|l?x{0,3})(ix|iv|v?i{0,3})")


def read_words(path: Path) -> set[str]:
    """Lower-case ASCII words of one SCOWL list (proper nouns, possessives and
    words with accents or hyphens are dropped)."""
    text = path.read_text(encoding="utf-8")
    return {w for w in text.split("\n") if _WORD.fullmatch(w)}


def is_inflection(word: str, words: set[str]) -> bool:
    """True when ``word`` is a regular inflection of a word in ``words``."""
    stems: list[str] = []
    if word.endswith("s") and not word.endswith("ss"):
        stems.append(word[:-1])
    if word.endswith("es"):
        stems.append(word[:-2])
    if word.endswith("ies") or word.endswith("ied"):
        stems.append(word[:-3] + "y")
    if word.endswith("ed"):
        stems += [word[:-2], word[:-1]]
    if word.endswith("ing"):
        stems += [word[:-3], word[:-3] + "e"]
    if word.endswith("pt"):  # archaic past tenses: chapt, clipt, wrapt (and leapt)
        stems.append(word[:-1])
    if word.endswith("est"):  # superlatives: weest
        stems += [word[:-3], word[:-2]]
    return any(len(s) >= 2 and s in words for s in stems)


def build() -> tuple[list[str], list[str]]:
    """The answers and allowed lists, sorted."""
    common: set[str] = set()
    for path in ANSWER_LISTS:
        common |= read_words(path)
    answers = sorted(
        w
        for w in common
        if len(w) == 5 and not is_inflection(w, common) and w not in EXCLUDED_ANSWERS
    )
    huge = {w for w in read_words(HUGE) if len(w) == 5 and not _ROMAN.fullmatch(w)}
    allowed = sorted(huge | set(answers))
    return answers, allowed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="compare, do not write")
    args = parser.parse_args(argv)
    answers, allowed = build()
    files = {
        OUT_DIR / "wordle_answers.txt": "\n".join(answers) + "\n",
        OUT_DIR / "wordle_allowed.txt": "\n".join(allowed) + "\n",
    }
    if args.check:
        stale = [p.name for p, text in files.items() if p.read_text(encoding="utf-8") != text]
        print("stale: " + ", ".join(stale) if stale else "up to date")
        return 1 if stale else 0
    for path, text in files.items():
        path.write_text(text, encoding="utf-8")
    print(f"{len(answers)} answers, {len(allowed)} allowed words")
    return 0


if __name__ == "__main__":
    sys.exit(main())
