"""xlapy.sharding (jax.sharding): meshes and shardings. Implemented in frontend/parallel/mesh.py, reshard in
frontend/parallel/sharded_jit.py."""
from .frontend.parallel.mesh import (AbstractDevice, AbstractMesh, AxisType, ManualAxisType, Mesh, NamedSharding,
                                     PartitionSpec, Sharding, SingleDeviceSharding, auto_axes, explicit_axes,
                                     get_abstract_mesh, get_mesh, make_single_device_sharding, set_mesh,
                                     use_abstract_mesh)
from .frontend.parallel.sharded_jit import reshard

__all__ = ["AbstractDevice", "AbstractMesh", "AxisType", "ManualAxisType", "Mesh", "NamedSharding", "PartitionSpec",
           "Sharding", "SingleDeviceSharding", "auto_axes", "explicit_axes", "get_abstract_mesh", "get_mesh",
           "make_single_device_sharding", "reshard", "set_mesh", "use_abstract_mesh"]
