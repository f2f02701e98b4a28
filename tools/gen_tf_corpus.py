#!/usr/bin/env python3
"""Generate the TensorFlow corpus under tests/corpus/tf/: what TF's XLA bridge emits for image ops, sorts and
scatters, with XLA:CPU's outputs.

    .venv-tf/bin/python tools/gen_tf_corpus.py                  # everything (a minute or two on 2 cores)
    .venv-tf/bin/python tools/gen_tf_corpus.py --only 'resize'  # a subset (not cleaned first)

Why: TF's HLO is not JAX's. It carries layouts that differ between a value and the tuple that returns it
(`tf.image.resize`, `tf.sort(axis=0)`: issue 11's wrong numbers), TopKV2 with set-dimension-size, gathers and
scatters built by its own lowering, and XLA-optimized modules with scatters inside fusions.

Outputs (see tests/corpus/README.md):
  tests/corpus/tf/NAME.hlo       tf.function(jit_compile=True).experimental_get_compiler_ir(*args)(stage='hlo')
  tests/corpus/tf/NAME.opt.hlo   the same with stage='optimized_hlo' (XLA:CPU's pipeline: fusions, scheduled)
  tests/corpus/tf/NAME.npz       arg0.. (the function's arguments, which are the ENTRY parameters in order) and
                                 out0.. (the results of running the jit-compiled function: XLA:CPU's)
  tests/corpus/tf/SKIPPED.txt    programs TF could not compile or dump (name<TAB>reason)

Conventions follow tools/gen_corpus.py: a TABLE of (name, function, argument builder seeded with crc32(name)),
npz through tools/xla_check.save_npz. Metadata keeps op_type/op_name and drops source_file/source_line (paths on
the generating machine). A module with an elided constant ({...}) is refused: stage='hlo' prints large
constants that way and no one could run it.
"""
from __future__ import annotations

import argparse
import os
import re
import sys
import zlib
from typing import Callable

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))
import xla_check as xc  # noqa: E402  (numpy-only helpers: save_npz)

TF_DIR = os.path.join(ROOT, "tests", "corpus", "tf")


def seed_of(name: str) -> int:
    return zlib.crc32(name.encode()) & 0x7FFFFFFF


def image(rng, *shape) -> np.ndarray:
    return rng.uniform(-2.0, 2.0, shape).astype(np.float32)


def distinct(rng, *shape) -> np.ndarray:
    """Values without ties, so a sort's index output is unique."""
    return (rng.permutation(int(np.prod(shape))).reshape(shape) * 0.25 - 3.0).astype(np.float32)


# -- the TABLE ---------------------------------------------------------------------------------------------
class Entry:
    def __init__(self, name: str, fn: Callable, args: Callable):
        self.name, self.fn, self.args = name, fn, args


TABLE: list[Entry] = []


def T(name: str, fn: Callable, args: Callable) -> None:
    assert not any(e.name == name for e in TABLE), name
    TABLE.append(Entry(name, fn, args))


def bind(fn: Callable, *extra, **options) -> Callable:
    """fn(x, *extra, **options) as a function of x alone (tf.function binds default arguments as inputs)."""
    def bound(x):
        return fn(x, *extra, **options)
    return bound


