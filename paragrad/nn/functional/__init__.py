"""paragrad.nn.functional: the stateless forms of the layers and losses (PyTorch's
torch.nn.functional, `import paragrad.nn.functional as F`). One file per concept, as PyTorch
files the modules: activation, linear, conv, pooling, normalization, dropout, sparse (lookups),
loss, distance, vision; this file re-exports them all."""
from ...ops.neural.attention import scaled_dot_product_attention
from ...tensor import Tensor  # noqa: F401  (torch.nn.functional.Tensor, for annotations)
from .activation import (celu, celu_, elu, elu_, gelu, glu, gumbel_softmax, hardshrink,  # noqa: F401
                         hardsigmoid, hardswish, hardtanh, hardtanh_, leaky_relu, leaky_relu_,
                         log_softmax, logsigmoid, mish, prelu, relu, relu6, relu_, rrelu, rrelu_,
                         selu, selu_, sigmoid, silu, softmax, softmin, softplus, softshrink,
                         softsign, tanh, tanhshrink, threshold, threshold_)
from .conv import conv1d, conv2d, conv_transpose1d, conv_transpose2d, fold, unfold  # noqa: F401
from .distance import cosine_similarity, pairwise_distance, pdist  # noqa: F401
from .dropout import (alpha_dropout, dropout, dropout1d, dropout2d, dropout3d,  # noqa: F401
                      feature_alpha_dropout, residual_dropout)
from .linear import bilinear, linear  # noqa: F401
from .loss import _check_reduction, _legacy_reduction  # noqa: F401  (the loss modules')
from .binary_cross_entropy import binary_cross_entropy, binary_cross_entropy_with_logits  # noqa: F401
from .loss import (cosine_embedding_loss, cross_entropy, gaussian_nll_loss, hinge_embedding_loss,  # noqa: F401
                   huber_loss, kl_div, l1_loss, margin_ranking_loss, mse_loss, multi_margin_loss,
                   multilabel_margin_loss, multilabel_soft_margin_loss, nll_loss, poisson_nll_loss,
                   smooth_l1_loss, soft_margin_loss, triplet_margin_loss,
                   triplet_margin_with_distance_loss)
from .normalization import (batch_norm, batch_norm_relu, group_norm, instance_norm,  # noqa: F401
                            layer_norm, layer_norm_cast, local_response_norm, normalize, rms_norm)
from .pooling import (adaptive_avg_pool1d, adaptive_avg_pool2d, adaptive_max_pool1d,  # noqa: F401
                      adaptive_max_pool1d_with_indices, adaptive_max_pool2d,
                      adaptive_max_pool2d_with_indices, avg_pool1d, avg_pool2d, lp_pool1d,
                      lp_pool2d, max_pool1d, max_pool1d_with_indices, max_pool2d,
                      max_pool2d_with_indices, max_unpool1d, max_unpool2d)
from .sparse import embedding, embedding_bag, one_hot  # noqa: F401
from .vision import channel_shuffle, interpolate, pad, pixel_shuffle, pixel_unshuffle  # noqa: F401
