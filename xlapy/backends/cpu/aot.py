"""Ahead-of-time compilation (XLA's tfcompile): an HLO module -> a position-independent object file holding one
C-callable function, and a C header describing it (aot_header.py).

    int NAME(const void* const* args, void* const* results, void* scratch);

args[i] points at the i-th array leaf of the entry parameters (tuple parameters flattened in order, tokens
skipped), results[j] at the j-th array leaf of the result, both dense in their HLO layout (row-major unless
the entry layout says otherwise; the header says which); scratch is a caller-owned
buffer of NAME_SCRATCH_BYTES (64-byte aligned) that holds every temporary. The function allocates nothing and
touches no global mutable state (constants are read-only data), so it is reentrant given a scratch buffer per
concurrent call. It returns 0.

The code is the JIT's (compiler.emit_llvm): NAME is a thin wrapper around the internal entry function, and every
other definition is renamed `NAME.<n>` with private linkage, so objects for several modules link together and
the same input gives the same bytes. BLAS calls are off by default (dots and convolutions become loops), so the
object needs only libc and libm; with blas=True it calls the Fortran BLAS interface (`sgemm_`, ...).
"""
from __future__ import annotations

import contextlib
import re
import shutil
import struct
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import llvmlite.binding as llvm
from llvmlite import ir

from ...errors import XlapyError
from ...hlo import Module, Shape
from . import aot_target, runtime
from .buffers import ALIGNMENT, byte_size
from .abi import ENTRY_NAME
from .compiler import emit_llvm, optimize_llvm, parse_llvm
from .indexing import major_to_minor
from .irhelpers import I8P, I32
from .llvm_jit import init_llvm

_C_KEYWORDS = frozenset("""auto break case char const continue default do double else enum extern float for goto if
inline int long register restrict return short signed sizeof static struct switch typedef union unsigned void
volatile while _Bool _Complex _Imaginary bool true false main""".split())

# HLO element type -> the C type of one element in memory
C_TYPES = {"pred": "uint8_t", "s8": "int8_t", "s16": "int16_t", "s32": "int32_t", "s64": "int64_t",
           "u8": "uint8_t", "u16": "uint16_t", "u32": "uint32_t", "u64": "uint64_t",
           "f16": "uint16_t", "bf16": "uint16_t", "f32": "float", "f64": "double",
           "c64": "float _Complex", "c128": "double _Complex"}


@dataclass(frozen=True)
class Leaf:
    """One array argument or result of the C function."""
    index: int
    origin: str          # where it comes from in the HLO signature, for the header's comments
    shape: Shape

    @property
    def dims(self) -> tuple[int, ...]:
        return tuple(self.shape.dims)

    @property
    def type_name(self) -> str:
        return self.shape.element_type

    @property
    def c_type(self) -> str:
        return C_TYPES.get(self.type_name, "uint8_t")    # f8 and 2/4-bit types: one byte per element

    @property
    def nbytes(self) -> int:
        return byte_size(self.shape)

    @property
    def major_to_minor(self) -> tuple[int, ...]:
        """The logical dims from the most major to the most minor in memory: 0, 1, ... when row-major."""
        return tuple(major_to_minor(self.shape))

    @property
    def row_major(self) -> bool:
        return self.major_to_minor == tuple(range(len(self.dims)))


@dataclass
class AotArtifacts:
    """The products of one AOT compilation; `write` puts them on disk and records the paths in `files`."""
    name: str
    triple: str
    cpu: str
    features: str
    object_code: bytes
    header: str
    hlo_text: str
    scratch_bytes: int
    args: tuple[Leaf, ...]
    results: tuple[Leaf, ...]
    undefined_symbols: tuple[str, ...]
    blas_symbols: tuple[str, ...]
    hlo_module_name: str = ""
    scratch_alignment: int = ALIGNMENT
    files: dict[str, Path] = field(default_factory=dict)

    def write(self, out_dir: str | Path, shared: bool = False) -> dict[str, Path]:
        out = Path(out_dir)
        try:
            out.mkdir(parents=True, exist_ok=True)
            files = {"o": out / f"{self.name}.o", "h": out / f"{self.name}.h", "hlo": out / f"{self.name}.hlo"}
            files["o"].write_bytes(self.object_code)
            files["h"].write_text(self.header)
            files["hlo"].write_text(self.hlo_text)
        except OSError as e:
            raise XlapyError(f"cannot write AOT output to {out}: {e.strerror or e}") from None
        if shared:
            files["so"] = _link_shared(self, files["o"], out / f"{self.name}.so")
        self.files = files
        return files


# -- target ----------------------------------------------------------------------------------------
_all_targets = False


