"""paragrad.nn: modules, parameters, losses, init and functional forms (PyTorch's torch.nn), filed
as PyTorch files them: module.py (Module), parameter.py, init.py, hooks.py (backward hooks),
functional/ (F), modules/ (the layer classes, every one re-exported here), parallel/
(DistributedDataParallel) and utils/."""
from . import functional, init, parallel, utils  # noqa: F401
from .module import Module  # noqa: F401
from .modules import *  # noqa: F401,F403
from .parameter import Parameter, UninitializedParameter  # noqa: F401
