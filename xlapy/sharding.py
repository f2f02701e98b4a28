"""xlapy.sharding (jax.sharding): meshes and shardings. Implemented in frontend/parallel/mesh.py."""
from .frontend.parallel.mesh import Mesh, NamedSharding, PartitionSpec, SingleDeviceSharding

__all__ = ["Mesh", "NamedSharding", "PartitionSpec", "SingleDeviceSharding"]
