"""Ahead-of-time compilation (xlapy.aot / `xlapy aot`): object + header for several modules, called from a C
program built with gcc (aot_c/driver.c: inputs from a raw file, outputs to one, four threads at once), outputs
compared with the interpreter and XLA's recorded ones; determinism; cross-compilation; errors."""
from __future__ import annotations

import ctypes
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import xlapy
import xlapy.aot
import xlapy.numpy as jnp
from xlapy.backends.cpu.aot import undefined_elf_symbols
from xlapy.testing import CORPUS, assert_same
from xlapy.tools import npz

C_DIR = Path(__file__).parent / "aot_c"
GCC = shutil.which("gcc")
READELF = shutil.which("readelf")
needs_gcc = pytest.mark.skipif(GCC is None, reason="gcc is not installed")
XLAPY = [sys.executable, "-m", "xlapy.tools.cli"]


def run_in_c(art: xlapy.aot.AotArtifacts, args, tmp_path: Path, extra_sources=()) -> list[np.ndarray]:
    """Build driver.c against the artifacts, feed it `args` (raw bytes), return its results as arrays."""
    out_dir = tmp_path / art.name
    files = art.write(out_dir)
    exe = out_dir / "driver"
    cmd = [GCC, "-std=gnu11", "-O1", "-Wall", "-Wextra", "-Werror", f'-DAOT_HEADER="{files["h"]}"',
           f"-DAOT_NAME={art.name}", str(C_DIR / "driver.c"), str(files["o"]), *map(str, extra_sources),
           "-lm", "-lpthread", "-o", str(exe)]
    build = subprocess.run(cmd, capture_output=True, text=True)
    assert build.returncode == 0, build.stderr
    assert len(args) == len(art.args)
    (out_dir / "in.bin").write_bytes(b"".join(np.ascontiguousarray(np.asarray(a).transpose(leaf.major_to_minor))
                                              .tobytes() for a, leaf in zip(args, art.args)))
    proc = subprocess.run([str(exe), str(out_dir / "in.bin"), str(out_dir / "out.bin")], capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    raw, outs, offset = (out_dir / "out.bin").read_bytes(), [], 0
    for leaf in art.results:
        physical = np.frombuffer(raw, leaf.shape.dtype, leaf.shape.numel, offset).reshape(
            [leaf.dims[d] for d in leaf.major_to_minor])
        outs.append(physical.transpose(np.argsort(leaf.major_to_minor)))
        offset += leaf.nbytes
    assert offset == len(raw)
    return outs


def interpret(module: xlapy.hlo.Module, args) -> list[np.ndarray]:
    return npz.flatten(xlapy.compile(module, backend="interpreter")(*args))


def check_corpus(name: str, tmp_path: Path, **options) -> xlapy.aot.AotArtifacts:
    path = CORPUS / "jax" / f"{name}.hlo"
    data = npz.load(path.with_suffix(".npz"))
    args, expected = npz.numbered(data, "arg"), npz.numbered(data, "out")
    module = xlapy.hlo.parse(path.read_text())
    try:
        art = xlapy.aot.compile_module(module, name=name, **options)
    except xlapy.UnimplementedError as e:
        pytest.skip(f"the CPU backend does not support this module yet: {e}")
    got = run_in_c(art, args, tmp_path)
    assert len(got) == len(expected)
    for i, (g, ref, xla) in enumerate(zip(got, interpret(module, args), expected)):
        assert_same(g, ref, where=f"{name} out{i} vs interpreter")
        assert_same(g, xla, where=f"{name} out{i} vs XLA")
    return art


# -- compiled and called from C ----------------------------------------------------------------------------
@needs_gcc
def test_traced_mlp_from_c(tmp_path):
    def mlp(w1, b1, w2, x):
        return jnp.tanh(jnp.maximum(x @ w1 + b1, 0.0) @ w2)
    rng = np.random.default_rng(0)
    args = [rng.standard_normal(s).astype(np.float32) for s in [(16, 32), (32,), (32, 8), (64, 16)]]
    examples = [args[0], ((32,), np.float32), ((32, 8), "float32"), ((64, 16), np.float32)]
    art = xlapy.aot.compile_module(mlp, *examples, name="mlp")
    assert [leaf.dims for leaf in art.args] == [(16, 32), (32,), (32, 8), (64, 16)]
    assert [(leaf.dims, leaf.type_name) for leaf in art.results] == [((64, 8), "f32")]
    assert "malloc" not in art.undefined_symbols and not art.blas_symbols
    (got,) = run_in_c(art, args, tmp_path)
    module = xlapy.jit(mlp).lower(*args).module
    assert_same(got, interpret(module, args)[0])
    np.testing.assert_allclose(got, np.tanh(np.maximum(args[3] @ args[0] + args[1], 0) @ args[2]), rtol=1e-4,
                               atol=1e-5)


@needs_gcc
@pytest.mark.parametrize("name", ["mlp_forward", "conv2d_nhwc_same", "while_loop", "fori_loop", "sort_two_keys",
                                  "argsort_stable", "reshape_various"])
def test_corpus_module_from_c(name, tmp_path):
    art = check_corpus(name, tmp_path)
    if name == "reshape_various":       # a column-major result: described, not refused
        assert not art.results[3].row_major and "#define reshape_various_RESULT3_ROW_MAJOR 0" in art.header


@needs_gcc
def test_tuple_parameter_and_result_are_flattened(tmp_path):
    module = xlapy.hlo.parse("""HloModule tuples
ENTRY e {
  p = (f32[2,3], (s32[], f32[3])) parameter(0)
  a = f32[2,3] get-tuple-element(p), index=0
  q = (s32[], f32[3]) get-tuple-element(p), index=1
  b = f32[3] get-tuple-element(q), index=1
  bb = f32[2,3] broadcast(b), dimensions={1}
  s = f32[2,3] add(a, bb)
  n = s32[] get-tuple-element(q), index=0
  ROOT r = (f32[2,3], s32[]) tuple(s, n)
}
""")
    art = xlapy.aot.compile_module(module, name="tuples")
    assert [leaf.origin for leaf in art.args] == ["parameter 0 (p) tuple index {0}",
                                                 "parameter 0 (p) tuple index {1,0}",
                                                 "parameter 0 (p) tuple index {1,1}"]
    a, n, b = np.arange(6, dtype=np.float32).reshape(2, 3), np.int32(7), np.array([1, 2, 3], np.float32)
    got = run_in_c(art, [a, n, b], tmp_path)
    assert_same(got[0], a + b)
    assert got[1] == 7


def test_blas_without_a_fortran_interface_is_a_clear_error(monkeypatch):
    """With no Fortran-ABI BLAS known (scipy absent), blas=True refuses instead of writing an object that calls
    the JIT-only xlapy_* symbols (regression: a fresh environment without scipy produced such objects)."""
    from xlapy.backends.cpu import runtime
    real = runtime.use_provider
    monkeypatch.setattr(runtime, "use_provider", lambda name=None: None if name == "scipy" else real(name))
    module = xlapy.hlo.parse("HloModule m\n\nENTRY e {\n  ROOT p = f32[4] parameter(0)\n}\n")
    with pytest.raises(xlapy.XlapyError, match="needs scipy"):
        xlapy.aot.compile_module(module, name="m", blas=True)


@needs_gcc
def test_blas_object_links_against_a_fortran_blas(tmp_path):
    """blas=True: the object calls sgemm_ (the Fortran interface every BLAS exports); here a reference one."""
    pytest.importorskip("scipy", reason="the Fortran BLAS interface comes from scipy")
    module = xlapy.hlo.parse("""HloModule bigconv
ENTRY e {
  x = f32[2,16,16,32]{3,2,1,0} parameter(0)
  w = f32[3,3,32,64]{3,2,1,0} parameter(1)
  ROOT c = f32[2,16,16,64]{3,2,1,0} convolution(x, w), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f
}
""")
    art = xlapy.aot.compile_module(module, name="bigconv", blas=True)
    if not art.blas_symbols:
        pytest.skip("this process has no BLAS provider, or the emitter chose loops")
    assert art.blas_symbols == ("sgemm_",), art.blas_symbols
    assert "sgemm_" in art.header and "plus a BLAS" in art.header
    rng = np.random.default_rng(1)
    args = [rng.standard_normal((2, 16, 16, 32)).astype(np.float32),
            rng.standard_normal((3, 3, 32, 64)).astype(np.float32)]
    (got,) = run_in_c(art, args, tmp_path, extra_sources=[C_DIR / "ref_blas.c"])
    assert_same(got, interpret(module, args)[0], rtol=1e-4)
    plain = xlapy.aot.compile_module(module, name="bigconv")      # the default: loops, nothing but libc/libm
    assert not plain.blas_symbols and "BLAS: none needed" in plain.header


@needs_gcc
def test_header_is_strict_c99_and_cxx(tmp_path):
    art = xlapy.aot.compile(lambda x, y: (x * y, jnp.sum(x)), ((3, 4), np.float32), ((3, 4), np.float32),
                            name="pair", out_dir=tmp_path)
    src = tmp_path / "use.c"
    src.write_text('#include "pair.h"\nint main(void) { return pair_NUM_ARGS == 2 && pair_RESULT1_RANK == 0 '
                   '&& pair_ARG_DIMS[1][1] == 4 && pair_RESULT_DIMS[1] == NULL ? 0 : 1; }\n')
    for compiler, std in (("gcc", "-std=c99"), ("g++", "-std=c++11")):
        if shutil.which(compiler) is None:
            continue
        exe = tmp_path / f"use_{compiler}"
        build = subprocess.run([compiler, "-x", "c" if compiler == "gcc" else "c++", std, "-pedantic", "-Wall",
                                "-Wextra", "-Werror", "-I", str(tmp_path), str(src), "-x", "none",
                                str(art.files["o"]), "-lm", "-o", str(exe)], capture_output=True, text=True)
        assert build.returncode == 0, build.stderr
        assert subprocess.run([str(exe)]).returncode == 0
    h = art.header
    for needle in ("int pair(const void* const* args, void* const* results, void* scratch);",
                   "#define pair_NUM_ARGS 2", "#define pair_NUM_RESULTS 2", "#define pair_SCRATCH_BYTES",
                   "#define pair_SCRATCH_ALIGNMENT 64", '#define pair_ARG0_TYPE "f32"', "#define pair_ARG0_CTYPE float",
                   "#define pair_ARG0_BYTES 48", "static const int64_t pair_ARG0_DIMS[2] = {3, 4};",
                   "#define pair_RESULT1_RANK 0", "Link with:  pair.o -lm"):
        assert needle in h, needle


@needs_gcc
def test_shared_library_is_callable(tmp_path):
    art = xlapy.aot.compile(lambda x: jnp.exp(x) + 1.0, ((5,), np.float32), name="expp1", out_dir=tmp_path,
                            shared=True)
    lib = ctypes.CDLL(str(art.files["so"]))
    fn = lib.expp1
    fn.restype, fn.argtypes = ctypes.c_int, [ctypes.c_void_p] * 3
    x, y = np.linspace(-2, 2, 5, dtype=np.float32), np.empty(5, np.float32)
    scratch = np.empty(art.scratch_bytes + 64, np.uint8)
    ptr = scratch.ctypes.data + (-scratch.ctypes.data) % 64
    assert fn((ctypes.c_void_p * 1)(x.ctypes.data), (ctypes.c_void_p * 1)(y.ctypes.data), ptr) == 0
    np.testing.assert_allclose(y, np.exp(x) + 1, rtol=1e-6)


# -- object properties --------------------------------------------------------------------------------------
def writable_sections(obj: bytes) -> dict[str, int]:
    """{name: size} of the allocated, writable sections (.data, .bss, ...) of an ELF64 object."""
    shoff, = struct.unpack_from("<Q", obj, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", obj, 0x3A)
    headers = [struct.unpack_from("<IIQQQQIIQQ", obj, shoff + k * shentsize) for k in range(shnum)]
    names = headers[shstrndx][4]
    name = lambda off: obj[names + off:obj.index(b"\0", names + off)].decode()      # noqa: E731
    return {name(h[0]): h[5] for h in headers if h[2] & 3 == 3}        # SHF_WRITE | SHF_ALLOC


@pytest.mark.skipif(READELF is None, reason="readelf is not installed")
def test_object_is_pic_with_read_only_constants(tmp_path):
    module = xlapy.hlo.parse((CORPUS / "jax" / "mlp_forward.hlo").read_text())
    art = xlapy.aot.compile(module, name="mlp_fwd", out_dir=tmp_path)
    obj = art.files["o"]
    relocs = subprocess.run([READELF, "-r", "-W", str(obj)], capture_output=True, text=True, check=True).stdout
    assert "R_X86_64_32" not in relocs and "R_X86_64_64 " not in relocs     # position independent
    assert not any(writable_sections(obj.read_bytes()).values())           # no global mutable state
    symbols = subprocess.run([READELF, "-s", "-W", str(obj)], capture_output=True, text=True, check=True).stdout
    defined_globals = [ln.split()[-1] for ln in symbols.splitlines() if " GLOBAL " in ln and " UND " not in ln]
    assert defined_globals == ["mlp_fwd"]
    assert set(undefined_elf_symbols(obj.read_bytes())) <= {"expf", "memcpy", "memset"}


def test_cross_compile_aarch64(tmp_path):
    module = xlapy.hlo.parse((CORPUS / "jax" / "mlp_forward.hlo").read_text())
    art = xlapy.aot.compile(module, name="mlp_arm", out_dir=tmp_path, target_triple="aarch64-linux-gnu")
    obj = art.files["o"].read_bytes()
    assert obj[:4] == b"\x7fELF" and struct.unpack_from("<H", obj, 0x12)[0] == 183      # EM_AARCH64
    assert (art.cpu, art.features) == ("generic", "")
    assert "Target:     aarch64-linux-gnu, cpu generic, features (none)" in art.header
    if READELF:
        out = subprocess.run([READELF, "-h", str(art.files["o"])], capture_output=True, text=True).stdout
        assert "AArch64" in out and "REL (Relocatable file)" in out


def test_deterministic_in_process():
    text = (CORPUS / "jax" / "sort_two_keys.hlo").read_text()
    first, second = (xlapy.aot.compile_module(xlapy.hlo.parse(text), name="srt") for _ in range(2))
    assert first.object_code == second.object_code
    assert first.header == second.header and first.hlo_text == second.hlo_text


def test_deterministic_across_processes(tmp_path):
    path = CORPUS / "jax" / "conv2d_nhwc_same.hlo"
    for d in ("a", "b"):
        proc = subprocess.run([*XLAPY, "aot", str(path), "--name", "conv", "--out-dir", str(tmp_path / d)],
                              capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
    for suffix in ("o", "h", "hlo"):
        assert (tmp_path / "a" / f"conv.{suffix}").read_bytes() == (tmp_path / "b" / f"conv.{suffix}").read_bytes()


# -- errors ---------------------------------------------------------------------------------------------------
CUSTOM_CALL = """HloModule cc
ENTRY e {
  x = f32[4] parameter(0)
  ROOT c = f32[4] custom-call(x), custom_call_target="my_kernel"
}
"""
INFEED = """HloModule feed
ENTRY e {
  t = token[] after-all()
  i = (f32[4], token[]) infeed(t)
  ROOT g = f32[4] get-tuple-element(i), index=0
}
"""


@pytest.mark.parametrize("text, message", [(CUSTOM_CALL, "custom-call my_kernel"), (INFEED, "infeed")])
def test_unsupported_module(text, message):
    with pytest.raises(xlapy.XlapyError, match=message):
        xlapy.aot.compile_module(xlapy.hlo.parse(text), name="f")


@pytest.mark.parametrize("options, message", [
    (dict(name="f", target_triple="nonsense-cpu-os"), "unknown or unsupported target triple"),
    (dict(name="9lives"), "not a C identifier"),
    (dict(name="int"), "C keyword"),
    (dict(name="f", features="avx2"), "bad target feature"),
    (dict(name="f", target_triple="aarch64-linux-gnu", cpu="host"), "cpu 'host'"),
    # LLVM aborts the process on some of these (issue 12); each must be an XlapyError naming the bad value
    (dict(name="f", cpu="notacpu"), "unknown CPU 'notacpu'"),
    (dict(name="f", cpu="i386"), "64-bit code requested"),
    (dict(name="f", cpu=""), "cpu must be a non-empty string"),
    (dict(name="f", target_triple=""), "target triple must be a non-empty string"),
    (dict(name="f", features="+notafeature"), "unknown target feature '\\+notafeature'"),
    (dict(name="f", features="+avx2,,+fma"), "bad target feature ''"),
    (dict(name="f", target_triple="aarch64-linux-gnu", cpu="skylake"), "unknown CPU 'skylake'"),
])
def test_bad_options(options, message):
    module = xlapy.hlo.parse((CORPUS / "jax" / "while_loop.hlo").read_text())
    with pytest.raises(xlapy.XlapyError, match=message):
        xlapy.aot.compile_module(module, **options)


def _cli(*argv) -> subprocess.CompletedProcess:
    return subprocess.run([*XLAPY, *map(str, argv)], capture_output=True, text=True)


def test_cli_errors_are_one_line(tmp_path):
    hlo = CORPUS / "jax" / "while_loop.hlo"
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    (tmp_path / "cc.hlo").write_text(CUSTOM_CALL)
    cases = [(["aot", hlo, "--out-dir", tmp_path], "--name"),
             (["aot", hlo, "--name", "f", "--out-dir", tmp_path, "--target-triple", "bogus"], "target triple"),
             (["aot", hlo, "--name", "f", "--out-dir", blocker / "sub"], "cannot write AOT output"),
             (["aot", tmp_path / "cc.hlo", "--name", "f", "--out-dir", tmp_path], "custom-call"),
             (["aot", tmp_path / "missing.hlo", "--name", "f", "--out-dir", tmp_path], "no such file")]
    for argv, message in cases:
        proc = _cli(*argv)
        assert proc.returncode == 2, (argv, proc.stderr)
        assert message in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, proc.stderr


def test_cli_writes_the_files(tmp_path):
    proc = _cli("aot", CORPUS / "jax" / "while_loop.hlo", "--name", "loop", "--out-dir", tmp_path / "out",
                "--no-blas")
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["loop.h", "loop.hlo", "loop.o"]
    xlapy.hlo.parse((tmp_path / "out" / "loop.hlo").read_text())        # the optimized module parses back


def test_a_valid_non_default_target_still_compiles():
    """The child-process check passes what LLVM accepts: a named x86 CPU with features, and a cross target."""
    module = xlapy.hlo.parse((CORPUS / "jax" / "while_loop.hlo").read_text())
    art = xlapy.aot.compile_module(module, name="f", cpu="skylake", features="+avx2,-fma")
    assert (art.cpu, art.features) == ("skylake", "+avx2,-fma") and art.object_code
    art = xlapy.aot.compile_module(module.clone(), name="f", target_triple="aarch64-linux-gnu", cpu="cortex-a72")
    assert art.cpu == "cortex-a72" and art.object_code


HUGE = """HloModule huge
ENTRY e {
  p = u8[6000000000] parameter(0)
  ROOT s = u8[6000000000] negate(p)
}
"""


def test_header_numbers_fit_their_c_types():
    """A 6 GB argument is fine on a 64-bit target (its byte count is printed as a size_t); on a 32-bit target
    size_t cannot hold it, and that is an error, not a header that wraps."""
    from xlapy.backends.cpu import aot_header
    assert aot_header._limits("x86_64-unknown-linux-gnu")["size_t"][1] == (1 << 63) - 1
    assert aot_header._limits("i686-unknown-linux-gnu")["size_t"][1] == (1 << 32) - 1
    art = xlapy.aot.compile_module(xlapy.hlo.parse(HUGE), name="huge")
    assert "#define huge_ARG0_BYTES 6000000000" in art.header
    with pytest.raises(xlapy.XlapyError, match="does not fit the C type size_t"):
        xlapy.aot.compile_module(xlapy.hlo.parse(HUGE), name="huge", target_triple="i686-unknown-linux-gnu")
