"""A small LLVM FileCheck: CHECK lines matched against text, for pass tests (XLA's RunAndFilecheckHloRewrite).

Why a copy of FileCheck: XLA's pass tests state what a rewrite produces as CHECK lines, and a reader who knows
them from XLA or LLVM should be able to read ours. The directives and their LLVM meaning:

  CHECK: p       p matches after the previous match (later on the same line counts)
  CHECK-NEXT: p  p's first match after the previous match is on the line after the previous match's line
  CHECK-SAME: p  p's first match after the previous match is on the previous match's line
  CHECK-NOT: p   p does not occur between the previous match and the next one (or the end of the text)
  CHECK-DAG: p   a run of CHECK-DAG lines matches in any order, without overlapping, after the previous match;
                 the next directive searches from the end of the furthest of them

A pattern is literal text (leading and trailing blanks dropped) with three kinds of escapes:
  {{regex}}      a Python regular expression
  [[NAME:regex]] defines the variable NAME as the text the regex matched
  [[NAME]]       the text NAME was defined as (earlier on this line, or on an earlier line)

The checks are one directive a line; blank lines are skipped, a leading `//` or `#` is allowed, and any other
line is an error (a misspelt directive would otherwise check nothing). A failure raises FileCheckError (an
AssertionError) that names the check line and shows the text around the place the search started.
"""
from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

DIRECTIVE = re.compile(r"^\s*(?://+|#+)?\s*(CHECK(?:-[A-Z]+)?)\s*:(.*)$")
KINDS = ("CHECK", "CHECK-NEXT", "CHECK-SAME", "CHECK-NOT", "CHECK-DAG")
# {{regex}}, or [[NAME]] / [[NAME:regex]]; a definition's regex may hold bracket expressions ([[V:[a-z]]]).
ESCAPE = re.compile(r"\{\{(.*?)\}\}|\[\[([A-Za-z_][A-Za-z0-9_]*)(?::((?:\[[^\]]*\]|[^\]])*?))?\]\]")
CONTEXT_LINES = 40      # texts longer than this are shown as a window around the search position


class FileCheckError(AssertionError):
    """A CHECK line that did not hold (or a malformed one); the message shows the line and the text."""


@dataclass(frozen=True)
class Directive:
    kind: str           # one of KINDS
    pattern: str        # as written, blanks stripped
    line: int           # 1-based line number in the checks text
    source: str         # the check line as written, for messages

    def describe(self) -> str:
        return f"check line {self.line}: {self.source.strip()}"


def parse_checks(checks: str) -> list[Directive]:
    """The directives of a CHECK text, in order; FileCheckError for a line that is not one."""
    out = []
    for number, raw in enumerate(checks.splitlines(), start=1):
        if not raw.strip():
            continue
        m = DIRECTIVE.match(raw)
        if m is None:
            raise FileCheckError(f"check line {number} is not a CHECK directive: {raw.strip()!r}")
        kind, pattern = m.group(1), m.group(2).strip()
        if kind not in KINDS:
            raise FileCheckError(f"check line {number}: unknown directive {kind} (known: {', '.join(KINDS)})")
        if not pattern:
            raise FileCheckError(f"check line {number}: {kind} has an empty pattern")
        out.append(Directive(kind, pattern, number, raw))
    if not out:
        raise FileCheckError("no CHECK directives in the checks")
    return out


def compile_pattern(directive: Directive, variables: dict[str, str]) -> re.Pattern:
    """The directive's pattern as a regular expression, with the variables defined so far substituted."""
    parts, defined_here, at = [], set(), 0
    for m in ESCAPE.finditer(directive.pattern):
        parts.append(re.escape(directive.pattern[at:m.start()]))
        at = m.end()
        regex, name, definition = m.group(1), m.group(2), m.group(3)
        if regex is not None:
            parts.append(f"(?:{regex})")
        elif definition is not None:
            if name in defined_here:
                raise FileCheckError(f"{directive.describe()}\n[[{name}]] is defined twice on one line")
            defined_here.add(name)
            parts.append(f"(?P<{name}>{definition})")
        elif name in defined_here:
            parts.append(f"(?P={name})")
        elif name in variables:
            parts.append(re.escape(variables[name]))
        else:
            known = ", ".join(sorted(variables)) or "none"
            raise FileCheckError(f"{directive.describe()}\n[[{name}]] is used before it is defined "
                                 f"(defined so far: {known})")
    parts.append(re.escape(directive.pattern[at:]))
    try:
        return re.compile("".join(parts))
    except re.error as e:
        raise FileCheckError(f"{directive.describe()}\nbad regular expression: {e}") from None


