#!/usr/bin/env python3
"""The TensorFlow half of the real-model suite: Keras models lowered through TF's XLA bridge.

    .venv-tf/bin/python tools/gen_tf_models.py            # then: .venv-models/bin/python tools/gen_models.py --pass record
    .venv-tf/bin/python tools/gen_tf_models.py --only gru

- mobilenetv2: keras.applications.MobileNetV2(alpha=0.35, weights=None), 64x64, 10 classes (depthwise-separable
  inverted residuals, BatchNorm, ReLU6); fwd, train (SGD momentum).
- gru: keras.Sequential of an Embedding, two keras.layers.GRU(128) over 64 steps and a Dense; fwd, train
  (Adam; the embedding's gradient is a scatter-add).

Each module also comes as `KIND_opt`, the XLA-optimized HLO.

Every module is a `tf.function(jit_compile=True)` running ordinary Keras code (`model(x, training=...)`,
`optimizer.apply(grads, model.trainable_variables)`) whose variables are also passed as its first ARGUMENT:
TF then makes each one an HLO parameter in a known order (not a capture in an unknown order), and no weight
becomes a constant that `stage='hlo'` would print elided as `{...}` (the generator refuses any `{...}`). The
variables a training step assigns come back as aliased outputs after the loss (input_output_alias).

The HLO is `f.experimental_get_compiler_ir(*args)(stage='hlo')`, and `stage='optimized_hlo'` for the
`*_opt` twins (XLA:CPU's output after its pipeline: fusions, scheduled, TF's runtime layouts); the twins
share their source module's inputs and recorded outputs (`expected_from`).
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import re
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "benchmarks" / "models"
REFERENCE = ROOT / "build" / "models_ref"
_spec = importlib.util.spec_from_file_location("model_corpus_inputs", CORPUS / "inputs.py")
inputs = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(inputs)


def versions_tf() -> dict:
    import keras
    import tensorflow as tf
    return {"tensorflow": tf.__version__, "keras": keras.__version__, "numpy": np.__version__,
            "python": platform.python_version()}


def mobilenetv2():
    import keras
    model = keras.applications.MobileNetV2(input_shape=(64, 64, 3), alpha=0.35, weights=None, classes=10,
                                               classifier_activation=None)
    optimizer = keras.optimizers.SGD(learning_rate=0.05, momentum=0.9)
    data = [inputs.data_spec("mobilenetv2", "images", (8, 64, 64, 3), "float32", {"kind": "normal", "scale": 1.0}),
            inputs.data_spec("mobilenetv2", "labels", (8,), "int32", {"kind": "int", "lo": 0, "hi": 9})]
    return model, optimizer, data, "keras.applications.MobileNetV2(alpha=0.35), batch 8, 64x64, 10 classes"


def gru():
    import keras
    model = keras.Sequential([keras.Input((64,), dtype="int32"), keras.layers.Embedding(1000, 32),
                              keras.layers.GRU(128, return_sequences=True), keras.layers.GRU(128),
                              keras.layers.Dense(5)])
    optimizer = keras.optimizers.Adam(learning_rate=1e-3)
    data = [inputs.data_spec("gru", "tokens", (32, 64), "int32", {"kind": "int", "lo": 0, "hi": 999}),
            inputs.data_spec("gru", "labels", (32,), "int32", {"kind": "int", "lo": 0, "hi": 4})]
    return model, optimizer, data, "keras.layers.Embedding(1000, 32) and two stacked GRU(128), batch 32 x 64 tokens"


MODELS = {"mobilenetv2": mobilenetv2, "gru": gru}


def programs(model, optimizer):
    """(forward, train_step) as jit-compiled tf.functions. Their first argument is the list of variables the
    body uses (the model's, and the optimizer's for training): TF makes a variable passed as an argument one
    HLO parameter, in argument order, and each variable the step assigns one aliased output after the
    function's own results (input_output_alias)."""
    import keras
    import tensorflow as tf
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    @tf.function(jit_compile=True)
    def forward(variables, x):
        return model(x, training=False)

    @tf.function(jit_compile=True)
    def train_step(variables, x, y):
        with tf.GradientTape() as tape:
            loss = loss_fn(y, model(x, training=True))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply(grads, model.trainable_variables)
        return loss
    return forward, train_step


_ALIAS = re.compile(r"\{(\d+)\}: \((\d+), \{\}, may-alias\)")


