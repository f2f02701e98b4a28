"""Size figures of an HLO module read from its text (no parser needed, so every venv can use it).

- instructions: instruction lines in all computations; the size gate of tests/models and the x axis of
  compile-time scaling.
- longest_reduction: the most terms one output element sums (a dot's contracted size, a convolution's kernel
  volume times its input features, a reduce's reduced size, a reduce-window's window): f32 rounding error
  grows with it, so the correctness tolerance scales with its square root.

Operand shapes are looked up by name (JAX's dumps print `dot(a, b)`; TensorFlow's print them inline,
`dot(f32[8,64]{1,0} %a, ...)`: both forms are read).
"""
from __future__ import annotations

import math
import re

_INSTRUCTION = re.compile(r"^\s*(?:ROOT\s+)?%?[^\s=]+\s*=\s*\S", re.M)
# name = f32[2,3]{1,0} opcode(operands), attributes
_ARRAY_DEF = re.compile(r"^\s*(?:ROOT\s+)?%?([^\s=]+)\s*=\s*[a-z0-9]+\[([\d,]*)\]\S*\s+([a-z-]+)\((.*)$")
_ATTR = {key: re.compile(key + r"=\{?([^}\s,]*(?:,\d+)*)") for key in ("lhs_contracting_dims", "dimensions")}
_CONV_LABELS = re.compile(r"dim_labels=[^_]+_([0-9a-z]+)->")
_WINDOW_SIZE = re.compile(r"window=\{size=([\dx]+)")


def _dims(text: str) -> list[int]:
    return [int(d) for d in text.split(",") if d]


def _operand_names(rest: str) -> list[str]:
    """The operand names of `a, b), attrs` (shapes and `%` dropped), up to the closing parenthesis."""
    depth, end = 0, len(rest)
    for i, ch in enumerate(rest):
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            if depth == 0:
                end = i
                break
            depth -= 1
    names, depth, token = [], 0, ""
    for ch in rest[:end] + ",":
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        if ch == "," and depth == 0:
            names.append(token.split()[-1].lstrip("%") if token.split() else "")
            token = ""
        else:
            token += ch
    return names


def instruction_count(text: str) -> int:
    return len(_INSTRUCTION.findall(text))


def _reduction_length(opcode: str, operands: list[list[int] | None], attrs: str) -> int:
    first = operands[0] if operands else None
    if opcode == "dot" and first is not None and (m := _ATTR["lhs_contracting_dims"].search(attrs)):
        return math.prod(first[d] for d in _dims(m.group(1)) if d < len(first))
    if opcode == "convolution" and len(operands) > 1 and operands[1] is not None:
        m = _CONV_LABELS.search(attrs)
        if m and len(m.group(1)) == len(operands[1]):
            return math.prod(n for n, label in zip(operands[1], m.group(1)) if label != "o")
    if opcode == "reduce" and first is not None and (m := _ATTR["dimensions"].search(attrs)):
        return math.prod(first[d] for d in _dims(m.group(1)) if d < len(first))
    if opcode == "reduce-window" and (m := _WINDOW_SIZE.search(attrs)):
        return math.prod(int(n) for n in m.group(1).split("x"))
    return 1


def longest_reduction(text: str) -> int:
    shapes, lines = {}, []
    for line in text.splitlines():
        if m := _ARRAY_DEF.match(line):
            shapes[m.group(1)] = _dims(m.group(2))
            if m.group(3) in ("dot", "convolution", "reduce", "reduce-window"):
                lines.append((m.group(3), m.group(4)))
    longest = 1
    for opcode, rest in lines:
        operands = [shapes.get(name) for name in _operand_names(rest)]
        longest = max(longest, _reduction_length(opcode, operands, rest))
    return longest
