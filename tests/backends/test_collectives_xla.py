"""The per-device programs XLA compiled for JAX's collectives (shard_map and pmap over 4 CPU devices: psum,
pmax, pmean, all_gather, psum_scatter, all_to_all, ppermute, axis_index, on a 1-D and a 2x2 mesh; XLA's SPMD
partitioner made them: num_partitions=4, channel ids, global device ids) run on xlapy's devices and give XLA's
outputs. Regenerate the data with tools/gen_collectives_data.py (.venv-models)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from xlapy.backends import spmd

DATA = Path(__file__).resolve().parent / "collectives_data"
CASES = sorted(p.stem for p in DATA.glob("*.hlo"))


@pytest.mark.parametrize("backend", ["interpreter", "cpu"])
@pytest.mark.parametrize("case", CASES)
def test_xla_compiled_collectives(case, backend):
    text = (DATA / f"{case}.hlo").read_text()
    data = np.load(DATA / f"{case}.npz")
    outs = spmd.execute(text, [[data[f"in_{d}"]] for d in range(4)], backend=backend)
    for d, got in enumerate(outs):
        np.testing.assert_allclose(got, data[f"out_{d}"], rtol=1e-6, atol=1e-6, err_msg=f"{case}, device {d}")
