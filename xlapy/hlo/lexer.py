"""A cursor over HLO text: whitespace/comment skipping, regex tokens, balanced raw values, error positions.

The parser asks for what it expects next (a name, a shape, '{', ...) instead of consuming a token
stream; that lets attribute values we do not interpret be taken verbatim as raw text, and lets large
literals be tokenized in bulk by one regex.
"""
from __future__ import annotations

import bisect
import re
from typing import Callable, TypeVar

from ..errors import HloParseError

_SKIP = re.compile(r"(?:\s+|/\*.*?\*/|//[^\n]*)*", re.S)
NAME = re.compile(r"%?[A-Za-z_][\w.\-]*|%[\w.\-]+")
ATTR_NAME = re.compile(r"[A-Za-z_][\w.\-]*")
INT = re.compile(r"[-+]?\d+")
WORD = re.compile(r"[\w.\-+]+")
FLOAT = re.compile(r"[-+]?(?:nan|inf|(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)")
_STRING = re.compile(r'"(?:[^"\\]++|\\.)*+"', re.S)      # possessive: runs in one step, never backtracks
_TOKEN_FOR_ERROR = re.compile(r'"(?:[^"\\\n]|\\.)*"?|[\w.%\-+]+|\S')
_RAW_SPECIAL = re.compile(r'["{}()\[\],\n]')     # what raw_value looks at (it passes over the rest)
_RAW_GROUP = re.compile(r'\{[^"{}()\[\]]*\}|\([^"{}()\[\]]*\)|\[[^"{}()\[\]]*\]')    # innermost brackets
# a whole `{...}` value on one line holding strings but no other brackets (metadata={op_type="..." op_name="..."}),
# followed by what ends a value: raw_value takes it in one match
# (possessive runs: a metadata value is one step per run of plain text, not per character; its match is unique, so
# never backtracking changes nothing: mobilenetv2/fwd's 1115 metadata values 5.3 -> 1.3 ms)
_RAW_BRACED = re.compile(r'\{(?:[^"{}()\[\]\n]++|"(?:[^"\\\n]++|\\.)*+")*+\}(?=[ \t]*(?:[,})\]\n]|$))')

_ENDS_AT_NEWLINE = re.compile(r"[ \t]*(?:\n|$)")
_OPEN = {"{": "}", "(": ")", "[": "]"}
_CLOSE = {"}", ")", "]"}

T = TypeVar("T")


