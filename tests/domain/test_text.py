"""What counts as visible text (``domain/text.py``): a message that shows nothing, or
whose stacked marks spill over the lines around it, is refused."""

from __future__ import annotations

import unicodedata

import pytest

from ajedrez.domain.text import MAX_MARKS, unseen, visible

BLANK_LOOKING = {
    "Hangul filler": "\u3164",
    "halfwidth Hangul filler": "\uffa0",
    "braille blank": "\u2800",
    "braille blanks and spaces": "\u2800 \u2800\u3000",
    "400 combining marks": "\u0301" * 400,
    "unassigned": "\u0378\u0379",
    "private use": "\ue000\U000f0000",
    "spaces": "   ",
    "a lone mark": "\u0301",
}


@pytest.mark.parametrize("value", BLANK_LOOKING.values(), ids=BLANK_LOOKING.keys())
def test_text_that_shows_nothing_is_refused(value):
    assert unseen(value) is not None


def test_the_examples_are_what_they_claim():
    # Guards the test: the unassigned ones are unassigned in this Python's Unicode.
    assert {unicodedata.category(c) for c in "\u0378\u0379"} == {"Cn"}
    assert {unicodedata.category(c) for c in "\ue000\U000f0000"} == {"Co"}
    assert unicodedata.category("\u3164") == "Lo" and unicodedata.category("\u2800") == "So"


def test_marks_after_a_letter_are_refused_past_the_limit():
    assert unseen("e" + "\u0301" * MAX_MARKS) is None
    reason = unseen("e" + "\u0301" * (MAX_MARKS + 1))
    assert reason is not None and "combining marks" in reason and "\\u0301" in reason
    assert unseen(("a" + "\u0301" * MAX_MARKS) * 50) is None  # each run on its own
    assert unseen("hola " + "\u0301\u0302\u0303\u0304\u0305\u0306") is not None


@pytest.mark.parametrize(
    "value",
    [
        "hola",
        " spaced  ",
        ":",
        "1-0",
        "😀",
        "Tiếng Việt",  # two marks on one letter, decomposed below
        unicodedata.normalize("NFD", "Tiếng Việt"),
        "नमस्ते",
        "བཀྲ་ཤིས་",
        "สวัสดี",
        "good game \u3164 indeed",  # a filler inside text that shows
        "\ue000 custom glyph",
    ],
)
def test_ordinary_text_shows(value):
    assert unseen(value) is None, value


def test_visible_characters():
    assert all(visible(c) for c in "aZ9ñ.!€♞😀")
    assert not any(visible(c) for c in " \u00a0\u3000\u0301\u200b\t\u3164\u2800\ue000\u0378")
