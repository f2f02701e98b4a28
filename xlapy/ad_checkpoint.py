"""jax.ad_checkpoint: checkpoint (remat), checkpoint_name and the checkpoint policies
(frontend/custom_derivatives.py; they hook into the HLO autodiff through frontend/autodiff/custom_rules.py)."""
from .frontend.custom_derivatives import checkpoint, checkpoint_name, checkpoint_policies, remat

__all__ = ["checkpoint", "checkpoint_name", "checkpoint_policies", "remat"]
