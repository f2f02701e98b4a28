"""Sorting with a comparator computation, fast: the interpreter's rule for `sort` and `topk`.

XLA's sort is a stable sort of index permutations, ordered by a comparator computation
`(lhs_0, rhs_0, lhs_1, rhs_1, ...) -> pred` ("lhs sorts before rhs"). Running the comparator once per
comparison costs milliseconds, so three strategies are tried, fastest first:
  1. key sort: the root is `compare(f(p_2k), f(p_2k+1))` with direction LT/GT: evaluate f on the whole
     operand at once (the comparator's ops are elementwise, so they broadcast) and argsort that key
     (stable), in the compare's order (TOTALORDER/FLOAT/SIGNED/UNSIGNED).
  2. rank by matrix: evaluate the comparator on all n*n pairs at once; element i lands at
     #{j: j < i in the order} + #{j before i: tied with i} -- exactly a stable sort's position.
  3. merge sort (Python's stable sort) calling the comparator per pair: any comparator, slow.
"""
from __future__ import annotations

import functools

import numpy as np

from ...hlo import Computation, Instruction

_MATRIX_LIMIT = 1 << 22         # most comparator results evaluated at once in strategy 2
_MATRIX_MAX_N = 4096


# -- orders ----------------------------------------------------------------------------------------

def total_order_key(x: np.ndarray) -> np.ndarray:
    """Float -> signed int of the same width, ordered -NaN < -Inf < ... < -0 < +0 < ... < Inf < NaN."""
    x = np.asarray(x)
    signed = np.dtype(f"i{x.dtype.itemsize}")
    s = x.view(signed)
    mask = signed.type(np.iinfo(signed).max)
    return s ^ ((s >> signed.type(x.dtype.itemsize * 8 - 1)) & mask)


def ascending_key(x: np.ndarray, compare_type: str | None) -> np.ndarray | None:
    """An integer/float array whose ascending numpy order is the comparison's order, or None."""
    x = np.asarray(x)
    kind = x.dtype.kind
    if kind == "b":
        return x.astype(np.uint8)
    if kind in "iu":
        if compare_type == "UNSIGNED" and kind == "i":
            return x.view(np.dtype(f"u{x.dtype.itemsize}"))
        if compare_type == "SIGNED" and kind == "u":
            return x.view(np.dtype(f"i{x.dtype.itemsize}"))
        return x
    if kind == "f" or x.dtype.name.startswith(("bfloat16", "float8", "float4")):
        if compare_type != "TOTALORDER":   # FLOAT: -0 == +0 (NaNs have no place; they go by sign)
            x = np.where(x == 0, np.zeros_like(x), x)
        if x.dtype.itemsize in (1, 2, 4, 8) and x.dtype.name != "float4_e2m1fn":
            return total_order_key(x)
        return total_order_key(x.astype(np.float32))
    return None


def descending(key: np.ndarray) -> np.ndarray:
    """A key whose ascending order is `key`'s descending order (ties keep their order)."""
    return ~key


# -- comparator evaluation on whole arrays ---------------------------------------------------------

def eval_values(ev, comp: Computation, args: list) -> dict[int, object]:
    """Every instruction's value when `comp` runs on `args` (arrays broadcast through scalar ops)."""
    values: dict[int, object] = {}
    with np.errstate(all="ignore"):
        for inst in comp.post_order():
            if inst.opcode == "parameter":
                values[id(inst)] = args[inst.parameter_number]
            else:
                values[id(inst)] = ev.table[inst.opcode](inst, [values[id(o)] for o in inst.operands], ev)
    return values


def _params_reached(inst: Instruction) -> set[int]:
    seen, stack, params = set(), [inst], set()
    while stack:
        i = stack.pop()
        if id(i) in seen:
            continue
        seen.add(id(i))
        if i.opcode == "parameter":
            params.add(i.parameter_number)
        elif i.opcode in ("rng", "rng-bit-generator", "custom-call", "infeed", "recv"):
            params.add(-1)   # not a pure function of the parameters
        stack.extend(i.operands)
    return params


def _bit_equal(a: np.ndarray, b: np.ndarray) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.dtype.kind in "fcV" or a.dtype.itemsize < 1:
        return a.tobytes() == b.tobytes()
    return bool(np.array_equal(a, b))


def _lex_terms(node: Instruction) -> list[tuple[Instruction, str]] | None:
    """`compare(a, b) LT|GT`, or `or(compare(a,b) LT|GT, and(compare(a,b) EQ, REST))`: lexicographic keys."""
    if node.opcode == "compare" and node.attrs.get("direction") in ("LT", "GT"):
        return [(node, node.attrs["direction"])]
    if node.opcode != "or":
        return None
    for first, second in (node.operands, node.operands[::-1]):
        if first.opcode != "compare" or first.attrs.get("direction") not in ("LT", "GT") or second.opcode != "and":
            continue
        for eq, rest in (second.operands, second.operands[::-1]):
            if eq.opcode == "compare" and eq.attrs.get("direction") == "EQ" and \
                    {id(o) for o in eq.operands} == {id(o) for o in first.operands}:
                tail = _lex_terms(rest)
                if tail is not None:
                    return [(first, first.attrs["direction"])] + tail + [(eq, "EQ")]
    return None