class Cursor:
    def __init__(self, text: str):
        self.text = text
        self.pos = 0
        self._newlines: list[int] | None = None

    # -- positions and errors ------------------------------------------------------------------------
    def line_col(self, pos: int) -> tuple[int, int]:
        if self._newlines is None:
            self._newlines = [m.start() for m in re.finditer("\n", self.text)]
        line = bisect.bisect_left(self._newlines, pos)
        start = self._newlines[line - 1] + 1 if line else 0
        return line + 1, pos - start + 1

    def token_at(self, pos: int) -> str:
        m = _TOKEN_FOR_ERROR.match(self.text, pos)
        return m.group(0)[:40] if m else "<end of input>"

    def error(self, message: str, expected: str = "", pos: int | None = None) -> HloParseError:
        if pos is None:
            self.skip()
            pos = self.pos
        line, col = self.line_col(pos)
        return HloParseError(message, line, col, self.token_at(pos), expected)

    # -- scanning ------------------------------------------------------------------------------------
    def skip(self) -> None:
        c = self.text[self.pos:self.pos + 1]
        if c and c != "/" and not c.isspace():    # mostly a token is next: no regex to run
            return
        self.pos = _SKIP.match(self.text, self.pos).end()

    def next_token_pos(self, pos: int) -> int:
        """Where the next token at or after `pos` starts; the cursor does not move."""
        return _SKIP.match(self.text, pos).end()

    def at_end(self) -> bool:
        self.skip()
        return self.pos >= len(self.text)

    def peek_char(self) -> str:
        self.skip()
        return self.text[self.pos:self.pos + 1]

    def peek(self, regex: re.Pattern) -> re.Match | None:
        self.skip()
        return regex.match(self.text, self.pos)

    def take(self, regex: re.Pattern, expected: str) -> str:
        m = self.peek(regex)
        if not m:
            raise self.error(f"expected {expected}", expected)
        self.pos = m.end()
        return m.group(0)

    def try_take(self, regex: re.Pattern) -> str | None:
        m = self.peek(regex)
        if not m:
            return None
        self.pos = m.end()
        return m.group(0)

    def accept(self, literal: str) -> bool:
        self.skip()
        if self.text.startswith(literal, self.pos):
            self.pos += len(literal)
            return True
        return False

    def expect(self, literal: str, context: str = "") -> None:
        if not self.accept(literal):
            raise self.error(f"expected '{literal}'" + (f" {context}" if context else ""), f"'{literal}'")

    def items(self, close: str, between: str, item: Callable[[], T]) -> list[T]:
        """`item (, item)* close` or just `close`; the opening bracket is already taken."""
        out: list[T] = []
        if self.accept(close):
            return out
        while True:
            out.append(item())
            if self.accept(close):
                return out
            self.expect(",", between)

    def accept_keyword(self, word: str) -> bool:
        """`word` as a whole word (not a prefix of a longer name)."""
        m = self.peek(ATTR_NAME)
        if m and m.group(0) == word:
            self.pos = m.end()
            return True
        return False

    def string(self) -> str:
        """A double-quoted string, unescaped."""
        m = self.peek(_STRING)
        if not m:
            raise self.error("expected a quoted string", "'\"'")
        self.pos = m.end()
        return unescape(m.group(0)[1:-1])

    def raw_value(self, stop_at_newline: bool = True) -> str:
        """Text up to the next top-level ',' (or newline / unmatched closer), with balanced brackets and strings."""
        self.skip()
        text, start = self.text, self.pos
        if text.startswith("{", start):
            m = _RAW_BRACED.match(text, start)
            if m is not None and (stop_at_newline or not _ENDS_AT_NEWLINE.match(text, m.end())):
                self.pos = m.end()
                return m.group(0)
        stack: list[str] = []
        i, end = start, -1
        while end < 0:
            # only the characters that matter, one C-level search each (metadata is mostly plain text)
            for m in _RAW_SPECIAL.finditer(text, i):
                at = m.start()
                c = text[at]
                if c == '"':
                    string = _STRING.match(text, at)
                    if not string:
                        raise self.error("unterminated string", "'\"'", pos=at)
                    i = string.end()
                    break                       # go on after the string
                if c in _OPEN:
                    inner = _RAW_GROUP.match(text, at)
                    if inner:                   # a group with no brackets or strings inside: over it at once
                        i = inner.end()
                        break
                    stack.append(_OPEN[c])
                elif c in _CLOSE:
                    if not stack:
                        end = at
                        break
                    if stack.pop() != c:
                        raise self.error("mismatched bracket in attribute value", "a balanced value", pos=at)
                elif not stack and (c == "," or stop_at_newline):
                    end = at
                    break
            else:
                end = len(text)
        if stack:
            raise self.error("unbalanced brackets in attribute value", f"'{stack[-1]}'", pos=start)
        value = text[start:end].rstrip()
        if not value:
            raise self.error("expected an attribute value", "a value", pos=start)
        self.pos = start + len(value)
        return value


_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", '"': '"', "'": "'", "\\": "\\", "?": "?",
            "a": "\a", "b": "\b", "f": "\f", "v": "\v"}
_UNESCAPE = re.compile(r"\\(x[0-9A-Fa-f]{1,2}|[0-7]{1,3}|.)", re.S)


def unescape(s: str) -> str:
    """C-style unescaping (absl::CUnescape) of a string body."""
    if "\\" not in s:
        return s

    def sub(m: re.Match) -> str:
        e = m.group(1)
        if e[0] == "x":
            return chr(int(e[1:], 16))
        if e[0].isdigit():
            return chr(int(e, 8))
        return _ESCAPES.get(e, e)
    return _UNESCAPE.sub(sub, s)


_ESCAPE_MAP = {"\n": "\\n", "\r": "\\r", "\t": "\\t", '"': '\\"', "'": "\\'", "\\": "\\\\"}


def escape(s: str) -> str:
    """C-style escaping (absl::CEscape) of a string body."""
    out = []
    for ch in s:
        if ch in _ESCAPE_MAP:
            out.append(_ESCAPE_MAP[ch])
        elif ord(ch) < 32 or ord(ch) == 127:
            out.append("\\%03o" % ord(ch))
        else:
            out.append(ch)
    return "".join(out)
