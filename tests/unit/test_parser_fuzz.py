"""Mutation fuzzing of the parser: whatever the text, parse() succeeds or raises HloParseError (never
another exception, a hang or a RecursionError). Seeds: XLA's own parser test cases, and real modules from TF and
JAX (the TF dump in ../shared, the model suite's modules, the corpus), each test a few seconds."""
from __future__ import annotations

import random
import re
from pathlib import Path

import pytest

from xlapy import HloParseError
from xlapy.hlo import parse

REPO = Path(__file__).resolve().parents[2]
SHARED = REPO.parent / "shared"
CASES = SHARED / "testdata" / "xla_parser_cases"
REAL_MODULES = [SHARED / "testdata" / "tf_mobilenet_cluster.hlo", *sorted((REPO / "benchmarks" / "models").glob(
    "*/*.hlo")), *sorted((REPO / "tests" / "corpus").glob("*/*.hlo"))]
COMPUTATION_START = re.compile(r"\n(?=\S[^\n]*\{[ \t]*\n)")     # a line that opens a computation
TOKEN = re.compile(r"\s+|[\w.%\-]+|.", re.S)
SNIPPETS = ["{", "}", "(", ")", ",", "=", "%", "ROOT", "ENTRY", "f32[]", "(f32[], s32[])", "/*", "*/", "//",
            '"', "\n", "-nan", "1e999", "{...}", "<=", "?", ":", "T(8,128)", "parameter(0)", "add", "}, {",
            "calls=", "to_apply=%x", "dimensions={0}", "((((((((((", "constant(", "9" * 30, "-", "\\",
            # what TF and JAX dumps hold
            "{}", "s32[0]{0}", "constant({})", "metadata={op_name=\"a\"}", "/*index=5*/", "sharding={replicated}",
            "frontend_attributes={a=\"b\"}", "{1,0:T(8,128)}", "f32[<=4]", "is_scheduled=true", "->", "(1, 2)",
            "f8e8m0fnu[]", "s4[2]", "input_output_alias={ {0}: (0, {}, may-alias) }"]


def _seeds() -> list[str]:
    if not CASES.is_dir():
        pytest.skip(f"{CASES} is absent")
    files = sorted(CASES.glob("*.hlo"))
    return [f.read_text() for f in files if f.stat().st_size < 4000]


def _real_seeds() -> list[str]:
    """Real modules as seeds: whole when small, else cut into computations (each after the module's header
    line), so a mutant parses in milliseconds."""
    seeds = []
    for path in REAL_MODULES:
        if not path.exists():
            continue
        text = path.read_text()
        if len(text) < 6000:
            seeds.append(text)
            continue
        header = text.split("\n", 1)[0]
        seeds += [f"{header}\n\n{block.strip()}\n" for block in COMPUTATION_START.split(text) if 20 < len(block) < 6000]
    if not seeds:
        pytest.skip("no real modules")
    return seeds


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


def _fuzz(seeds: list[str], seed: int, count: int) -> None:
    """`count` mutants, the same ones on every run and machine (a count, not a time budget: a loaded machine
    must not change what is tested)."""
    rng = random.Random(seed)
    for _ in range(count):
        text = _mutate(rng, rng.choice(seeds))
        try:
            _check(text)
        except HloParseError:
            raise
        except Exception as e:  # pragma: no cover - the failure message shows the mutant
            raise AssertionError(f"{type(e).__name__}: {e}\n--- mutant ---\n{text}") from e


def test_mutants_raise_only_hlo_parse_error():
    _fuzz(_seeds(), 1234, 3000)


def test_mutants_of_real_modules_raise_only_hlo_parse_error():
    """TF's and JAX's modules: metadata, layouts with tiles, dynamic dims, empty literals, scheduling, aliasing."""
    _fuzz(_real_seeds(), 4321, 900)


@pytest.mark.parametrize("text", [
    "", "HloModule", "HloModule m", "HloModule m\nENTRY e {", "(" * 5000, "HloModule m\nENTRY e {\n ROOT x = "
    + "(" * 3000 + "f32[]" + ")" * 3000 + " parameter(0)\n}", "HloModule m\nENTRY e {\n ROOT r = "
    + "negate(" * 2000 + "f32[] parameter(0)" + ")" * 2000 + "\n}", "\x00\xff", "HloModule m /*",
    'HloModule m, a="', "HloModule m\nENTRY e {\n ROOT c = f32[3] constant({1, 2, 3)\n}",
    # f8e8m0fnu's smallest value 2**-127 printed with 2 digits read back as 2**-126
    "HloModule m\nENTRY e {\n ROOT c = f8e8m0fnu[2] constant({1e-45, 3})\n}",
    "HloModule m\nENTRY e {\n ROOT c = s32[0]{0} constant({})\n}",
    "HloModule m\nENTRY e {\n ROOT c = s16[2,0] constant({ {}, {} })\n}",
])
def test_pathological_inputs(text):
    _check(text)
