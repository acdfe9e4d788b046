"""paragrad: a readable deep-learning framework built on ~20 primitive tensor ops.

    import paragrad as pg
    x = pg.randn(3, 4, requires_grad=True)
    (x.relu() @ pg.ones(4, 2)).sum().backward()
"""
import sys as _sys

from . import autograd, dtypes
from .autograd import enable_grad, inference_mode, is_grad_enabled, no_grad, set_grad_enabled
from .autograd.anomaly_mode import is_anomaly_check_nan_enabled, is_anomaly_enabled, set_anomaly_enabled
from .backends import device
from .dtypes import (bfloat16, bool_ as bool, double, finfo, float16, float32, float64,
                     get_default_dtype, half, iinfo, int8, int16, int32, int64, long, promote_types,
                     result_type, set_default_dtype, short, uint8)
from .dtypes import DType as dtype
from .dtypes import float32 as float  # noqa: A001  (torch.float is float32)
from .dtypes import int32 as int  # noqa: A001  (torch.int is int32)
from .random import Generator, get_rng_state, initial_seed, manual_seed, seed, set_rng_state
from .tensor import Size, Tensor
from .memory_format import (channels_last, channels_last_3d, contiguous_format, memory_format,  # noqa: F401
                            preserve_format)
from .ops import *  # noqa: F401,F403  (the functional forms: pg.exp, pg.cat, ...)
from .ops import (abs, all, any, max, min, pow, round, sum)  # noqa: A004  (torch names)
from .ops import methods as _tensor_methods  # noqa: E402,F401  (attaches the Tensor methods)

from . import accelerator, cuda, data, linalg, nn, optim, special, utils  # noqa: E402,F401  (pg.nn like torch.nn)
from .jit import jit  # noqa: E402,F401
from .compilation import compile  # noqa: E402,F401,A004  (torch.compile)
from . import amp  # noqa: E402,F401
from .cuda import amp as _cuda_amp  # noqa: E402,F401  (pg.cuda.amp, torch's deprecated forms)
from .amp import autocast, get_autocast_dtype, is_autocast_enabled, set_autocast_enabled  # noqa: E402,F401
from .io.serialization import load, save  # noqa: E402,F401  (torch.save / torch.load)
# paragrad.checkpoint is the path the README documented before checkpoints moved into io/:
# registering the module under its old name keeps `import paragrad.checkpoint` and
# pg.checkpoint.load_weights working, with one module object behind both names.
from .io import checkpoint  # noqa: E402
_sys.modules[__name__ + ".checkpoint"] = checkpoint
from .dlpack import from_dlpack  # noqa: E402,F401
from .repr import set_printoptions  # noqa: E402,F401
from .nn.functional import (  # noqa: E402,F401  (the nn.functional forms torch also has at top level)
    adaptive_avg_pool1d, alpha_dropout, avg_pool1d, bilinear, celu, celu_, channel_shuffle, conv1d,
    conv_transpose1d, conv_transpose2d, cosine_similarity, dropout, feature_alpha_dropout, group_norm,
    hardshrink,
    max_pool1d, max_pool2d, pairwise_distance, pdist, pixel_shuffle, pixel_unshuffle, prelu,
    relu_, rrelu, rrelu_, selu, selu_, threshold, threshold_)

__version__ = "0.1.0"


def is_tensor(x):
    """Whether x is a paragrad Tensor (or a subclass's instance), as torch.is_tensor."""
    return isinstance(x, Tensor)


def numel(input):
    """The number of elements of input, as torch.numel."""
    x = input
    return x.numel()


def __getattr__(name):
    # pg.models without `import paragrad.models`: imported on first use, since its GPT, ResNet
    # and samplers add about 8 % to `import paragrad` for code that never builds a model
    if name == "models":
        import importlib
        return importlib.import_module(__name__ + ".models")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# help(paragrad) lists what __all__ names (pydoc otherwise shows only the functions defined in
# this file): every public name imported above, the same set `from paragrad import *` gave
# without it. `models` stays out: it is imported on first use (__getattr__ above).
__all__ = sorted(_n for _n in globals() if not _n.startswith("_"))
