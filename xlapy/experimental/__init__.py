"""xlapy.experimental (jax.experimental): `xlapy.experimental.shard_map.shard_map`."""
