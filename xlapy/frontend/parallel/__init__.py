"""Many devices in the front end: named axes and collectives, pmap, meshes and shard_map, sharded jit.

    axis_env.py       the named axes a traced function sees (device axes of pmap / shard_map, vmap axes)
    collectives.py    jax.lax's collectives (psum, all_gather, ppermute, axis_index, ...) lowered to HLO
"""
from __future__ import annotations

from .axis_env import AxisNameError
from .collectives import (all_gather, all_to_all, axis_index, axis_size, pbroadcast, pmax, pmean, pmin, ppermute,
                          pshuffle, psum, psum_scatter, pswapaxes)

__all__ = ["AxisNameError", "all_gather", "all_to_all", "axis_index", "axis_size", "pbroadcast", "pmax", "pmean",
           "pmin", "ppermute", "pshuffle", "psum", "psum_scatter", "pswapaxes"]
