"""conv_vector's padded copy of the input (conv_simd.padded_input) when its edge blocks cannot take strips: the
input's last spatial dim not directly outside its features (a layout), so each position is copied alone."""
import numpy as np

import xlapy

MODULE = """HloModule m
ENTRY e {
  x = f32[2,5,7,3]{3,1,2,0} parameter(0)
  w = f32[3,3,3,16]{3,2,1,0} parameter(1)
  ROOT c = f32[2,5,7,16]{3,2,1,0} convolution(x, w), window={size=3x3 pad=1_1x2_0}, dim_labels=b01f_01io->b01f
}
"""


def test_padded_copy_per_position_matches_the_interpreter():
    module = xlapy.hlo.parse(MODULE)
    rng = np.random.default_rng(2)
    x, w = rng.standard_normal((2, 5, 7, 3)).astype(np.float32), rng.standard_normal((3, 3, 3, 16)).astype(np.float32)
    exe = xlapy.compile(module, backend="cpu", run_pipeline=False, num_threads=1)
    assert '"padp.' in exe.llvm_ir and '"cvv.acc' in exe.llvm_ir
    np.testing.assert_allclose(exe(x, w), xlapy.compile(module, backend="interpreter")(x, w), rtol=1e-4, atol=1e-5)
