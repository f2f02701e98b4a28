#!/usr/bin/env python3
"""Run / check HLO text with *real* XLA (from jaxlib).

This is a development tool, used only with the `.venv-jax` interpreter
(see tools/setup_jax_env.sh).  xlapy itself never imports JAX.

CLI:
  .venv-jax/bin/python tools/xla_check.py accept FILE.hlo...
      Parse each file with XLA's own HLO parser (hlo_module_from_text).
      Prints one line per failure ("FAIL <file>: <error>"); exit 1 if any
      failed, else 0.
  .venv-jax/bin/python tools/xla_check.py run FILE.hlo IN.npz OUT.npz
      Execute the module on XLA:CPU with the inputs arg0..argN-1 of IN.npz
      and write OUT.npz with arg0.. (copied) and out0..outM-1.
  .venv-jax/bin/python tools/xla_check.py params FILE.hlo
      Print the ENTRY parameter shapes and result shape as XLA sees them.
  .venv-jax/bin/python tools/xla_check.py batch < JOBS
      Worker for run_isolated(): each stdin line is "HLO<TAB>IN.npz<TAB>OUT.npz";
      prints "OK i" or "ERR i message" per job (XLA may abort the process
      with a CHECK failure on some inputs, hence the separate process).

NPZ convention (see tests/corpus/README.md):
  argK / outK hold the K-th entry parameter / flattened result leaf.
  Dtypes numpy can store natively (bool, [u]int8..64, float16/32/64,
  complex64/128) are stored as is.  ml_dtypes types (bfloat16, float8_*)
  are stored as their unsigned-int bit pattern of the same width, with an
  extra key `argK__dtype` / `outK__dtype` = np.array("bfloat16") naming the
  real dtype.

Library use:
  import xla_check as xc
  outs = xc.run_hlo_text(text, [np arrays])       # -> list of np arrays
  xc.save_npz(path, args, outs); args, outs = xc.load_npz(path)

How HLO text is executed with jaxlib (jax 0.10.x):
  mod   = jaxlib._hlo.hlo_module_from_text(text)            # XLA parser
  mlir  = _jax.mlir.hlo_to_stablehlo(mod.as_serialized_hlo_module_proto())
  opts  = jax._src.compiler.get_compile_options(num_replicas=1, num_partitions=1)
  exe   = backend.compile_and_load(mlir, _jax.DeviceList((dev,)), opts)
  outs  = exe.execute([jax.device_put(a, dev) for a in args])  # flat list
"""
from __future__ import annotations

import os
import sys

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("JAX_PLATFORMS", "cpu")

try:
    import ml_dtypes
except ImportError:  # pragma: no cover
    ml_dtypes = None

# ---------------------------------------------------------------------------
# NPZ key convention
# ---------------------------------------------------------------------------

