"""paragrad.distributed.optim: optimizers over a process group (torch.distributed.optim)."""
from .zero_redundancy_optimizer import ZeroRedundancyOptimizer  # noqa: F401
