"""The C header of an AOT-compiled function (aot.py): the prototype, how to call and link it, and its signature
as constants: per argument/result a block of #defines, and tables indexed by argument/result number for
generic callers. The text depends only on the compilation's inputs (no dates, paths or ids).

Every number is checked against the C type it is printed as (`_c`, `_limits`): a #define is an unsuffixed literal
(long long at most), a size_t the target's pointer width; a value that does not fit is an XlapyError, never a header that
does not compile or silently wraps. (The verifier already rejects shapes whose size overflows int64.)"""
from __future__ import annotations

import re
from typing import TYPE_CHECKING, Sequence

from ...errors import XlapyError

if TYPE_CHECKING:
    from .aot import AotArtifacts, Leaf

_NOTES = {"pred": "one byte per element, 0 or 1", "f16": "IEEE half, as its bit pattern",
          "bf16": "bfloat16, as its bit pattern"}


_LONG_LONG_MAX = (1 << 63) - 1        # an unsuffixed #define literal is at most a long long
Limits = dict[str, tuple[int, int]]    # C type -> (min, max)


def _limits(triple: str) -> Limits:
    """The range of each C type the header prints, for `triple`: size_t by its data layout's pointer width
    (`p:32:...`; LLVM's default is 64), and no more than a #define literal holds."""
    import llvmlite.binding as llvm
    try:
        layout = str(llvm.Target.from_triple(triple).create_target_machine(opt=0).target_data)
    except RuntimeError:
        layout = ""
    m = re.search(r"(?:^|-)p:(\d+)", layout)
    size_max = (1 << (int(m.group(1)) if m else 64)) - 1
    return {"int": (-(1 << 31), (1 << 31) - 1), "int64_t": (-_LONG_LONG_MAX - 1, _LONG_LONG_MAX),
            "size_t": (0, min(size_max, _LONG_LONG_MAX))}


def _c(value: int, ctype: str, what: str, limits: Limits) -> str:
    """`value` as C text, if it fits `ctype`."""
    lo, hi = limits[ctype]
    if not lo <= value <= hi:
        raise XlapyError(f"AOT header: {what} = {value} does not fit the C type {ctype} "
                         f"({lo}..{hi}); the compiled function could not describe it")
    return str(value)


def _leaf_block(prefix: str, what: str, leaf: "Leaf", limits: Limits) -> list[str]:
    note = _NOTES.get(leaf.type_name) or ("as its bit pattern, one byte per element"
                                          if leaf.c_type == "uint8_t" and leaf.type_name not in ("u8", "pred")
                                          else "")
    lines = [f"/* {what} {leaf.index}: {leaf.origin}, {leaf.type_name}[{','.join(map(str, leaf.dims))}]"
             + (f" ({note})" if note else "") + " */",
             f'#define {prefix}_TYPE "{leaf.type_name}"',
             f"#define {prefix}_CTYPE {leaf.c_type}",
             f"#define {prefix}_RANK {len(leaf.dims)}"]
    lines += [f"#define {prefix}_DIM{k} {_c(d, 'int64_t', f'{prefix}_DIM{k}', limits)}"
              for k, d in enumerate(leaf.dims)]
    lines += [f"#define {prefix}_ELEMENTS {_c(leaf.shape.numel, 'int64_t', f'{prefix}_ELEMENTS', limits)}",
              f"#define {prefix}_BYTES {_c(leaf.nbytes, 'size_t', f'{prefix}_BYTES', limits)}",
              f"#define {prefix}_ROW_MAJOR {int(leaf.row_major)}"]
    if leaf.dims:
        lines.append(f"static const int64_t {prefix}_DIMS[{len(leaf.dims)}] = {{{', '.join(map(str, leaf.dims))}}};")
    if not leaf.row_major:
        order = leaf.major_to_minor
        physical = ",".join(str(leaf.dims[d]) for d in order)
        lines.insert(1, f"/* NOT row-major: memory holds a row-major {leaf.type_name}[{physical}], the logical dims in "
                        f"the order {list(order)} (major to minor) */")
        lines.append(f"static const int {prefix}_MAJOR_TO_MINOR[{len(order)}] = {{{', '.join(map(str, order))}}};")
    return lines + [""]


def _tables(name: str, kind: str, leaves: Sequence["Leaf"], limits: Limits) -> list[str]:
    n = len(leaves)
    size = max(n, 1)
    pad = "" if n else "  /* none: one placeholder entry */"

    def table(ctype: str, suffix: str, values: list[str]) -> str:
        return f"static const {ctype} {name}_{kind}_{suffix}[{size}] = {{{', '.join(values or ['0'])}}};{pad}"
    return [table("int", "RANK", [str(len(x.dims)) for x in leaves]),
            table("size_t", "BYTES", [_c(x.nbytes, "size_t", f"{name}_{kind}_BYTES", limits) for x in leaves]),
            table("int64_t", "ELEMENTS", [_c(x.shape.numel, "int64_t", f"{name}_{kind}_ELEMENTS", limits)
                                          for x in leaves]),
            table("int", "ROW_MAJOR", [str(int(x.row_major)) for x in leaves]),
            table("char* const", "TYPE", [f'"{x.type_name}"' for x in leaves]),
            table("int64_t* const", "DIMS", [f"{name}_{kind}{x.index}_DIMS" if x.dims else "NULL" for x in leaves])]