# dtypes that np.savez / np.load round-trip exactly
_NATIVE = frozenset(["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                     "uint64", "float16", "float32", "float64", "complex64", "complex128"])


def _is_native(dt: np.dtype) -> bool:
    """True if np.savez/np.load round-trip this dtype exactly."""
    return dt.name in _NATIVE and dt.type.__module__ == "numpy"


def encode_array(key: str, a) -> dict:
    """Return the npz entries for array `a` stored under `key`."""
    a = np.asarray(a)
    if _is_native(a.dtype):
        return {key: a}
    # ml_dtypes (bfloat16, float8_*, ...): store bit pattern.
    bits = a.view(np.dtype("u%d" % a.dtype.itemsize))
    return {key: bits, key + "__dtype": np.array(a.dtype.name)}


def decode_array(npz, key: str) -> np.ndarray:
    a = npz[key]
    dk = key + "__dtype"
    if dk in npz:
        name = str(npz[dk])
        dt = np.dtype(getattr(ml_dtypes, name)) if ml_dtypes else None
        if dt is None:
            raise RuntimeError("ml_dtypes is needed to decode %s" % name)
        a = a.view(dt)
    return a


def save_npz(path: str, args, outs=None) -> None:
    d = {}
    for i, a in enumerate(args):
        d.update(encode_array("arg%d" % i, a))
    for i, a in enumerate(outs or []):
        d.update(encode_array("out%d" % i, a))
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    np.savez(path, **d)


def _count(npz, prefix):
    n = 0
    while "%s%d" % (prefix, n) in npz:
        n += 1
    return n


def load_npz(path: str):
    """-> (args: list[np.ndarray], outs: list[np.ndarray])"""
    with np.load(path) as z:
        args = [decode_array(z, "arg%d" % i) for i in range(_count(z, "arg"))]
        outs = [decode_array(z, "out%d" % i) for i in range(_count(z, "out"))]
    return args, outs


# ---------------------------------------------------------------------------
# XLA access
# ---------------------------------------------------------------------------

_X64_DONE = False
# Set to False by callers that must keep JAX's default 32-bit mode (e.g. a
# generator that is still tracing x32 programs in the same process).
ENABLE_X64 = True


def _jax(x64=True):
    """Import jax lazily; enable x64 so f64/s64 buffers keep their dtype."""
    global _X64_DONE
    import jax

    if x64 and ENABLE_X64 and not _X64_DONE:
        jax.config.update("jax_enable_x64", True)
        _X64_DONE = True
    return jax


def parse_hlo_text(text: str):
    """Parse with XLA's HLO parser; raises on error.  -> jaxlib HloModule."""
    _jax(x64=False)
    from jaxlib import _hlo

    return _hlo.hlo_module_from_text(text)


def program_shape(text: str):
    """XLA ProgramShape of the module's ENTRY computation."""
    from jax._src.lib import xla_client

    mod = parse_hlo_text(text)
    comp = xla_client.XlaComputation(mod.as_serialized_hlo_module_proto())
    return comp.program_shape()


def _leaf_specs(shape):
    if shape.is_tuple():
        out = []
        for s in shape.tuple_shapes():
            out.extend(_leaf_specs(s))
        return out
    return [(np.dtype(shape.numpy_dtype()), tuple(shape.dimensions()))]


def entry_param_specs(text: str):
    """[(np.dtype, shape)] for each ENTRY parameter.

    Raises ValueError if some parameter is a tuple/token (not supported by the
    npz convention)."""
    ps = program_shape(text)
    specs = []
    for s in ps.parameter_shapes():
        if s.is_tuple():
            raise ValueError("tuple-shaped entry parameter")
        try:
            specs.append((np.dtype(s.numpy_dtype()), tuple(s.dimensions())))
        except Exception as e:  # token etc.
            raise ValueError("unsupported entry parameter %s: %s" % (s, e))
    return specs


def entry_result_specs(text: str):
    """Flattened [(np.dtype, shape)] of the ENTRY result."""
    return _leaf_specs(program_shape(text).result_shape())


def compile_hlo_text(text: str):
    """Compile HLO text for XLA:CPU -> (LoadedExecutable, device)."""
    _jax()  # import + enable x64 before the backend is created
    from jax._src.lib import _jax as jl
    import jax.extend.backend as eb

    mod = parse_hlo_text(text)
    mlir = jl.mlir.hlo_to_stablehlo(mod.as_serialized_hlo_module_proto())
    backend = eb.get_backend("cpu")
    dev = backend.local_devices()[0]
    exe = backend.compile_and_load(mlir, jl.DeviceList((dev,)), _compile_options())
    return exe, dev


def _compile_options():
    """The CompileOptions jax.jit uses.  NB: a bare CompileOptions() differs:
    with it XLA:CPU compiles maximum/minimum as non-NaN-propagating."""
    try:
        from jax._src import compiler

        return compiler.get_compile_options(num_replicas=1, num_partitions=1)
    except Exception:  # noqa: BLE001  (private API moved)
        from jax._src.lib import _jax as jl

        return jl.CompileOptions()


def run_hlo_text(text: str, args):
    """Execute HLO text on XLA:CPU. Returns the flattened outputs (np)."""
    jax = _jax()
    exe, dev = compile_hlo_text(text)
    bufs = [jax.device_put(np.asarray(a), dev) for a in args]
    res = exe.execute(bufs)
    return [np.asarray(r) for r in res]


def random_inputs(specs, seed=0):
    """Seeded random arrays for [(dtype, shape)] specs."""
    rng = np.random.default_rng(seed)
    out = []
    for dt, shape in specs:
        if dt == np.bool_:
            a = rng.integers(0, 2, size=shape).astype(np.bool_)
        elif dt.kind in "iu":
            a = rng.integers(0, 10, size=shape).astype(dt)
        elif dt.kind == "c":
            a = (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dt)
        else:
            a = rng.standard_normal(shape).astype(np.float32).astype(dt)
        out.append(np.asarray(a))
    return out


# ---------------------------------------------------------------------------
# CLI
# ---------------------------------------------------------------------------

def _cmd_accept(files):
    bad = 0
    for f in files:
        try:
            with open(f) as fh:
                parse_hlo_text(fh.read())
        except Exception as e:  # noqa: BLE001
            bad += 1
            msg = str(e).strip().replace("\n", " | ")
            print("FAIL %s: %s" % (f, msg[:2000]))
    return 1 if bad else 0


def _cmd_run(hlo, inp, outp):
    with open(hlo) as fh:
        text = fh.read()
    args, _ = load_npz(inp)
    specs = entry_param_specs(text)
    if len(specs) != len(args):
        print("param count mismatch: module has %d, npz has %d" % (len(specs), len(args)))
        return 1
    outs = run_hlo_text(text, args)
    save_npz(outp, args, outs)
    return 0


def _cmd_batch():
    jobs = [ln.rstrip("\n").split("\t") for ln in sys.stdin if ln.strip()]
    for i, (hlo, inp, outp) in enumerate(jobs):
        try:
            rc = _cmd_run(hlo, inp, outp)
            msg = "OK %d" % i if rc == 0 else "ERR %d run failed" % i
        except Exception as e:  # noqa: BLE001
            first = (str(e).strip().splitlines() or [type(e).__name__])[0]
            msg = "ERR %d %s" % (i, first[:300])
        sys.stdout.write(msg + "\n")
        sys.stdout.flush()
    return 0


def run_isolated(jobs, python=None):
    """Run [(hlo_path, in_npz, out_npz)] in worker sub-processes.

    Returns a list with, per job, None on success or an error string (e.g.
    "crashed" when XLA aborted the worker).  Survives XLA CHECK-failures."""
    import subprocess

    python = python or sys.executable
    result = [None] * len(jobs)
    todo = list(range(len(jobs)))
    while todo:
        inp = "".join("%s\t%s\t%s\n" % jobs[i] for i in todo)
        p = subprocess.run([python, os.path.abspath(__file__), "batch"], input=inp,
                           capture_output=True, text=True)
        done = set()
        for ln in p.stdout.splitlines():
            parts = ln.split(" ", 2)
            if len(parts) >= 2 and parts[0] in ("OK", "ERR"):
                k = todo[int(parts[1])]
                done.add(k)
                result[k] = None if parts[0] == "OK" else (parts[2] if len(parts) > 2 else "error")
        rest = [k for k in todo if k not in done]
        if not rest:
            break
        # the first unfinished job crashed the worker
        tail = [ln for ln in p.stderr.splitlines() if ln.startswith(("F", "E")) and "]" in ln]
        result[rest[0]] = "crashed: " + (tail[0].split("] ", 1)[-1][:200] if tail else "rc=%d" % p.returncode)
        todo = rest[1:]
    return result


def _cmd_params(hlo):
    with open(hlo) as fh:
        ps = program_shape(fh.read())
    print(ps)
    return 0


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    usage = ("usage: xla_check.py accept FILE...\n"
             "       xla_check.py run FILE.hlo IN.npz OUT.npz\n"
             "       xla_check.py params FILE.hlo")
    if not argv:
        print(usage, file=sys.stderr)
        return 2
    cmd, rest = argv[0], argv[1:]
    if cmd == "accept" and rest:
        return _cmd_accept(rest)
    if cmd == "run" and len(rest) == 3:
        return _cmd_run(*rest)
    if cmd == "batch" and not rest:
        return _cmd_batch()
    if cmd == "params" and len(rest) == 1:
        return _cmd_params(rest[0])
    print(usage, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
