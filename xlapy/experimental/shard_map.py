"""jax.experimental.shard_map: shard_map(f, mesh, in_specs, out_specs) (frontend/parallel/shard_map.py)."""
from ..frontend.parallel.shard_map import shard_map

__all__ = ["shard_map"]