def _target_machine(triple: str | None, cpu: str | None, features: str | None):
    """(target machine, triple, cpu, features). Defaults are portable: the host triple with a generic CPU and
    no extra features; cpu="host" tunes for (and requires the features of) the machine compiling. Anything else
    is checked first (aot_target.py): LLVM aborts the process on some combinations."""
    global _all_targets
    aot_target.check_values(triple, cpu, features)
    init_llvm()
    if not _all_targets:
        llvm.initialize_all_targets()
        llvm.initialize_all_asmprinters()
        _all_targets = True
    host = llvm.get_process_triple()
    chosen = (triple, cpu, features)
    triple = triple or host
    try:
        target = llvm.Target.from_triple(triple)
    except RuntimeError as e:
        raise XlapyError(f"unknown or unsupported target triple {triple!r}: {str(e).strip()}") from None
    if cpu == "host":
        if triple.split("-")[0] != host.split("-")[0]:
            raise XlapyError(f"cpu 'host' describes this machine ({host}); it cannot be used for target {triple}")
        cpu = llvm.get_host_cpu_name()
        features = features if features is not None else llvm.get_host_cpu_features().flatten()
    cpu = cpu or "generic"
    features = features or ""
    if chosen[0] not in (None, host) or chosen[1] not in (None, "generic", "host") or chosen[2]:
        aot_target.probe(triple, cpu, features)
    tm = target.create_target_machine(cpu=cpu, features=features, opt=3, reloc="pic", codemodel="default")
    return tm, triple, cpu, features


@contextlib.contextmanager
def _blas_provider(blas: bool):
    """Select the BLAS the emitter calls while compiling: none, or one with the Fortran ABI (the symbols every
    BLAS exports); the process's previous choice is restored afterwards. (Process-wide: a JIT compile running
    in another thread meanwhile sees the same choice.)"""
    previous = runtime.provider()
    before = previous.name if previous is not None else "none"
    wanted = "scipy" if blas else "none"
    if before == wanted:
        yield
        return
    try:
        found = runtime.use_provider(wanted)
    except ValueError:
        found = None
    if found is None and blas:
        # The process's own BLAS is registered under JIT-only names (xlapy_*): an object calling them would not
        # link anywhere else, so say what is missing instead of writing one.
        runtime.use_provider(before)
        raise XlapyError("aot with BLAS needs scipy (its Fortran BLAS interface tells the emitter how to call "
                         "sgemm_); install scipy, or compile with --no-blas (loops only)")
    try:
        yield
    finally:
        runtime.use_provider(before)


# -- checks ------------------------------------------------------------------------------------------
def check_name(name: str) -> None:
    if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
        raise XlapyError(f"AOT function name {name!r} is not a C identifier")
    if name in _C_KEYWORDS:
        raise XlapyError(f"AOT function name {name!r} is a C keyword")
    if name.startswith("xlapy_"):
        raise XlapyError(f"AOT function name {name!r}: the prefix xlapy_ is reserved for the runtime's symbols")


def _check_supported(module: Module) -> None:
    for comp in module.computations:
        for inst in comp.instructions:
            if inst.opcode == "custom-call":
                target = inst.attrs.get("custom_call_target", "?")
                raise XlapyError(f"AOT: custom-call {target} (instruction %{inst.name} in {comp.name}) is not "
                                 f"supported: a standalone object cannot call custom-call targets")


def _leaves(module: Module) -> tuple[tuple[Leaf, ...], tuple[Leaf, ...]]:
    args: list[Leaf] = []

    def walk(shape: Shape, origin: str, path: tuple[int, ...], out: list[Leaf]) -> None:
        if shape.is_tuple:
            for k, s in enumerate(shape.tuple_shapes):
                walk(s, origin, path + (k,), out)
            return
        if shape.is_token:
            return
        where = origin + (f" tuple index {{{','.join(map(str, path))}}}" if path else "")
        out.append(Leaf(len(out), where, shape))

    for i, p in enumerate(module.entry.parameters):
        walk(p.shape, f"parameter {i} ({p.name})", (), args)
    results: list[Leaf] = []
    walk(module.entry.root.shape, "result", (), results)
    return tuple(args), tuple(results)


# -- LLVM --------------------------------------------------------------------------------------------
def _add_wrapper(llvm_module: ir.Module, name: str) -> None:
    if name in llvm_module.globals:
        raise XlapyError(f"AOT function name {name!r} collides with a symbol the generated code uses")
    entry = llvm_module.get_global(ENTRY_NAME)
    fn = ir.Function(llvm_module, ir.FunctionType(I32, [I8P.as_pointer(), I8P.as_pointer(), I8P]), name)
    for attr in entry.attributes:        # the same FP-environment attributes, so LLVM inlines the entry
        set.add(fn.attributes, attr)
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    b.call(entry, list(fn.args))
    b.ret(ir.Constant(I32, 0))


def _internalize(mod, name: str) -> None:
    """Every definition but `name` becomes private and is renamed NAME.<n> in module order: no symbol clashes
    between objects, and no process-wide counters leak into the object's bytes."""
    n = 0
    for g in list(mod.functions) + list(mod.global_variables):
        if g.is_declaration or g.name == name:
            continue
        g.name = f"{name}.{n}"
        g.linkage = llvm.Linkage.private if not g.is_function else llvm.Linkage.internal
        n += 1