_ALLOCATORS = ("malloc", "calloc", "realloc", "free", "posix_memalign", "aligned_alloc")


def _state_lines(art: "AotArtifacts") -> list[str]:
    allocates = any(s in _ALLOCATORS for s in art.undefined_symbols)
    first = ("   Some temporaries are malloc'ed and freed within the call; there is no" if allocates
             else "   The function allocates nothing and has no")
    return [first + " global mutable state (constants are read-only data): it",
            "   is reentrant, and thread-safe when each concurrent call has its own scratch buffer."]


def _link_lines(art: "AotArtifacts") -> list[str]:
    libc = [s for s in art.undefined_symbols if s not in art.blas_symbols]
    lines = [f"   Link with:  {art.name}.o -lm" + ("  plus a BLAS (see below)" if art.blas_symbols else ""),
             "   Undefined symbols (libc / libm): " + (" ".join(libc) if libc else "none")]
    if not art.blas_symbols:
        lines.append("   BLAS: none needed. AOT objects compile dots and convolutions to loops by default; "
                     "blas=True /")
        lines.append("         --blas calls the Fortran BLAS interface (sgemm_, dgemm_, ...) instead.")
    elif all(s.endswith("_") for s in art.blas_symbols):
        lines.append("   BLAS (Fortran interface, 32-bit integers): " + " ".join(art.blas_symbols))
        lines.append("         e.g. -lopenblas, -lblas, MKL or Accelerate.")
    else:
        lines.append("   BLAS symbols (xlapy runtime names; define them to forward to your BLAS): "
                     + " ".join(art.blas_symbols))
        lines.append("         xlapy_cblas64_<r> takes the arguments of cblas_<r> with 64-bit integers (ILP64).")
    return lines


def render_header(art: "AotArtifacts") -> str:
    name = art.name
    limits = _limits(art.triple)
    guard = f"XLAPY_AOT_{name}_H"
    out = [f"/* {name}.h: generated by xlapy's ahead-of-time compiler (xlapy aot / xlapy.aot.compile). Do not edit.",
           "",
           f"   HLO module: {art.hlo_module_name} "
           f"(the optimized module is in {name}.hlo)",
           f"   Target:     {art.triple}, cpu {art.cpu}, features {art.features or '(none)'}",
           "",
           f"   int {name}(const void* const* args, void* const* results, void* scratch);",
           "",
           f"   args[i] points at argument i ({name}_NUM_ARGS of them) and results[j] at result j "
           f"({name}_NUM_RESULTS):",
           "   dense arrays of the element types and dims below, row-major unless marked otherwise (_ROW_MAJOR 0),",
           "   each aligned to its element size;",
           "   results must not overlap the arguments. Tuple parameters and results are flattened in order.",
           f"   scratch: {name}_SCRATCH_BYTES bytes aligned to {name}_SCRATCH_ALIGNMENT, owned by the caller (NULL "
           f"is fine when",
           f"   {name}_SCRATCH_BYTES is 0); it need not be initialized and holds garbage afterwards.",
           "   Returns 0 on success (no call can fail today; other values are reserved).",
           *_state_lines(art),
           "",
           *_link_lines(art),
           "*/",
           f"#ifndef {guard}",
           f"#define {guard}",
           "",
           "#include <stddef.h>",
           "#include <stdint.h>",
           "",
           "#ifdef __cplusplus",
           'extern "C" {',
           "#endif",
           "",
           f"#define {name}_NUM_ARGS {len(art.args)}",
           f"#define {name}_NUM_RESULTS {len(art.results)}",
           f"#define {name}_SCRATCH_BYTES {_c(art.scratch_bytes, 'size_t', f'{name}_SCRATCH_BYTES', limits)}",
           f"#define {name}_SCRATCH_ALIGNMENT {art.scratch_alignment}",
           ""]
    for leaf in art.args:
        out += _leaf_block(f"{name}_ARG{leaf.index}", "argument", leaf, limits)
    for leaf in art.results:
        out += _leaf_block(f"{name}_RESULT{leaf.index}", "result", leaf, limits)
    out += ["/* the same, indexed by argument / result number */"]
    out += _tables(name, "ARG", art.args, limits) + _tables(name, "RESULT", art.results, limits)
    out += ["",
            f"int {name}(const void* const* args, void* const* results, void* scratch);",
            "",
            "#ifdef __cplusplus",
            "}",
            "#endif",
            "",
            f"#endif  /* {guard} */",
            ""]
    return "\n".join(out)