def _run(fn, variables, values, data) -> tuple[list[np.ndarray], float, float, str]:
    """Set the variables to `values`, run once: (the HLO's outputs as TF computed them: the function's results
    then each aliased variable's new value, first call's seconds (trace + compile + run), median warm call's
    seconds, the HLO text)."""
    import tensorflow as tf
    for v, a in zip(variables, values):
        v.assign(a)
    t0 = time.perf_counter()
    result = [np.asarray(x) for x in tf.nest.flatten(fn(variables, *data))]
    first = time.perf_counter() - t0
    hlo = fn.experimental_get_compiler_ir(variables, *data)(stage="hlo")
    header = hlo.split("entry_computation_layout", 1)[0]
    aliases = sorted((int(k), int(p)) for k, p in _ALIAS.findall(header))
    if [k for k, _ in aliases] != list(range(len(result), len(result) + len(aliases))):
        raise RuntimeError(f"unexpected output aliasing {aliases[:4]}... after {len(result)} results")
    produced = result + [np.asarray(variables[p].numpy()) for _, p in aliases]
    samples = []
    while len(samples) < 20 and (len(samples) < 3 or sum(samples) < 2.0):
        t0 = time.perf_counter()
        fn(variables, *data)
        samples.append(time.perf_counter() - t0)
    return produced, first, statistics.median(samples), hlo


def _write(module_id: str, hlo: str, manifest: dict) -> None:
    if "{...}" in hlo:
        raise RuntimeError(f"{module_id}: the HLO text has elided constants ({{...}}); never commit those")
    folder = CORPUS / module_id.split("/")[0]
    folder.mkdir(parents=True, exist_ok=True)
    kind = module_id.split("/")[1]
    (folder / f"{kind}.hlo").write_text(hlo)
    (folder / f"{kind}.json").write_text(json.dumps(manifest, indent=1) + "\n")


def generate(model_name: str) -> None:
    import keras
    keras.utils.set_random_seed(0)
    model, optimizer, data, description = MODELS[model_name]()
    optimizer.build(model.trainable_variables)
    forward, train_step = programs(model, optimizer)
    model_vars = [("trainable", v) for v in model.trainable_variables] + \
                 [("non_trainable", v) for v in model.non_trainable_variables]
    cases = {"fwd": (forward, model_vars, data[:1], "inference (training=False)"),
             "train": (train_step, model_vars + [("optimizer", v) for v in optimizer.variables], data,
                       f"training step ({type(optimizer).__name__}, optimizer.apply)")}
    versions = versions_tf()
    for kind, (fn, named_vars, data_specs, what) in cases.items():
        specs = [inputs.spec_from_init(model_name, f"{group}/{v.path}", np.asarray(v.numpy()))
                 for group, v in named_vars] + data_specs
        values = [inputs.make_input(s) for s in specs]
        variables = [v.value for _, v in named_vars]          # the tf.Variables under Keras' variables
        produced, first_s, run_s, hlo = _run(fn, variables, values[:len(variables)], values[len(variables):])
        module_id = f"{model_name}/{kind}"
        base = {"model": model_name, "library": f"keras {keras.__version__} (TensorFlow backend)",
                "producer": "tensorflow", "source": f"tools/gen_tf_models.py:{model_name}", "versions": versions,
                "producer_timing": {"first_call_s": round(first_s, 3), "run_ms": round(run_s * 1e3, 3),
                                    "how": "tf.function(jit_compile=True): first call (trace + compile + run), "
                                           "median warm call"},
                "inputs": specs}
        for stage, suffix in (("hlo", ""), ("optimized_hlo", "_opt")):
            text = hlo if stage == "hlo" else fn.experimental_get_compiler_ir(variables, *values[len(variables):])(
                stage=stage)
            manifest = {"module": module_id + suffix, "kind": kind + suffix,
                        "description": f"{description}: {what}" + (", XLA-optimized" if suffix else ""),
                        "stage": f"tf.function(jit_compile=True).experimental_get_compiler_ir(...)(stage='{stage}')",
                        "hlo": f"{kind}{suffix}.hlo", **base}
            if suffix:
                manifest["expected_from"] = kind
            _write(module_id + suffix, text, manifest)
        REFERENCE.joinpath(model_name).mkdir(parents=True, exist_ok=True)
        np.savez(REFERENCE / model_name / f"{kind}.npz", **{f"out{i}": a for i, a in enumerate(produced)})
        print(f"{module_id}: {len(specs)} inputs, {len(produced)} outputs, first call {first_s:.2f} s, "
              f"run {run_s * 1e3:.1f} ms", flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", help="regex on the model name")
    a = ap.parse_args()
    for name in MODELS:
        if not a.only or re.search(a.only, name):
            generate(name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
