"""Text that is safe to print on a terminal: control characters escaped.

File names and harness fields come from folders we do not control; printed raw, an
ESC sequence in a name can clear the screen, move the cursor or retitle the
window, and a lone surrogate (a non-UTF-8 file name) makes ``print`` raise.
``shown`` writes such characters as Python escapes (``\\x1b``, ``\\n``,
``\\ud800``) and leaves every other character, CJK and emoji included, as is.
Backslashes are kept, so ``shown`` is idempotent and ``repr`` output passes
through unchanged.
"""

from __future__ import annotations

import re

# C0 controls, DEL, C1 controls, line/paragraph separators, bidi overrides and
# isolates (they reorder what a terminal shows), and lone surrogates.
_UNSAFE = re.compile(
    "[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]"
)
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(m: re.Match) -> str:
    c = m.group()
    return _NAMED.get(c) or (
        f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}"
    )


def shown(text: object, *, keep: str = "") -> str:
    """``str(text)`` with terminal control characters escaped, repr-style.

    Args:
      text: anything; paths and names usually.
      keep: characters to leave as they are (``"\\n\\t"`` for multi-line text).
    """
    s = str(text)
    if keep:
        return _UNSAFE.sub(lambda m: m.group() if m.group() in keep else _escape(m), s)
    return _UNSAFE.sub(_escape, s)