def _key_sort(ev, comp: Computation, flat: list[np.ndarray]) -> np.ndarray | None:
    """Strategy 1: a permutation (rows, n), or None when the comparator is not a (lexicographic) key comparison."""
    terms = _lex_terms(comp.root)
    if terms is None:
        return None
    values = None
    keys = []
    for cmp_inst, direction in terms:
        a, b = (_params_reached(o) for o in cmp_inst.operands)
        if len(a) != 1 or len(b) != 1:
            return None
        (pa,), (pb,) = a, b
        if pa < 0 or pb < 0 or pa // 2 != pb // 2 or pa == pb or pa // 2 >= len(flat):
            return None
        if values is None:
            values = eval_values(ev, comp, [f for f in flat for _ in (0, 1)])
        ka, kb = (np.asarray(values[id(o)]) for o in cmp_inst.operands)
        if ka.shape != flat[0].shape or not _bit_equal(ka, kb):
            return None
        if direction == "EQ":
            # EQ must tie exactly the elements that the key order ties (FLOAT NaNs never compare equal).
            if ka.dtype.kind not in "iub" and cmp_inst.attrs.get("type") != "TOTALORDER" and np.isnan(
                    ka.astype(np.float32)).any():
                return None
            continue
        key = ascending_key(ka, cmp_inst.attrs.get("type"))
        if key is None:
            return None
        # compare(f(lhs), f(rhs)) LT is ascending; the same with the parameters swapped is descending.
        if (direction == "GT") == (pa % 2 == 0):
            key = descending(key)
        keys.append(key)
    if len(keys) == 1:
        return np.argsort(keys[0], axis=-1, kind="stable")
    return np.lexsort(keys[::-1], axis=-1)


def _matrix_sort(ev, comp: Computation, flat: list[np.ndarray]) -> np.ndarray | None:
    """Strategy 2: stable positions from the full comparison matrix of each row."""
    rows, n = flat[0].shape
    if n > _MATRIX_MAX_N:
        return None
    chunk = max(1, _MATRIX_LIMIT // max(n * n, 1))
    perms = []
    for r0 in range(0, rows, chunk):
        part = [f[r0:r0 + chunk] for f in flat]
        args = []
        for f in part:
            args += [f[:, :, None], f[:, None, :]]
        try:
            less = np.asarray(eval_values(ev, comp, args)[id(comp.root)])
        except Exception:
            return None
        if less.dtype != np.bool_ or less.shape != (part[0].shape[0], n, n):
            return None
        if not _spot_check(ev, comp, part, less):
            return None
        tied = ~less & ~np.swapaxes(less, 1, 2)
        before = np.tril(np.ones((n, n), bool), -1)          # before[i, j]: j < i
        pos = less.sum(axis=1) + (tied & before).sum(axis=2)  # less[r, j, i] summed over j
        perm = np.empty_like(pos)
        np.put_along_axis(perm, pos, np.arange(n)[None].repeat(pos.shape[0], 0), axis=1)
        check = np.zeros_like(pos)
        np.put_along_axis(check, pos, 1, axis=1)
        if not check.all():       # not a strict weak order: positions collide
            return None
        perms.append(perm)
    return np.concatenate(perms, axis=0) if perms else np.zeros((0, n), np.int64)


def _spot_check(ev, comp: Computation, part: list[np.ndarray], less: np.ndarray) -> bool:
    """Compare a few broadcast results with scalar calls (guards against a non-elementwise comparator)."""
    rows, n = part[0].shape
    picks = {(0, 0, n - 1), (rows - 1, n - 1, 0), (rows // 2, n // 2, (n // 3))}
    for r, i, j in picks:
        args = []
        for f in part:
            args += [f[r, i][()], f[r, j][()]]
        if bool(ev.call(comp, [np.asarray(a) for a in args])) != bool(less[r, i, j]):
            return False
    return True


def _merge_sort(ev, comp: Computation, flat: list[np.ndarray]) -> np.ndarray:
    """Strategy 3: Python's stable sort, one comparator call per comparison."""
    rows, n = flat[0].shape
    out = np.empty((rows, n), np.int64)
    for r in range(rows):
        row = [f[r] for f in flat]

        def cmp(i: int, j: int) -> int:
            args = []
            for f in row:
                args += [np.asarray(f[i]), np.asarray(f[j])]
            return -1 if bool(ev.call(comp, args)) else 0
        out[r] = sorted(range(n), key=functools.cmp_to_key(cmp))
    return out


def sort_permutation(ev, comp: Computation, flat: list[np.ndarray]) -> np.ndarray:
    """The stable sorted order (rows, n) of each row of the operands `flat` (each (rows, n))."""
    if flat[0].shape[1] <= 1:
        return np.zeros(flat[0].shape, np.int64)
    for strategy in (_key_sort, _matrix_sort):
        try:
            perm = strategy(ev, comp, flat)
        except Exception:
            perm = None
        if perm is not None:
            return perm
    return _merge_sort(ev, comp, flat)
