"""torchvision.models' ResNet-18 and ResNet-34 builders, with torchvision's signature, over
paragrad.models.resnet (torchvision's layout, names and initialization, so state dicts match).

Pretrained weights are not downloaded: `weights=` other than None raises, saying how to load a
state dict instead. Of ResNet's keyword arguments, num_classes and zero_init_residual are taken;
the others (groups, width_per_group, replace_stride_with_dilation, norm_layer) belong to
variants that BasicBlock networks don't use, and are refused by name."""
from __future__ import annotations

from ..models import resnet as _resnet

_TAKEN = ("num_classes", "zero_init_residual")


def _build(name, make, weights, kwargs):
    if weights is not None:
        raise RuntimeError(f"torchvision.models.{name}: weights={weights!r} would be downloaded, which paragrad "
                           f"does not do; build it with weights=None and load the weights' state dict: "
                           f"model.load_state_dict(torch.load(path))")
    unknown = sorted(set(kwargs) - set(_TAKEN))
    if unknown:
        raise TypeError(f"torchvision.models.{name}: paragrad takes {', '.join(_TAKEN)}; got "
                        f"{', '.join(unknown)}")
    return make(**kwargs)


def resnet18(*, weights=None, progress=True, **kwargs):
    """ResNet-18 for 224x224 ImageNet-style inputs, randomly initialized as torchvision's."""
    return _build("resnet18", _resnet.resnet18, weights, kwargs)


def resnet34(*, weights=None, progress=True, **kwargs):
    """ResNet-34 for 224x224 ImageNet-style inputs, randomly initialized as torchvision's."""
    return _build("resnet34", _resnet.resnet34, weights, kwargs)
