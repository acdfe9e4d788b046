"""paragrad.nn.modules: the layer classes, one file per concept under PyTorch's file names
(torch/nn/modules/): activation, linear, conv, pooling, normalization, batchnorm, instancenorm,
dropout, sparse, loss, rnn, transformer, container, padding, distance, flatten, pixelshuffle,
fold, channelshuffle, upsampling; lazy.py holds the lazy modules' machinery and
sequential_fusion.py the Linear+activation fusion of Sequential. paragrad.nn re-exports every
class listed here."""
from .activation import (CELU, ELU, GELU, GLU, Hardshrink, Hardsigmoid, Hardswish,  # noqa: F401
                         Hardtanh, LeakyReLU, LogSigmoid, LogSoftmax, Mish, MultiheadAttention,
                         PReLU, RReLU, ReLU, ReLU6, SELU, SiLU, Sigmoid, Softmax, Softmax2d,
                         Softmin, Softplus, Softshrink, Softsign, Tanh, Tanhshrink, Threshold)
from .batchnorm import BatchNorm1d, BatchNorm2d, BatchNorm3d  # noqa: F401
from .channelshuffle import ChannelShuffle  # noqa: F401
from .container import (ModuleDict, ModuleList, ParameterDict, ParameterList,  # noqa: F401
                        Sequential)
from .conv import (Conv1d, Conv2d, ConvTranspose1d, ConvTranspose2d, LazyConv1d,  # noqa: F401
                   LazyConv2d)
from .distance import CosineSimilarity, PairwiseDistance  # noqa: F401
from .dropout import (AlphaDropout, Dropout, Dropout1d, Dropout2d, Dropout3d,  # noqa: F401
                      FeatureAlphaDropout)
from .flatten import Flatten, Unflatten  # noqa: F401
from .fold import Fold, Unfold  # noqa: F401
from .instancenorm import InstanceNorm1d, InstanceNorm2d  # noqa: F401
from .linear import Bilinear, Identity, LazyLinear, Linear  # noqa: F401
from .loss import (BCELoss, BCEWithLogitsLoss, CosineEmbeddingLoss, CrossEntropyLoss,  # noqa: F401
                   GaussianNLLLoss, HingeEmbeddingLoss, HuberLoss, KLDivLoss, L1Loss, MSELoss,
                   MarginRankingLoss, MultiLabelMarginLoss, MultiLabelSoftMarginLoss,
                   MultiMarginLoss, NLLLoss, PoissonNLLLoss, SmoothL1Loss, SoftMarginLoss,
                   TripletMarginLoss, TripletMarginWithDistanceLoss)
from .normalization import GroupNorm, LayerNorm, LocalResponseNorm, RMSNorm  # noqa: F401
from .padding import (CircularPad1d, CircularPad2d, CircularPad3d, ConstantPad1d,  # noqa: F401
                      ConstantPad2d, ConstantPad3d, ReflectionPad1d, ReflectionPad2d,
                      ReflectionPad3d, ReplicationPad1d, ReplicationPad2d, ReplicationPad3d,
                      ZeroPad1d, ZeroPad2d, ZeroPad3d)
from .pixelshuffle import PixelShuffle, PixelUnshuffle  # noqa: F401
from .pooling import (AdaptiveAvgPool1d, AdaptiveAvgPool2d, AdaptiveMaxPool1d,  # noqa: F401
                      AdaptiveMaxPool2d, AvgPool1d, AvgPool2d, LPPool1d, LPPool2d, MaxPool1d,
                      MaxPool2d, MaxUnpool1d, MaxUnpool2d)
from .rnn import GRU, GRUCell, LSTM, LSTMCell, RNN, RNNBase, RNNCell, RNNCellBase  # noqa: F401
from .sparse import Embedding, EmbeddingBag  # noqa: F401
from .transformer import (Transformer, TransformerDecoder, TransformerDecoderLayer,  # noqa: F401
                          TransformerEncoder, TransformerEncoderLayer)
from .upsampling import Upsample, UpsamplingBilinear2d, UpsamplingNearest2d  # noqa: F401

# every class above (torch.nn.modules' names): what `from paragrad.nn.modules import *` gives
__all__ = [_name for _name, _value in dict(globals()).items() if isinstance(_value, type)]
