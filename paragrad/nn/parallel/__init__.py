"""paragrad.nn.parallel (torch.nn.parallel): DistributedDataParallel, one process per rank over
paragrad.distributed. distributed.py is the wrapper module, reducer.py averages the gradients in
buckets during backward."""
from .distributed import DistributedDataParallel  # noqa: F401
