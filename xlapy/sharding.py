"""xlapy.sharding (jax.sharding): meshes and shardings. Implemented in frontend/parallel/mesh.py, reshard in
frontend/parallel/sharded_jit.py."""
from .frontend.parallel.mesh import (AxisType, Mesh, NamedSharding, PartitionSpec, Sharding, SingleDeviceSharding,
                                     get_mesh, set_mesh)
from .frontend.parallel.sharded_jit import reshard

__all__ = ["AxisType", "Mesh", "NamedSharding", "PartitionSpec", "Sharding", "SingleDeviceSharding", "get_mesh",
           "reshard", "set_mesh"]
