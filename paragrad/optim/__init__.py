"""paragrad.optim: PyTorch's torch.optim optimizers and learning-rate schedules. SGD, Adam and
AdamW update every parameter of a group in one fused kernel on CUDA and can be captured by
pg.jit; RMSprop, Adagrad, Adadelta, Adamax, NAdam and RAdam are PyTorch's single-tensor
reference updates written with Tensor ops, run eagerly; LBFGS re-evaluates a closure several
times a step, with an optional strong-Wolfe line search."""
from . import lr_scheduler  # noqa: F401
from .adadelta import Adadelta  # noqa: F401
from .adagrad import Adagrad  # noqa: F401
from .adam import Adam, AdamW  # noqa: F401
from .adamax import Adamax  # noqa: F401
from .lbfgs import LBFGS  # noqa: F401
from .nadam import NAdam  # noqa: F401
from .optimizer import Optimizer  # noqa: F401
from .radam import RAdam  # noqa: F401
from .rmsprop import RMSprop  # noqa: F401
from .sgd import SGD  # noqa: F401