def _check_no_mutable_globals(mod, module_name: str) -> None:
    for g in mod.global_variables:
        kind = next((t for t in str(g).split() if t in ("constant", "global")), "global")
        if not g.is_declaration and kind != "constant":
            raise XlapyError(f"AOT: module {module_name}: the generated code has a writable global {g.name}; "
                             f"the object would not be reentrant")


# -- ELF inspection ---------------------------------------------------------------------------------
def undefined_elf_symbols(obj: bytes) -> list[str] | None:
    """Names of the undefined symbols of a little-endian ELF64 relocatable object; None for other formats."""
    if obj[:4] != b"\x7fELF" or obj[4] != 2 or obj[5] != 1:
        return None
    shoff, = struct.unpack_from("<Q", obj, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", obj, 0x3A)
    sections = [struct.unpack_from("<IIQQQQIIQQ", obj, shoff + k * shentsize) for k in range(shnum)]
    names = set()
    for _, sh_type, _, _, offset, size, link, _, _, entsize in sections:
        if sh_type != 2:                                     # SHT_SYMTAB
            continue
        str_off = sections[link][4]
        for k in range(size // entsize):
            st_name, _, _, st_shndx, _, _ = struct.unpack_from("<IBBHQQ", obj, offset + k * entsize)
            if st_shndx == 0 and st_name:
                end = obj.index(b"\0", str_off + st_name)
                names.add(obj[str_off + st_name:end].decode())
    return sorted(names)


def _declared_symbols(mod) -> list[str]:
    return sorted(f.name for f in mod.functions if f.is_declaration and not f.name.startswith("llvm."))


def _rename_blas(mod) -> None:
    """The Fortran-ABI provider's functions are registered as xlapy_f77_<routine>: call the standard names."""
    for f in mod.functions:
        m = re.fullmatch(r"xlapy_f77_(\w+)", f.name)
        if f.is_declaration and m:
            f.name = m.group(1) + "_"


# -- the compiler --------------------------------------------------------------------------------------
def compile_aot(module: Module, name: str, target_triple: str | None = None, cpu: str | None = None,
                features: str | None = None, blas: bool = False, fast_math: bool = False,
                run_pipeline: bool | None = None) -> AotArtifacts:
    """Compile `module` ahead of time into an object file and C header for function `name` (in memory; call
    `.write(out_dir)` on the result)."""
    from .aot_header import render_header
    check_name(name)
    if module.entry is None:
        raise XlapyError(f"module {module.name} has no entry computation")
    _check_supported(module)
    tm, triple, cpu, features = _target_machine(target_triple, cpu, features)
    with _blas_provider(blas):
        optimized, llvm_module, scratch, _ = emit_llvm(module, tm, triple, run_pipeline, True, fast_math)
    args, results = _leaves(optimized)
    llvm_module.name = name
    _add_wrapper(llvm_module, name)
    mod = parse_llvm(optimized, str(llvm_module))
    mod.name = name
    _internalize(mod, name)
    _rename_blas(mod)
    optimize_llvm(mod, tm)
    _check_no_mutable_globals(mod, optimized.name)
    obj = bytes(tm.emit_object(mod))
    undefined = undefined_elf_symbols(obj)
    if undefined is None:
        undefined = _declared_symbols(mod)
    blas_symbols = tuple(s for s in undefined if re.fullmatch(r"[sdcz](gemm|gemv)_|xlapy_\w+", s))
    art = AotArtifacts(name, triple, cpu, features, obj, "", optimized.to_text(), scratch, args, results,
                       tuple(undefined), blas_symbols, optimized.name)
    art.header = render_header(art)
    return art


def _link_shared(art: AotArtifacts, obj: Path, out: Path) -> Path:
    host = llvm.get_process_triple()
    compiler = "gcc" if art.triple.split("-")[0] == host.split("-")[0] else f"{art.triple}-gcc"
    exe = shutil.which(compiler)
    if exe is None:
        raise XlapyError(f"--shared needs {compiler} on PATH to link {out.name}")
    with tempfile.TemporaryDirectory() as tmp:   # link in a scratch dir: no paths of the caller's in the .so
        tmp_obj = Path(tmp) / obj.name
        shutil.copyfile(obj, tmp_obj)
        proc = subprocess.run([exe, "-shared", "-o", f"{art.name}.so", obj.name, "-lm"],
                              cwd=tmp, capture_output=True, text=True)
        if proc.returncode != 0:
            last = (proc.stderr.strip().splitlines() or ["(no output)"])[-1]
            raise XlapyError(f"linking {out.name} with {compiler} failed: {last}")
        shutil.copyfile(Path(tmp) / f"{art.name}.so", out)
    return out


__all__ = ["AotArtifacts", "Leaf", "compile_aot", "check_name", "undefined_elf_symbols", "C_TYPES", "ALIGNMENT"]
