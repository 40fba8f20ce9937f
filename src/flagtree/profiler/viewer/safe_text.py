"""Terminal safety: what a profile names is printed with its control characters escaped.

A frame named ``"\\x1b]0;pwned\\x07"`` would retitle the terminal, ``"\\x1b[2J"`` clear it, and
a newline forge a row. C0 and C1 controls, DEL, the Unicode line and paragraph separators and
the bidirectional overrides (which reorder what is shown) and lone surrogates are written
as ``\\xNN``/``\\uNNNN``.
"""

import re

# Lone surrogates (JSON allows "\\ud800") too: they cannot be encoded for the terminal.
UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069"
                    "\ud800-\udfff]")


def _escape(match):
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def safe(text):
    """``text`` with every character that could steer a terminal escaped."""
    if UNSAFE.search(text) is None:
        return text
    return UNSAFE.sub(_escape, text)
