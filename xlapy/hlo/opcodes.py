"""THE opcode table: every HLO opcode xlapy knows, with its arity and traits. Nothing else lists opcodes.

Arity: an int, or VARIADIC. Traits (single letters in the table, spelled out in TRAITS):
  E elementwise   C commutative   S side effects (never removed/deduplicated)   X expensive (transcendental)
  A an associative reduction-style binary op   K cheap shape/layout op (movement only)   R reads a called computation
"""
from __future__ import annotations

from dataclasses import dataclass, field

VARIADIC = -1

TRAITS = {"E": "elementwise", "C": "commutative", "S": "side_effect", "X": "expensive",
          "A": "associative", "K": "data_movement", "R": "calls_computation"}


@dataclass(frozen=True)
class OpInfo:
    """One row of the table. The trait flags are plain fields, made once from `traits` (passes read them for
    every instruction they visit, many times a compile)."""
    name: str
    arity: int
    traits: frozenset[str]
    is_elementwise: bool = field(init=False, repr=False, compare=False)
    is_commutative: bool = field(init=False, repr=False, compare=False)
    has_side_effect: bool = field(init=False, repr=False, compare=False)
    is_expensive: bool = field(init=False, repr=False, compare=False)
    is_associative: bool = field(init=False, repr=False, compare=False)
    is_data_movement: bool = field(init=False, repr=False, compare=False)
    calls_computations: bool = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        for flag, trait in _FLAGS.items():
            object.__setattr__(self, flag, trait in self.traits)


_FLAGS = {"is_elementwise": "elementwise", "is_commutative": "commutative", "has_side_effect": "side_effect",
          "is_expensive": "expensive", "is_associative": "associative", "is_data_movement": "data_movement",
          "calls_computations": "calls_computation"}


V = VARIADIC
_TABLE = """
# name                         arity  traits
abs                            1      E
add                            2      ECA
add-dependency                 2      -
after-all                      V      S
all-gather                     V      S
all-gather-start               V      S
all-gather-done                1      S
all-reduce                     V      SR
all-reduce-start               V      SR
all-reduce-done                1      S
all-to-all                     V      S
and                            2      ECA
async-start                    V      SR
async-update                   1      SR
async-done                     1      SR
atan2                          2      EX
batch-norm-grad                5      -
batch-norm-inference           5      -
batch-norm-training            3      -
bitcast                        1      K
bitcast-convert                1      -
broadcast                      1      K
call                           V      R
cbrt                           1      EX
ceil                           1      E
cholesky                       1      X
clamp                          3      E
collective-broadcast           V      S
collective-permute             V      S
collective-permute-start       V      S
collective-permute-done        1      S
compare                        2      E
complex                        2      E
concatenate                    V      K
conditional                    V      R
constant                       0      -
convert                        1      E
convolution                    2      X
copy                           1      EK
copy-done                      1      -
copy-start                     1      -
cosine                         1      EX
count-leading-zeros            1      E
custom-call                    V      R
divide                         2      EX
domain                         1      -
dot                            2      X
dynamic-reshape                V      -
dynamic-slice                  V      K
dynamic-update-slice           V      K
erf                            1      EX
exponential                    1      EX
exponential-minus-one          1      EX
fft                            1      X
floor                          1      E
fusion                         V      R
gather                         2      -
get-dimension-size             1      -
get-tuple-element              1      K
imag                           1      E
infeed                         1      S
iota                           0      -
is-finite                      1      E
log                            1      EX
log-plus-one                   1      EX
logistic                       1      EX
map                            V      ER
maximum                        2      ECA
minimum                        2      ECA
multiply                       2      ECA
negate                         1      E
not                            1      E
opt-barrier                    1      -
or                             2      ECA
outfeed                        2      S
pad                            2      K
parameter                      0      -
partition-id                   0      -
popcnt                         1      E
power                          2      EX
ragged-all-to-all              V      S
real                           1      E
recv                           1      S
recv-done                      1      S
reduce                         V      R
reduce-precision               1      E
reduce-scatter                 V      SR
reduce-window                  V      R
remainder                      2      EX
replica-id                     0      -
reshape                        1      K
reverse                        1      K
rng                            V      S
rng-bit-generator              1      -
rng-get-and-update-state       0      S
ragged-dot                     V      X
round-nearest-afz              1      E
round-nearest-even             1      E
rsqrt                          1      EX
scan                           V      R
scatter                        V      R
select                         3      E
select-and-scatter             3      R
send                           2      S
send-done                      1      S
set-dimension-size             2      -
shift-left                     2      E
shift-right-arithmetic         2      E
shift-right-logical            2      E
sign                           1      E
sine                           1      EX
slice                          1      K
sort                           V      R
sqrt                           1      EX
stochastic-convert             2      E
subtract                       2      E
tan                            1      EX
tanh                           1      EX
topk                           1      -
transpose                      1      K
triangular-solve               2      X
tuple                          V      K
while                          1      R
xor                            2      ECA
"""


def _parse_table(text: str) -> dict[str, OpInfo]:
    table = {}
    for line in text.strip().splitlines():
        if line.startswith("#"):
            continue
        name, arity, traits = line.split()
        table[name] = OpInfo(name, VARIADIC if arity == "V" else int(arity),
                             frozenset(TRAITS[t] for t in traits if t != "-"))
    return table


OPCODES: dict[str, OpInfo] = _parse_table(_TABLE)

UNARY_ELEMENTWISE = frozenset(n for n, o in OPCODES.items() if o.is_elementwise and o.arity == 1)
BINARY_ELEMENTWISE = frozenset(n for n, o in OPCODES.items() if o.is_elementwise and o.arity == 2)


def opinfo(name: str) -> OpInfo:
    """The table row of an opcode; KeyError names the opcode."""
    try:
        return OPCODES[name]
    except KeyError:
        raise KeyError(f"unknown HLO opcode {name!r}") from None
