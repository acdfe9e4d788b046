"""paragrad.optim: SGD, Adam, AdamW and learning-rate schedules (PyTorch's torch.optim)."""
from . import lr_scheduler  # noqa: F401
from .adam import Adam, AdamW  # noqa: F401
from .optimizer import Optimizer  # noqa: F401
from .sgd import SGD  # noqa: F401