def build_table() -> None:  # noqa: C901  (one long table)
    import tensorflow as tf
    v1 = tf.compat.v1.image
    img = lambda r: [image(r, 2, 5, 7, 3)]       # noqa: E731  NHWC

    # resize, TF1 API: every align_corners / half_pixel_centers combination TF allows, up and down
    for method, fn in (("bilinear", v1.resize_bilinear), ("nearest", v1.resize_nearest_neighbor)):
        for ac, hp in ((False, False), (True, False), (False, True)):
            for label, size in (("up", (9, 11)), ("down", (3, 4))):
                tag = f"resize_{method}_{label}" + ("_align" if ac else "") + ("_halfpx" if hp else "")
                T(tag, bind(fn, size, align_corners=ac, half_pixel_centers=hp), img)
    # resize, TF2 API (half-pixel centers), its other kernels, antialiasing
    for method in ("bilinear", "nearest", "bicubic", "area", "lanczos3", "mitchellcubic", "gaussian"):
        T(f"image_resize_{method}", bind(tf.image.resize, (9, 4), method=method), img)
    T("image_resize_bilinear_antialias", lambda x: tf.image.resize(x, (3, 4), antialias=True), img)
    T("image_resize_with_pad", lambda x: tf.image.resize_with_pad(x, 8, 8), img)
    # gradients of resize (ResizeBilinearGrad / ResizeNearestNeighborGrad)
    def bilinear_grad(align_corners, half_pixel_centers):
        def grad(x):
            with tf.GradientTape() as tape:
                tape.watch(x)
                y = v1.resize_bilinear(x, (9, 4), align_corners=align_corners, half_pixel_centers=half_pixel_centers)
                loss = tf.reduce_sum(y * y)
            return tape.gradient(loss, x), y
        return grad
    for ac, hp in ((False, False), (True, False), (False, True)):
        T("resize_bilinear_grad" + ("_align" if ac else "") + ("_halfpx" if hp else ""), bilinear_grad(ac, hp), img)

    def nearest_grad(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = v1.resize_nearest_neighbor(x, (3, 11), half_pixel_centers=True)
            loss = tf.reduce_sum(y * tf.range(1.0, 12.0)[None, None, :, None])
        return tape.gradient(loss, x)
    T("resize_nearest_grad_halfpx", nearest_grad, img)

    # other image ops
    T("image_flip_rot_transpose", lambda x: (tf.image.flip_left_right(x), tf.image.flip_up_down(x),
                                             tf.image.rot90(x), tf.image.transpose(x)), img)
    T("crop_and_resize", lambda x, b: tf.image.crop_and_resize(x, b, [0, 1, 1], (4, 6)),
      lambda r: [image(r, 2, 5, 7, 3), r.uniform(0.0, 1.0, (3, 4)).astype(np.float32)])
    T("crop_and_resize_nearest", lambda x, b: tf.image.crop_and_resize(x, b, [1, 0], (3, 5), method="nearest"),
      lambda r: [image(r, 2, 5, 7, 3), r.uniform(0.0, 1.0, (2, 4)).astype(np.float32)])
    T("extract_patches", lambda x: tf.image.extract_patches(x, [1, 3, 2, 1], [1, 2, 2, 1], [1, 1, 1, 1], "VALID"),
      img)
    T("depth_space", lambda x: (tf.nn.space_to_depth(x[:, :4, :6, :], 2), tf.nn.depth_to_space(
        tf.concat([x, x, x, x], axis=3), 2)), img)
    T("rgb_to_hsv_saturation", lambda x: (tf.image.rgb_to_hsv(tf.abs(x)), tf.image.adjust_saturation(
        tf.abs(x), 1.7)), img)
    T("per_image_standardization", lambda x: tf.image.per_image_standardization(x), img)
    T("sobel_total_variation", lambda x: (tf.image.sobel_edges(x), tf.image.total_variation(x)), img)
    T("transpose_into_tuple", lambda x: (tf.transpose(x, [0, 2, 1, 3]), -x, tf.transpose(x[0], [2, 1, 0])), img)

    # sorts: tf.sort / argsort along every axis (TopKV2 over a transposed operand)
    for axis in (0, 1, 2):
        T(f"sort_axis{axis}", bind(tf.sort, axis=axis), lambda r: [distinct(r, 4, 5, 6)])
        T(f"argsort_axis{axis}", bind(tf.argsort, axis=axis, direction="DESCENDING"), lambda r: [distinct(r, 4, 5, 6)])
    T("sort_s32_axis0", lambda x: tf.sort(x, axis=0, direction="DESCENDING"),
      lambda r: [r.integers(-50, 50, (6, 5)).astype(np.int32)])
    T("top_k", lambda x: tf.math.top_k(x, 3), lambda r: [distinct(r, 4, 9)])

    # scatters and their gather gradients
    T("tensor_scatter_nd_add", lambda t, i, u: tf.tensor_scatter_nd_add(t, i, u),
      lambda r: [image(r, 6, 4), r.integers(0, 6, (5, 1)).astype(np.int32), image(r, 5, 4)])
    T("tensor_scatter_nd_update_2d", lambda t, i, u: tf.tensor_scatter_nd_update(t, i, u),
      lambda r: [image(r, 5, 4, 3), np.array([[0, 1], [4, 3], [2, 0]], np.int32), image(r, 3, 3)])
    T("tensor_scatter_nd_max_min", lambda t, i, u: (tf.tensor_scatter_nd_max(t, i, u), tf.tensor_scatter_nd_min(
        t, i, u)), lambda r: [image(r, 7), r.integers(0, 7, (9, 1)).astype(np.int32), image(r, 9)])
    T("unsorted_segment_sum", lambda d, s: (tf.math.unsorted_segment_sum(d, s, 5),
                                            tf.math.unsorted_segment_max(d, s, 5)),
      lambda r: [image(r, 8, 3), r.integers(0, 5, (8,)).astype(np.int32)])

    def embedding_grad(table, ids):
        with tf.GradientTape() as tape:
            tape.watch(table)
            y = tf.gather(table, ids)
            loss = tf.reduce_sum(y * y)
        return tf.convert_to_tensor(tape.gradient(loss, table))
    T("embedding_grad", embedding_grad,
      lambda r: [image(r, 11, 4), r.integers(0, 11, (3, 5)).astype(np.int32)])


# -- generation --------------------------------------------------------------------------------------------
_SOURCE = re.compile(r' source_file="[^"]*"| source_line=\d+')
_PARAM = re.compile(r"\bparameter\((\d+)\)")
_UNSUPPORTED = re.compile(r"unsupported operations when trying to compile graph .*? on XLA_CPU_JIT: (\w+)", re.S)


def _entry_param_count(text: str) -> int:
    entry = text[text.index("\nENTRY"):]
    return len(set(_PARAM.findall(entry[:entry.index("\n}")])))


def generate(e: Entry) -> str | None:
    """Write NAME.{hlo,opt.hlo,npz}; a reason when TF cannot compile or dump the program."""
    import tensorflow as tf
    args = [np.asarray(a) for a in e.args(np.random.default_rng(seed_of(e.name)))]
    fn = tf.function(e.fn, jit_compile=True)
    try:
        outs = [np.asarray(o) for o in tf.nest.flatten(fn(*args))]
        texts = {stage: _SOURCE.sub("", fn.experimental_get_compiler_ir(*args)(stage=stage))
                 for stage in ("hlo", "optimized_hlo")}
    except Exception as ex:  # noqa: BLE001  (TF raises many kinds; the reason is recorded)
        unsupported = _UNSUPPORTED.search(str(ex))
        if unsupported:
            return f"TF's XLA bridge has no kernel for {unsupported.group(1)} on XLA_CPU_JIT"
        return f"{type(ex).__name__}: " + str(ex).strip().splitlines()[0][:200]
    for stage, text in texts.items():
        if "{...}" in text:
            return f"stage={stage} elides a constant ({{...}})"
        if _entry_param_count(text) != len(args):
            return f"stage={stage}: {_entry_param_count(text)} entry parameters for {len(args)} arguments"
    with open(os.path.join(TF_DIR, e.name + ".hlo"), "w") as fh:
        fh.write(texts["hlo"])
    with open(os.path.join(TF_DIR, e.name + ".opt.hlo"), "w") as fh:
        fh.write(texts["optimized_hlo"])
    xc.save_npz(os.path.join(TF_DIR, e.name + ".npz"), args, outs)
    print(f"{e.name}: {len(args)} args, outs {[o.shape for o in outs]}", flush=True)
    return None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", help="regex on the program name")
    a = ap.parse_args()
    import tensorflow as tf
    tf.config.set_visible_devices([], "GPU")
    build_table()
    os.makedirs(TF_DIR, exist_ok=True)
    skipped_file = os.path.join(TF_DIR, "SKIPPED.txt")
    skipped = {}
    if a.only and os.path.exists(skipped_file):
        for line in open(skipped_file).read().splitlines():
            if line and not line.startswith("#"):
                name, why = line.split("\t", 1)
                skipped[name] = why
    for e in TABLE:
        if a.only and not re.search(a.only, e.name):
            continue
        skipped.pop(e.name, None)
        why = generate(e)
        if why is not None:
            skipped[e.name] = why
            print(f"SKIP {e.name}: {why}", flush=True)
    with open(skipped_file, "w") as fh:
        fh.write(f"# programs TF {tf.__version__} could not compile or dump (name<TAB>reason)\n")
        fh.writelines(f"{n}\t{w}\n" for n, w in sorted(skipped.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
