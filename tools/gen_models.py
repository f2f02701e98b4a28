#!/usr/bin/env python3
"""Generate the real-model corpus under benchmarks/models/ (issue 11): JAX models and XLA's recorded outputs.

    bash tools/setup_models_env.sh                       # .venv-models (jax, flax, equinox, optax) and .venv-tf
    .venv-tf/bin/python tools/gen_tf_models.py           # Keras models: writes their HLO and manifests
    .venv-models/bin/python tools/gen_models.py          # JAX models, then records XLA's outputs for ALL modules
    .venv-models/bin/python tools/gen_models.py --only 'gpt2|gnn'          # a subset
    .venv-models/bin/python tools/gen_models.py --pass record --only mobilenet   # re-record only

Two passes, each a sub-process (x64 must be fixed before JAX traces anything):

- trace (JAX's default x32 mode), for each program of tools/models_jax.py: draw the inputs from their specs
  (benchmarks/models/inputs.py); `jax.jit(fn, keep_unused=True).lower(*args).as_text(dialect="hlo")` ->
  MODEL/KIND.hlo; the manifest MODEL/KIND.json (input specs, versions, jax.jit's compile and run time); jax's
  outputs -> build/models_ref/ (not committed).
- record (x64), for EVERY module of the corpus, JAX's and TensorFlow's: compile the committed HLO text with
  jaxlib's XLA client, run it on the spec-made inputs, check the outputs against the producer's own
  (build/models_ref/, within PRODUCER_TOL), then write MODEL/KIND.npz (outputs.py: whole arrays or samples) and
  complete the manifest (outputs, instruction count, longest reduction, XLA's compile and run time, and
  xla_f64_deviation: how far XLA's f32 result is from the same HLO run in f64, the module's conditioning).

The record pass runs with x64 on so s64 parameters (Keras' step counter) keep their type on the way to XLA.
"""
from __future__ import annotations

import argparse
import importlib.util
import inspect
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("JAX_PLATFORMS", "cpu")

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "benchmarks" / "models"
REFERENCE = ROOT / "build" / "models_ref"      # the producers' own outputs (not committed)
sys.path.insert(0, str(ROOT / "tools"))


