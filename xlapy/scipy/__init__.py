"""xlapy.scipy: the parts of jax.scipy that xlapy has: `xlapy.scipy.linalg`."""
from . import linalg

__all__ = ["linalg"]
