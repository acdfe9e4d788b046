"""paragrad.amp (torch.amp): automatic mixed precision. `autocast` runs each op in the dtype
torch's lists give it (autocast_mode.py, with the per-op lists in ops/autocast_policy.py);
`GradScaler` scales the loss so float16 gradients don't underflow (grad_scaler.py)."""
from .autocast_mode import (autocast, get_autocast_dtype, is_autocast_available,
                            is_autocast_enabled, set_autocast_enabled)
from .grad_scaler import GradScaler

__all__ = ["autocast", "GradScaler", "is_autocast_available"]
