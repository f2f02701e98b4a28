"""xlapy.scipy: the parts of jax.scipy that xlapy has: `xlapy.scipy.linalg`, `xlapy.scipy.special`."""
from . import linalg, special

__all__ = ["linalg", "special"]
