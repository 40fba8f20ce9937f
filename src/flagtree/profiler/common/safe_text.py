"""Terminal safety: what a profile names is printed with its control characters escaped.

A frame named ``"\\x1b]0;pwned\\x07"`` would retitle the terminal, ``"\\x1b[2J"`` clear it, and
a newline forge a row. C0 and C1 controls, DEL, the Unicode line and paragraph separators and
the bidirectional overrides (which reorder what is shown) and lone surrogates are written
as ``\\xNN``/``\\uNNNN``.
"""

import re

# The characters that steer a terminal or reorder what it shows, as a regex class body: C0,
# DEL, C1 (U+009B is a one-character CSI, U+0085 a line break), the line and paragraph
# separators, the bidi marks, embeddings, overrides and isolates. Other outputs that must not
# carry them raw (--collapsed) escape this same set.
CONTROLS = "\x00-\x1f\x7f-\x9f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069"
# Lone surrogates (JSON allows "\\ud800") too: they cannot be encoded for the terminal.
UNSAFE = re.compile(f"[{CONTROLS}\ud800-\udfff]")


def is_utf8(text):
    """Whether `text` can be written as UTF-8 (file names, JSON keys a profile holds): a lone
    surrogate such as "\\ud800", which os.fsdecode makes of a byte that is not UTF-8, cannot."""
    return text.isascii() or _SURROGATE.search(text) is None


_SURROGATE = re.compile("[\ud800-\udfff]")


def _escape(match):
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def safe(text):
    """``text`` with every character that could steer a terminal escaped."""
    if UNSAFE.search(text) is None:
        return text
    return UNSAFE.sub(_escape, text)
