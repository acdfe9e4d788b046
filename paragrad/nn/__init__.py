"""paragrad.nn: modules, parameters, losses, init and functional forms (PyTorch's torch.nn)."""
from . import functional, init, utils  # noqa: F401
from .activation import (CELU, ELU, GLU, SELU, Hardshrink, Hardsigmoid, Hardswish, Hardtanh,  # noqa: F401
                         LogSigmoid, Mish, PReLU, ReLU6, RReLU, Softmin, Softshrink, Softsign,
                         Tanhshrink, Threshold)
from .batchnorm import BatchNorm1d, BatchNorm2d, BatchNorm3d  # noqa: F401
from .containers import ModuleDict, ModuleList, ParameterDict, ParameterList, Sequential  # noqa: F401
from .conv import Conv1d, Conv2d  # noqa: F401
from .distance import CosineSimilarity, PairwiseDistance  # noqa: F401
from .embedding import Embedding  # noqa: F401
from .embedding_bag import EmbeddingBag  # noqa: F401
from .lazy import LazyConv1d, LazyConv2d, LazyLinear, UninitializedParameter  # noqa: F401
from .layers import (GELU, AlphaDropout, Dropout, Dropout1d, Dropout2d, Dropout3d,  # noqa: F401
                     FeatureAlphaDropout, Flatten, Identity,
                     LayerNorm, LeakyReLU, Linear, LogSoftmax, ReLU, Sigmoid, SiLU, Softmax, Softplus,
                     Tanh, Unflatten, Upsample)
from .loss import (BCELoss, BCEWithLogitsLoss, CosineEmbeddingLoss, CrossEntropyLoss,  # noqa: F401
                   GaussianNLLLoss, HingeEmbeddingLoss, HuberLoss, KLDivLoss, L1Loss,
                   MarginRankingLoss, MSELoss, MultiLabelMarginLoss, MultiLabelSoftMarginLoss,
                   MultiMarginLoss, NLLLoss, PoissonNLLLoss, SmoothL1Loss, SoftMarginLoss,
                   TripletMarginLoss, TripletMarginWithDistanceLoss)
from .module import Module  # noqa: F401
from .multihead_attention import MultiheadAttention  # noqa: F401
from .normalization import GroupNorm, RMSNorm  # noqa: F401
from .padding import (CircularPad1d, CircularPad2d, CircularPad3d, ConstantPad1d, ConstantPad2d,  # noqa: F401
                      ConstantPad3d, ReflectionPad1d, ReflectionPad2d, ReflectionPad3d,
                      ReplicationPad1d, ReplicationPad2d, ReplicationPad3d, ZeroPad1d, ZeroPad2d,
                      ZeroPad3d)
from .parameter import Parameter  # noqa: F401
from .transformer import TransformerEncoder, TransformerEncoderLayer  # noqa: F401
from .pooling import (AdaptiveAvgPool1d, AdaptiveAvgPool2d, AdaptiveMaxPool1d, AdaptiveMaxPool2d,  # noqa: F401
                      AvgPool1d, AvgPool2d, LPPool1d, LPPool2d, MaxPool1d, MaxPool2d, MaxUnpool1d,
                      MaxUnpool2d)
# families in modules of their own, each listing its exports in __all__
from .conv_extra import *  # noqa: E402,F401,F403
from .layers_extra import *  # noqa: E402,F401,F403
from .recurrent import *  # noqa: E402,F401,F403
from .transformer_decoder import *  # noqa: E402,F401,F403