def load_corpus_module(name: str):
    """benchmarks/models/NAME.py as a module (benchmarks/ is not a package)."""
    spec = importlib.util.spec_from_file_location(f"model_corpus_{name}", CORPUS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


inputs = load_corpus_module("inputs")
outputs = load_corpus_module("outputs")
hlo_stats = load_corpus_module("hlo_stats")


def timed_runs(run, budget_s: float = 2.0, max_runs: int = 20) -> float:
    """Median seconds of `run()` over up to max_runs calls or about budget_s seconds (after one warm call)."""
    run()
    samples, start = [], time.perf_counter()
    while len(samples) < max_runs and (len(samples) < 3 or time.perf_counter() - start < budget_s):
        t0 = time.perf_counter()
        run()
        samples.append(time.perf_counter() - t0)
    return statistics.median(samples)


def _key_name(key) -> str:
    for attr in ("key", "name", "idx"):
        if hasattr(key, attr):
            return str(getattr(key, attr))
    return str(key)


def _argument_names(fn, count: int) -> list[str]:
    named = [p.name for p in inspect.signature(fn).parameters.values()
             if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return [named[i] if i < len(named) else f"data{i}" for i in range(count)]


def input_specs(program) -> tuple[list[dict], object]:
    """(one spec per flattened argument leaf, the treedef) of a models_jax.Program."""
    import jax
    from models_jax import Data
    leaves, treedef = jax.tree_util.tree_flatten_with_path(program.args, is_leaf=lambda x: isinstance(x, Data))
    model = program.module_id.split("/")[0]
    names = _argument_names(program.fn, len(program.args))
    specs = []
    for path, leaf in leaves:
        name = "/".join([names[path[0].idx]] + [_key_name(k) for k in path[1:]])
        if isinstance(leaf, Data):
            specs.append(inputs.data_spec(model, name, leaf.shape, leaf.dtype, leaf.init))
        else:
            specs.append(inputs.spec_from_init(model, name, np.asarray(leaf)))
    return specs, treedef


def versions_jax() -> dict:
    import equinox
    import flax
    import jax
    import jaxlib
    import optax
    return {"jax": jax.__version__, "jaxlib": jaxlib.__version__, "flax": flax.__version__,
            "equinox": equinox.__version__, "optax": optax.__version__, "numpy": np.__version__,
            "python": platform.python_version()}


def write_module(module_id: str, hlo: str, manifest: dict, produced: list[np.ndarray]) -> None:
    """MODEL/KIND.hlo and the manifest's first half; the producer's outputs into build/models_ref/."""
    if "{...}" in hlo:
        raise RuntimeError(f"{module_id}: the HLO text has elided constants ({{...}}); never commit those")
    folder = CORPUS / module_id.split("/")[0]
    folder.mkdir(parents=True, exist_ok=True)
    kind = module_id.split("/")[1]
    (folder / f"{kind}.hlo").write_text(hlo)
    (folder / f"{kind}.json").write_text(json.dumps(manifest, indent=1) + "\n")
    REFERENCE.joinpath(folder.name).mkdir(parents=True, exist_ok=True)
    np.savez(REFERENCE / folder.name / f"{kind}.npz", **{f"out{i}": a for i, a in enumerate(produced)})


def trace_pass(only: str | None) -> int:
    import models_jax
    versions = versions_jax()
    failures = 0
    for model, build in models_jax.MODELS.items():
        if only and not re.search(only, model):
            continue
        for program in build():
            if only and not re.search(only, program.module_id):
                continue
            try:
                trace_one(program, versions)
            except Exception as e:  # keep going: one model's failure must not hide the others
                failures += 1
                print(f"FAILED {program.module_id}: {type(e).__name__}: {e}", file=sys.stderr)
    return 1 if failures else 0


def trace_one(program, versions: dict) -> None:
    import jax
    specs, treedef = input_specs(program)
    args = treedef.unflatten([jax.numpy.asarray(inputs.make_input(s)) for s in specs])
    t0 = time.perf_counter()
    lowered = jax.jit(program.fn, keep_unused=True).lower(*args)
    hlo = lowered.as_text(dialect="hlo")
    lower_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    compiled = lowered.compile()
    compile_s = time.perf_counter() - t0
    produced = [np.asarray(x) for x in jax.tree_util.tree_leaves(compiled(*args))]
    run_s = timed_runs(lambda: jax.block_until_ready(compiled(*args)))
    model, kind = program.module_id.split("/")
    manifest = {"module": program.module_id, "model": model, "kind": kind, "library": program.library,
                "description": program.description, "producer": "jax",
                "stage": 'jax.jit(fn, keep_unused=True).lower(*args).as_text(dialect="hlo")',
                "source": f"tools/models_jax.py:{model}", "hlo": f"{kind}.hlo", "versions": versions,
                "producer_timing": {"lower_s": round(lower_s, 3), "compile_s": round(compile_s, 3),
                                    "run_ms": round(run_s * 1e3, 3), "how": "jax.jit: lower, compile, run"},
                "inputs": specs}
    write_module(program.module_id, hlo, manifest, produced)
    print(f"{program.module_id}: {len(specs)} inputs, {len(produced)} outputs, {len(hlo) / 1e6:.2f} MB HLO, "
          f"jax compile {compile_s:.2f} s, run {run_s * 1e3:.1f} ms", flush=True)


# ---------------------------------------------------------------- record pass

def _agree(module_id: str, got: list[np.ndarray], reference: Path, tol: float) -> None:
    """XLA's run of the HLO text must reproduce the producer's outputs (the dump is faithful)."""
    with np.load(reference) as z:
        want = [z[f"out{i}"] for i in range(len(z.files))]
    if len(got) != len(want):
        raise RuntimeError(f"{module_id}: HLO text gives {len(got)} outputs, the producer {len(want)}")
    for i, (g, w) in enumerate(zip(got, want)):
        if g.shape != w.shape or g.dtype != w.dtype:
            raise RuntimeError(f"{module_id} out{i}: {g.dtype}{g.shape} from the HLO text, {w.dtype}{w.shape} "
                               "from the producer")
        if g.dtype.kind != "f":
            if not np.array_equal(g, w):
                raise RuntimeError(f"{module_id} out{i}: XLA on the HLO text differs from the producer's output")
            continue
        scale = max(float(np.nanmax(np.abs(w))) if w.size else 0.0, 1e-30)
        err = float(np.nanmax(np.abs(g.astype(np.float64) - w))) if w.size else 0.0
        if err > tol * scale:
            raise RuntimeError(f"{module_id} out{i}: XLA on the HLO text differs from the producer's output by "
                               f"{err:.3g} (max |producer| {scale:.3g})")


# How closely XLA's run of the committed text must reproduce the producer's own run. JAX: jax.jit compiles the
# StableHLO, the text takes the HLO -> StableHLO route, and a few modules differ in the last bits (1e-6
# relative seen). TensorFlow: another XLA build, with TF's own runtime.
PRODUCER_TOL = {"jax": 1e-5, "tensorflow": 1e-3}


def _execute(exe, device, args):
    """One run; input buffers are made afresh each time (a module with input_output_alias donates them)."""
    import jax
    return exe.execute([jax.device_put(a, device) for a in args])


def f64_deviation(text: str, args: list[np.ndarray], got: list[np.ndarray]) -> float | None:
    """How far XLA's f32 outputs are from the same HLO run in f64 (every f32 type rewritten): the worst
    max|f32 - f64| / max|f64| over the float outputs. A module whose own XLA result is that far from exact
    (a ReLU gate that flips at rounding level, for one) cannot hold another compiler to the tolerance:
    the record pass warns when this exceeds outputs.tolerance. None where the rewrite is not valid HLO
    (bitcast-convert of random bits, say)."""
    import xla_check
    try:
        exact = xla_check.run_hlo_text(re.sub(r"\bf32\[", "f64[", text),
                                       [a.astype(np.float64) if a.dtype == np.float32 else a for a in args])
    except Exception:
        return None
    worst = 0.0
    for g, e in zip(got, exact):
        if g.dtype.kind == "f" and g.size:
            worst = max(worst, float(np.nanmax(np.abs(g - e))) / max(float(np.nanmax(np.abs(e))), 1e-30))
    return float(f"{worst:.3g}")


def record_one(module_id: str) -> None:
    import jax
    import xla_check
    entry = inputs.load_entry(module_id)
    text = entry["hlo_path"].read_text()
    args = inputs.make_inputs(entry)
    folder, kind = entry["hlo_path"].parent, entry["kind"]
    manifest = json.loads(entry["hlo_path"].with_suffix(".json").read_text())
    manifest.update(instructions=hlo_stats.instruction_count(text), longest_reduction=hlo_stats.longest_reduction(text))
    try:
        specs = xla_check.entry_param_specs(text)
        if [(np.dtype(d), tuple(s)) for d, s in specs] != [(a.dtype, a.shape) for a in args]:
            raise RuntimeError(f"{module_id}: manifest inputs do not match the ENTRY parameters")
        t0 = time.perf_counter()
        exe, device = xla_check.compile_hlo_text(text)
        compile_s = time.perf_counter() - t0
        got = [np.asarray(x) for x in _execute(exe, device, args)]
        run_s = timed_runs(lambda: [x.block_until_ready() for x in _execute(exe, device, args)])
    except Exception as e:
        if "expected_from" not in entry:
            raise
        # XLA cannot always re-read its own optimized dumps: say so in the manifest, keep the module
        manifest["xla"] = {"error": f"{type(e).__name__}: {str(e).splitlines()[0][:300]}"}
        (folder / f"{kind}.json").write_text(json.dumps(manifest, indent=1) + "\n")
        print(f"{module_id}: {manifest['instructions']} instructions, XLA cannot run it: {manifest['xla']['error']}")
        return
    manifest["xla_f64_deviation"] = f64_deviation(text, args, got)
    manifest["xla"] = {"compile_s": round(compile_s, 3), "run_ms": round(run_s * 1e3, 3),
                       "how": f"HLO text compiled by jaxlib {jax.__version__}'s XLA:CPU client "
                              "(tools/xla_check.py), median of up to 20 runs"}
    if "expected_from" in entry:      # an XLA-optimized twin: same inputs and outputs as its source module
        arrays = np.load(entry["expected_path"])
        twin = json.loads(entry["expected_path"].with_suffix(".json").read_text())
        problems = outputs.compare(got, twin["outputs"], arrays, 1e-4)
        if problems:
            raise RuntimeError(f"{module_id}: differs from {entry['expected_from']}: {problems[:2]}")
    else:
        _agree(module_id, got, REFERENCE / folder.name / f"{kind}.npz", PRODUCER_TOL[entry["producer"]])
        arrays, manifest["outputs"] = outputs.summarize(module_id, got)
        deviation, tol = manifest["xla_f64_deviation"], outputs.tolerance(manifest)
        if deviation is not None and deviation > tol / 4:
            print(f"WARNING {module_id}: XLA's f32 result is {deviation:.3g} from f64, over a quarter of the "
                  f"tolerance {tol:.3g}: an ill-conditioned module", file=sys.stderr)
        np.savez_compressed(folder / f"{kind}.npz", **arrays)
    (folder / f"{kind}.json").write_text(json.dumps(manifest, indent=1) + "\n")
    print(f"{module_id}: {manifest['instructions']} instructions, XLA compile {compile_s:.2f} s, "
          f"run {run_s * 1e3:.1f} ms", flush=True)


def record_pass(only: str | None) -> int:
    failures = 0
    for module_id in inputs.module_ids():
        if only and not re.search(only, module_id):
            continue
        try:
            record_one(module_id)
        except Exception as e:
            failures += 1
            print(f"FAILED record {module_id}: {type(e).__name__}: {str(e)[:400]}", file=sys.stderr)
    return 1 if failures else 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pass", dest="pass_", choices=["all", "trace", "record"], default="all")
    ap.add_argument("--only", help="regex on model or module id (model/kind)")
    a = ap.parse_args()
    if a.pass_ == "trace":
        return trace_pass(a.only)
    if a.pass_ == "record":
        import xla_check
        xla_check.ENABLE_X64 = True
        xla_check._jax()
        return record_pass(a.only)
    rc = 0
    for p in ("trace", "record"):
        t0 = time.perf_counter()
        cmd = [sys.executable, __file__, "--pass", p] + (["--only", a.only] if a.only else [])
        r = subprocess.call(cmd)
        print(f"[pass {p}: rc={r}, {time.perf_counter() - t0:.0f} s]", flush=True)
        rc = rc or r
    return rc


if __name__ == "__main__":
    sys.exit(main())
