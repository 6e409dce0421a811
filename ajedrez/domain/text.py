"""Client-supplied text inside a reason or a listing line: one place decides how it shows."""

from __future__ import annotations

import unicodedata

# Characters no stored text may hold: control (a NUL cannot be stored in a PostgreSQL
# text column; a TAB shifts the admin's columns), format (U+202E reverses what follows
# it, zero-width ones hide text), line and paragraph separators: each would let a text
# forge a row of a listing.
_UNSTORED = ("Cc", "Cf", "Zl", "Zp")


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
