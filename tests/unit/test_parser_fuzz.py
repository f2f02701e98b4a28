"""Mutation fuzzing of the parser: whatever the text, parse() succeeds or raises HloParseError (never
another exception, a hang or a RecursionError)."""
from __future__ import annotations

import random
import re
import time
from pathlib import Path

import pytest

from xlapy import HloParseError
from xlapy.hlo import parse

SHARED = Path(__file__).resolve().parents[2].parent / "shared"
CASES = SHARED / "testdata" / "xla_parser_cases"
TOKEN = re.compile(r"\s+|[\w.%\-]+|.", re.S)
SNIPPETS = ["{", "}", "(", ")", ",", "=", "%", "ROOT", "ENTRY", "f32[]", "(f32[], s32[])", "/*", "*/", "//",
            '"', "\n", "-nan", "1e999", "{...}", "<=", "?", ":", "T(8,128)", "parameter(0)", "add", "}, {",
            "calls=", "to_apply=%x", "dimensions={0}", "((((((((((", "constant(", "9" * 30, "-", "\\"]


def _seeds() -> list[str]:
    if not CASES.is_dir():
        pytest.skip(f"{CASES} is absent")
    files = sorted(CASES.glob("*.hlo"))
    return [f.read_text() for f in files if f.stat().st_size < 4000]


def _mutate(rng: random.Random, text: str) -> str:
    for _ in range(rng.randint(1, 3)):
        kind = rng.randrange(6)
        if kind < 3:   # character level
            i = rng.randrange(len(text) + 1)
            if kind == 0:
                text = text[:i] + text[i + 1:]
            elif kind == 1:
                text = text[:i] + rng.choice(SNIPPETS) + text[i:]
            else:
                text = text[:i] + chr(rng.randrange(32, 127)) + text[i + 1:]
        else:          # token level
            toks = TOKEN.findall(text)
            if not toks:
                continue
            i = rng.randrange(len(toks))
            if kind == 3:
                del toks[i]
            elif kind == 4:
                toks[i] = rng.choice(toks)
            else:
                j = rng.randrange(len(toks))
                toks[i], toks[j] = toks[j], toks[i]
            text = "".join(toks)
    return text


def _check(text: str) -> None:
    try:
        module = parse(text)
    except HloParseError as e:
        assert e.line >= 1 and e.column >= 1, (str(e), text)
        return
    # what parses must print and parse back
    printed = module.to_text()
    assert parse(printed).to_text() == printed


def test_mutants_raise_only_hlo_parse_error():
    seeds = _seeds()
    rng = random.Random(1234)
    deadline = time.monotonic() + 10.0
    n = 0
    while n < 5000 and time.monotonic() < deadline:
        text = _mutate(rng, rng.choice(seeds))
        try:
            _check(text)
        except HloParseError:
            raise
        except Exception as e:  # pragma: no cover - the failure message shows the mutant
            raise AssertionError(f"{type(e).__name__}: {e}\n--- mutant ---\n{text}") from e
        n += 1
    assert n >= 500


@pytest.mark.parametrize("text", [
    "", "HloModule", "HloModule m", "HloModule m\nENTRY e {", "(" * 5000, "HloModule m\nENTRY e {\n ROOT x = "
    + "(" * 3000 + "f32[]" + ")" * 3000 + " parameter(0)\n}", "HloModule m\nENTRY e {\n ROOT r = "
    + "negate(" * 2000 + "f32[] parameter(0)" + ")" * 2000 + "\n}", "\x00\xff", "HloModule m /*",
    'HloModule m, a="', "HloModule m\nENTRY e {\n ROOT c = f32[3] constant({1, 2, 3)\n}",
])
def test_pathological_inputs(text):
    _check(text)
