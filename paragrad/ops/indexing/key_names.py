"""The names torch gives the nodes of x[key] and x[key] = value, read off the key: paragrad
plans an index its own way (one strided slice, one take), torch applies the key's items one
by one and names the node after the last step."""
from __future__ import annotations

import numpy as np

from ... import dtypes as dt
from ...tensor import Tensor


def torch_indexing(shape, key, setting=False, value=None):
    """The name torch gives x[key]'s node (setting: x[key] = value's) on a tensor of `shape`.
    Torch applies the key's items in turn: an int or a 0-d integer tensor selects, a slice
    slices (skipped where it takes a whole dim, in a tuple key or a setitem), None unsqueezes
    (a bool too, in setitem); index tensors, lists and masks (and a bool, in getitem) then
    index the result. getitem's node is the last of these, an alias where none acted; setitem
    copies into the view where one acted (CopySlices), else puts at the indices, else fills
    or copies into x itself."""
    if type(key) is int:
        return "CopySlices" if setting else "SelectBackward0"
    items = key if type(key) is tuple else (key,)
    skip_full = setting or type(key) is tuple
    d, last, adv = 0, None, False
    for k in items:
        tk = type(k)
        if tk is slice:                 # (torch's test of a whole dim is on the bounds as given)
            if not (skip_full and k.start in (None, 0) and k.step in (None, 1)
                    and (k.stop is None or k.stop >= shape[d])):
                last = "SliceBackward0"
            d += 1
        elif tk is int or isinstance(k, np.integer) or (
                isinstance(k, Tensor) and k.ndim == 0 and not k.dtype.is_floating_point
                and k.dtype is not dt.bool_ and k.dtype is not dt.uint8):
            last = "SelectBackward0"
            d += 1
        elif k is None:
            last = "UnsqueezeBackward0"
        elif k is Ellipsis:
            d += len(shape) - sum(_dims_taken(i) for i in items)
        elif tk is bool:                # (setitem takes it as an unsqueeze, getitem as an index)
            if setting:
                last = "UnsqueezeBackward0"
            else:
                adv = True
        else:
            adv = True
            d += _dims_taken(k)
    if not setting:
        return "IndexBackward0" if adv else last or "AliasBackward0"
    if last is not None:
        return "CopySlices"
    if adv:
        return "IndexPutBackward0"
    return "CopyBackwards" if isinstance(value, Tensor) or not shape else "FillBackward3"


def _dims_taken(k):
    """How many of the indexed tensor's dims a key item consumes (a mask: its own dims)."""
    if k is None or k is Ellipsis or type(k) is bool:
        return 0
    if isinstance(k, Tensor):
        return k.ndim if k.dtype in (dt.bool_, dt.uint8) else 1
    if isinstance(k, (list, np.ndarray)):
        a = np.asarray(k)
        return a.ndim if a.dtype == np.bool_ else 1
    return 1
