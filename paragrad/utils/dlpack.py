"""`paragrad.utils.dlpack` as `torch.utils.dlpack`: to_dlpack(tensor) gives a capsule,
from_dlpack(capsule or array) a Tensor sharing its memory (see paragrad/dlpack.py)."""
from ..dlpack import DLDeviceType, from_dlpack  # noqa: F401


def to_dlpack(tensor):
    """A DLPack capsule sharing the tensor's memory (the legacy, unversioned form torch's gives)."""
    return tensor.__dlpack__()
