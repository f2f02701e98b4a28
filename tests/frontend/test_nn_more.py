"""xlapy.nn's newer names (nn_more.py): log1mexp, logmeanexp, sparse_plus, sparse_sigmoid, squareplus, tanh and
dot_product_attention against JAX's outputs (api_data/jax_api_more.npz, from tools/gen_api_data.py), eagerly and
under jit; scaled_matmul / scaled_dot_general against numpy (JAX has no CPU lowering for them); errors. Both
backends."""
import sys
from pathlib import Path

import numpy as np
import pytest

import xlapy
import xlapy.nn as nn
from xlapy.errors import XlapyError

sys.path.insert(0, str(Path(__file__).parent))     # pytest's importlib mode does not: the shared case table
from api_more_cases import NN_CASES
from api_more_check import check_case

rng = np.random.default_rng(3)


@pytest.mark.parametrize("case", NN_CASES, ids=[c[0] for c in NN_CASES])
def test_against_jax(case):
    check_case(case)


def test_attention_residual_is_the_logsumexp():
    q, k, v = (rng.standard_normal((1, 3, 2, 4)).astype(np.float32) for _ in range(3))
    out, lse = nn.dot_product_attention(q, k, v, return_residual=True)
    logits = np.einsum("btnh,bsnh->bnts", q, k) / 2.0
    want = np.log(np.exp(logits).sum(-1)).transpose(0, 2, 1)
    np.testing.assert_allclose(np.asarray(lse), want, rtol=1e-5)
    np.testing.assert_allclose(np.asarray(out), np.asarray(nn.dot_product_attention(q, k, v)), rtol=1e-6)


def test_scaled_products():
    a = rng.standard_normal((1, 3, 64)).astype(np.float32)
    b = rng.standard_normal((1, 4, 64)).astype(np.float32)
    sa = rng.uniform(0.5, 2, (1, 3, 2)).astype(np.float32)
    sb = rng.uniform(0.5, 2, (1, 4, 2)).astype(np.float32)
    want = np.einsum("bmk,bnk->bmn", a * np.repeat(sa, 32, -1), b * np.repeat(sb, 32, -1))
    np.testing.assert_allclose(np.asarray(xlapy.jit(nn.scaled_matmul)(a, b, sa, sb)), want, rtol=1e-4, atol=1e-4)
    dn = (((2,), (2,)), ((0,), (0,)))
    np.testing.assert_allclose(np.asarray(nn.scaled_dot_general(a, b, dn)), np.einsum("bmk,bnk->bmn", a, b),
                               rtol=1e-4, atol=1e-4)
    cfg = nn.get_scaled_dot_general_config("mxfp8")
    assert cfg.block_size == 32 and cfg.mode == "mxfp8"


def test_errors():
    q = np.ones((1, 3, 4, 8), np.float32)
    kv = np.ones((1, 3, 3, 8), np.float32)
    with pytest.raises(XlapyError, match="must be a multiple of the number of key/value heads"):
        nn.dot_product_attention(q, kv, kv)
    with pytest.raises(XlapyError, match="mask must be boolean"):
        nn.dot_product_attention(q, q, q, mask=np.ones((1, 4, 3, 3), np.float32))
    with pytest.raises(XlapyError, match="does not broadcast to the logits' shape"):
        nn.dot_product_attention(q, q, q, bias=np.ones((2, 4, 3, 3), np.float32))
    with pytest.raises(XlapyError, match="implementation 'cudnn' is not available"):
        nn.dot_product_attention(q, q, q, implementation="cudnn")
    with pytest.raises(XlapyError, match="mode must be 'nvfp4' or 'mxfp8'"):
        nn.get_scaled_dot_general_config("int8")