class _Checker:
    """Walks the directives over the text; `pos` is where the previous match ended."""

    def __init__(self, text: str):
        self.text = text
        self.pos = 0
        self.matched_any = False
        self.variables: dict[str, str] = {}
        self.pending_not: list[Directive] = []

    # -- positions and messages ------------------------------------------------------------------------------
    def line_of(self, offset: int) -> int:
        return self.text.count("\n", 0, offset) + 1

    def fail(self, directive: Directive, problem: str, marks: dict[int, str]) -> FileCheckError:
        lines = self.text.splitlines() or [""]
        start_line = self.line_of(self.pos)
        column = self.pos - (self.text.rfind("\n", 0, self.pos) + 1) + 1
        marks = {start_line: ">", **marks}
        lo, hi = 1, len(lines)
        if len(lines) > CONTEXT_LINES:
            lo = max(1, min(marks) - 5)
            hi = min(len(lines), max(max(marks) + 5, lo + CONTEXT_LINES - 1))
        width = len(str(hi))
        shown = [f"{marks.get(n, ' ')} {n:>{width}} | {lines[n - 1]}" for n in range(lo, hi + 1)]
        if lo > 1:
            shown.insert(0, f"  {'':>{width}} | ... {lo - 1} lines above")
        if hi < len(lines):
            shown.append(f"  {'':>{width}} | ... {len(lines) - hi} lines below")
        message = [directive.describe(), problem]
        if self.variables:
            message.append("Variables: " + ", ".join(f"[[{k}]] = {v!r}" for k, v in self.variables.items()))
        legend = {">": f"the search started on this line, column {column}", "!": "the line in question",
                  "?": "the line most like the pattern"}
        used = "; ".join(f"'{mark}': {legend[mark]}" for mark in legend if mark in marks.values())
        message.append(f"Text ({used}):")
        return FileCheckError("\n".join(message + shown))

    def closest_line(self, directive: Directive) -> dict[int, str]:
        """{line number: "?"} for the line after the search start most like the pattern's literal text."""
        literal = ESCAPE.sub("", directive.pattern)
        first = self.line_of(self.pos)
        lines = self.text.splitlines()[first - 1:]
        scores = [difflib.SequenceMatcher(None, literal, line.strip()).ratio() for line in lines]
        if not scores or max(scores) < 0.5:
            return {}
        return {first + scores.index(max(scores)): "?"}

    # -- directives -----------------------------------------------------------------------------------------
    def search(self, directive: Directive, start: int, end: int | None = None) -> re.Match | None:
        pattern = compile_pattern(directive, self.variables)
        return pattern.search(self.text, start) if end is None else pattern.search(self.text, start, end)

    def define(self, match: re.Match) -> None:
        self.variables.update({k: v for k, v in match.groupdict().items() if v is not None})

    def check_nots(self, end: int) -> None:
        for directive in self.pending_not:
            m = self.search(directive, self.pos, end)
            if m is not None:
                raise self.fail(directive, f"CHECK-NOT: found {m.group(0)!r} at line {self.line_of(m.start())}, "
                                           "where it must not occur", {self.line_of(m.start()): "!"})
        self.pending_not = []

    def positive(self, directive: Directive) -> None:
        if directive.kind in ("CHECK-NEXT", "CHECK-SAME") and not self.matched_any:
            raise FileCheckError(f"{directive.describe()}\n{directive.kind} needs an earlier CHECK to follow")
        m = self.search(directive, self.pos)
        if m is None:
            raise self.fail(directive, f"{directive.kind}: no match for {directive.pattern!r}",
                            self.closest_line(directive))
        newlines = self.text.count("\n", self.pos, m.start())
        found = self.line_of(m.start())
        if directive.kind == "CHECK-NEXT" and newlines != 1:
            where = "on the same line as the previous match" if newlines == 0 else f"at line {found}"
            raise self.fail(directive, f"CHECK-NEXT: the first match is {where}, not on the line after the "
                                       "previous match", {found: "!"})
        if directive.kind == "CHECK-SAME" and newlines != 0:
            raise self.fail(directive, f"CHECK-SAME: the first match is at line {found}, not on the line of the "
                                       "previous match", {found: "!"})
        self.check_nots(m.start())
        self.define(m)
        self.pos, self.matched_any = m.end(), True

    def dag_group(self, group: list[Directive]) -> None:
        taken: list[tuple[int, int]] = []
        for directive in group:
            start = self.pos
            while True:
                m = self.search(directive, start)
                if m is None:
                    raise self.fail(directive, f"CHECK-DAG: no match for {directive.pattern!r} that does not "
                                               "overlap the group's other matches", self.closest_line(directive))
                overlap = [end for s, end in taken if s < max(m.end(), m.start() + 1) and m.start() < end]
                if not overlap:
                    break
                start = max(overlap)
            self.define(m)
            taken.append((m.start(), m.end()))
        self.check_nots(min(s for s, _ in taken))
        self.pos, self.matched_any = max(end for _, end in taken), True


def filecheck(text: str, checks: str) -> None:
    """Match the CHECK lines `checks` against `text` like LLVM FileCheck; FileCheckError says what failed."""
    checker = _Checker(text)
    directives = parse_checks(checks)
    i = 0
    while i < len(directives):
        directive = directives[i]
        if directive.kind == "CHECK-NOT":
            checker.pending_not.append(directive)
            i += 1
        elif directive.kind == "CHECK-DAG":
            j = i
            while j < len(directives) and directives[j].kind == "CHECK-DAG":
                j += 1
            checker.dag_group(directives[i:j])
            i = j
        else:
            checker.positive(directive)
            i += 1
    checker.check_nots(len(text))


__all__ = ["filecheck", "FileCheckError", "parse_checks", "Directive"]
