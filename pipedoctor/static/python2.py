"""Code written for Python 2: a file the analysis cannot read, but no defect of the file.

A parse error that Python 3 raises only on Python 2 syntax (a ``print`` statement, tuple
parameters, ``except E, e``, tabs mixed with spaces, ``0777``) says the code targets another
interpreter; the team that runs it there would not change it for the gate. Such a ``PD000``
is kept (never silence) at the lowest confidence: reviewers judged 36 of 36 wrong and 3
debatable over the first looks.
"""

from __future__ import annotations

import re

MESSAGES = (
    ("Missing parentheses in call to 'print'", "a `print` statement"),
    ("Missing parentheses in call to 'exec'", "an `exec` statement"),
    ("parameters cannot be parenthesized", "tuple parameters"),
    ("inconsistent use of tabs and spaces", "tabs mixed with spaces"),
    ("leading zeros in decimal integer literals", "an octal literal such as `0777`"),
)
LINES = (
    (re.compile(r"^\s*except\s+[\w.]+\s*,\s*\w+\s*:"), "`except E, e`"),
    (re.compile(r"^\s*print\s*>>"), "`print >>`"),
    (re.compile(r"^\s*raise\s+[\w.]+\s*,"), "`raise E, message`"),
    (re.compile(r"`[^`\n]+`"), "backquotes"),
)


def python2_sign(message: str, line: str = "") -> str | None:
    """What in a parse error, or in the line it points at, is Python 2 syntax; ``None`` when
    nothing is."""
    for text, sign in MESSAGES:
        if text in message:
            return sign
    if any(text in message for text in ("invalid syntax", "invalid decimal", "must be parenth")):
        for pattern, sign in LINES:
            if pattern.search(line):
                return sign
    return None
