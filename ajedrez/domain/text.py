"""Client-supplied text: one place decides how it shows inside a reason or a listing
line, and whether it shows anything at all."""

from __future__ import annotations

import unicodedata

# Characters no stored text may hold: control (a NUL cannot be stored in a PostgreSQL
# text column; a TAB shifts the admin's columns), format (U+202E reverses what follows
# it, zero-width ones hide text), line and paragraph separators: each would let a text
# forge a row of a listing.
_UNSTORED = ("Cc", "Cf", "Zl", "Zp")

# Characters of the categories that draw something (letters, numbers, punctuation,
# symbols) but draw a blank: the Hangul fillers and the empty braille pattern, the usual
# ways to send a message that looks like nothing.
BLANKS = frozenset("\u115f\u1160\u3164\uffa0\u2800")
# Combining marks in a row that a text may hold: Vietnamese stacks two, Thai and Indic
# scripts two or three, Tibetan up to four; more is "zalgo", text that spills over the
# lines around it.
MAX_MARKS = 4


def visible(c: str) -> bool:
    """Whether the character draws something of its own: a letter, number, punctuation
    or symbol that is not a blank. Marks draw only on the character before them; spaces,
    controls, format characters, unassigned and private-use code points draw nothing
    a reader can rely on."""
    return unicodedata.category(c)[0] in "LNPS" and c not in BLANKS


def unseen(value: str) -> str | None:
    """Why ``value`` would not show as ordinary text (no visible character, or more
    than ``MAX_MARKS`` combining marks in a row); None when it would."""
    run = 0
    for i, c in enumerate(value):
        if unicodedata.category(c)[0] == "M":
            run += 1
            if run > MAX_MARKS:
                return (
                    f"more than {MAX_MARKS} combining marks in a row "
                    f"('{_escape(c)}' at character {i + 1})"
                )
        else:
            run = 0
    if not any(visible(c) for c in value):
        return (
            "no visible character (only spaces, combining marks, blanks such as U+3164 or "
            "U+2800, unassigned or private-use code points)"
        )
    return None


def shown(value: str) -> str:
    """A client-supplied value fit for a one-line reason: no control characters, short."""
    cleaned = "".join(c if c.isprintable() else "?" for c in value)
    return cleaned if len(cleaned) <= 40 else cleaned[:40] + "..."


def escaped(text: str) -> str:
    """``text`` for one line of a listing: every character Python does not call printable
    (controls, format characters such as U+202E, separators, unassigned code points) as an
    escape like ``\\u202e``, so text stored before it was refused cannot forge a line."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else _escape(c) for c in text)


def _escape(c: str) -> str:
    code = ord(c)
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def unstorable(c: str) -> bool:
    """Is the character ``c`` one no stored text (a comment, a chat message) may hold?"""
    return unicodedata.category(c) in _UNSTORED
