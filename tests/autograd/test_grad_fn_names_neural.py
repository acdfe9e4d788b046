"""grad_fn class names of the neural-network ops (ops/neural, nn.functional's layers and
losses), torch's computed live: each row runs the same call on torch and paragrad. Rows cover
the forms torch names apart: batched and unbatched (a squeeze last), the 1-D pools and convs
(squeezes), linear by input rank, contiguity and bias (addmm, mm, view, unsafe view, add),
attention by the kernel torch's CPU dispatch picks (flash, or the math composition's last step),
each loss by reduction (l1's composition, nll_loss against nll_loss2d), the fused ops (named for
their last op), channels-last inputs, and the recurrent layers. Tensors are tiny and seeded."""
import warnings

import numpy as np
import pytest
import torch

import paragrad as pg
from tests.helpers import needs_torch_2_13


def _maker(lib):
    """t(*shape, grad=True, dtype=None, cl=False, low=-2, high=2): a seeded lib tensor, the
    same values on both libraries for the same sequence of calls."""
    rng = np.random.default_rng(0)

    def t(*shape, grad=True, dtype=None, cl=False, low=-2.0, high=2.0):
        x = lib.tensor(rng.uniform(low, high, shape).astype(np.float32))
        if dtype is not None:
            x = x.to(getattr(lib, dtype))
        if cl:
            x = x.contiguous(memory_format=lib.channels_last)
        return x.requires_grad_(grad)
    return t


def _i(L, *values):
    return L.tensor(values, dtype=L.int64)


def _name(y):
    return None if y.grad_fn is None else type(y.grad_fn).__name__


# (id, call(L, F, t)): L is torch or paragrad, F its nn.functional, t the tensor maker
ROWS = [
    # convolutions
    ("conv2d", lambda L, F, t: F.conv2d(t(1, 2, 5, 5), t(3, 2, 3, 3), t(3))),
    ("conv2d_unbatched", lambda L, F, t: F.conv2d(t(2, 5, 5), t(3, 2, 3, 3))),
    ("conv2d_same_groups", lambda L, F, t: F.conv2d(t(1, 4, 5, 5), t(4, 2, 3, 3), padding="same", groups=2)),
    ("conv2d_channels_last", lambda L, F, t: F.conv2d(t(1, 2, 5, 5, cl=True), t(3, 2, 3, 3))),
    ("conv1d", lambda L, F, t: F.conv1d(t(1, 2, 5), t(3, 2, 3), t(3))),
    ("conv1d_unbatched", lambda L, F, t: F.conv1d(t(2, 5), t(3, 2, 3))),
    ("conv_transpose2d", lambda L, F, t: F.conv_transpose2d(t(1, 2, 3, 3), t(2, 3, 3, 3), stride=2,
                                                            output_padding=1)),
    ("conv_transpose2d_unbatched", lambda L, F, t: F.conv_transpose2d(t(2, 3, 3), t(2, 3, 3, 3), padding=1)),
    ("conv_transpose2d_channels_last", lambda L, F, t: F.conv_transpose2d(t(1, 2, 3, 3, cl=True), t(2, 3, 3, 3))),
    ("conv_transpose1d", lambda L, F, t: F.conv_transpose1d(t(1, 2, 3), t(2, 3, 3))),
    ("conv_transpose1d_unbatched", lambda L, F, t: F.conv_transpose1d(t(2, 3), t(2, 3, 3))),
    ("unfold", lambda L, F, t: F.unfold(t(1, 2, 4, 4), 2)),
    ("unfold_unbatched", lambda L, F, t: F.unfold(t(2, 4, 4), 2, padding=1)),
    ("fold", lambda L, F, t: F.fold(t(1, 8, 9), (4, 4), 2)),
    ("fold_unbatched", lambda L, F, t: F.fold(t(8, 9), (4, 4), 2)),
    # normalization
    ("batch_norm_train", lambda L, F, t: F.batch_norm(t(4, 3, 2), None, None, t(3), t(3), training=True)),
    ("batch_norm_eval", lambda L, F, t: F.batch_norm(t(4, 3), L.zeros(3), L.ones(3), training=False)),
    ("batch_norm_bf16_f32_params", lambda L, F, t: F.batch_norm(t(4, 3, 2, dtype="bfloat16"), None, None,
                                                                t(3), t(3), training=True)),
    ("batch_norm_empty", lambda L, F, t: F.batch_norm(t(0, 3, 2), L.zeros(3), L.ones(3))),
    ("layer_norm", lambda L, F, t: F.layer_norm(t(2, 3, 4), (4,), t(4), t(4))),
    ("layer_norm_no_affine", lambda L, F, t: F.layer_norm(t(2, 3, 4), (3, 4))),
    ("layer_norm_bf16_f32_params", lambda L, F, t: F.layer_norm(t(2, 4, dtype="bfloat16"), (4,), t(4), t(4))),
    ("group_norm", lambda L, F, t: F.group_norm(t(2, 4, 3), 2, t(4), t(4))),
    ("group_norm_only_weight", lambda L, F, t: F.group_norm(t(2, 4, 3, grad=False), 2, t(4))),
    ("instance_norm", lambda L, F, t: F.instance_norm(t(2, 3, 4))),
    ("instance_norm_running", lambda L, F, t: F.instance_norm(t(2, 3, 4), L.zeros(3), L.ones(3), t(3), t(3),
                                                              use_input_stats=False)),
    # pooling
    ("max_pool2d", lambda L, F, t: F.max_pool2d(t(1, 2, 4, 4), 2)),
    ("max_pool2d_indices", lambda L, F, t: F.max_pool2d(t(2, 4, 4), 2, return_indices=True)[0]),
    ("max_pool2d_channels_last", lambda L, F, t: F.max_pool2d(t(1, 2, 4, 4, cl=True), 2)),
    ("max_pool1d", lambda L, F, t: F.max_pool1d(t(1, 2, 4), 2)),
    ("max_pool1d_indices", lambda L, F, t: F.max_pool1d(t(2, 4), 2, return_indices=True)[0]),
    ("avg_pool2d", lambda L, F, t: F.avg_pool2d(t(1, 2, 4, 4), 2, padding=1)),
    ("avg_pool2d_channels_last", lambda L, F, t: F.avg_pool2d(t(1, 2, 4, 4, cl=True), 2)),
    ("avg_pool1d", lambda L, F, t: F.avg_pool1d(t(2, 4), 2)),
    ("adaptive_avg_pool2d", lambda L, F, t: F.adaptive_avg_pool2d(t(1, 2, 4, 4), 2)),
    ("adaptive_avg_pool2d_uneven", lambda L, F, t: F.adaptive_avg_pool2d(t(1, 2, 5, 5), 3)),
    ("adaptive_avg_pool2d_1x1", lambda L, F, t: F.adaptive_avg_pool2d(t(2, 4, 4), 1)),
    ("adaptive_avg_pool2d_1x1_channels_last", lambda L, F, t: F.adaptive_avg_pool2d(t(1, 2, 4, 4, cl=True), 1)),
    ("adaptive_avg_pool2d_channels_last", lambda L, F, t: F.adaptive_avg_pool2d(t(1, 2, 5, 5, cl=True), 3)),
    ("adaptive_avg_pool1d", lambda L, F, t: F.adaptive_avg_pool1d(t(1, 2, 4), 1)),
    ("adaptive_max_pool2d", lambda L, F, t: F.adaptive_max_pool2d(t(1, 2, 5, 5), 3)),
    ("adaptive_max_pool2d_indices", lambda L, F, t: F.adaptive_max_pool2d(t(2, 4, 4), 2, True)[0]),
    ("adaptive_max_pool1d", lambda L, F, t: F.adaptive_max_pool1d(t(1, 2, 4), 2)),
    ("lp_pool2d", lambda L, F, t: F.lp_pool2d(t(1, 2, 4, 4), 2, 2)),
    ("max_unpool2d", lambda L, F, t: F.max_unpool2d(t(1, 2, 2, 2), _i(L, 0, 3, 8, 11, 1, 2, 9, 10).reshape(1, 2, 2, 2),
                                                    2)),
    ("max_unpool1d", lambda L, F, t: F.max_unpool1d(t(1, 2, 2), _i(L, 0, 3, 1, 2).reshape(1, 2, 2), 2)),
    # softmax and the classification losses
    ("softmax", lambda L, F, t: F.softmax(t(2, 3), -1)),
    ("softmax_dtype", lambda L, F, t: F.softmax(t(2, 3), 0, dtype=L.float64)),
    ("softmax_0d", lambda L, F, t: F.softmax(t(), 0)),
    ("log_softmax", lambda L, F, t: F.log_softmax(t(2, 3), -1)),
    ("softmin", lambda L, F, t: F.softmin(t(2, 3), 1)),
    *[(f"cross_entropy_{red}", lambda L, F, t, red=red: F.cross_entropy(t(3, 4), _i(L, 0, 1, 2), reduction=red))
      for red in ("mean", "sum", "none")],
    ("cross_entropy_ignore", lambda L, F, t: F.cross_entropy(t(3, 4), _i(L, 0, -100, 2))),
    ("cross_entropy_1d", lambda L, F, t: F.cross_entropy(t(4), _i(L, 1)[0])),
    ("cross_entropy_3d", lambda L, F, t: F.cross_entropy(t(2, 4, 3), _i(L, 0, 1, 2, 3, 0, 1).reshape(2, 3))),
    ("cross_entropy_3d_none", lambda L, F, t: F.cross_entropy(t(2, 4, 3), _i(L, 0, 1, 2, 3, 0, 1).reshape(2, 3),
                                                              reduction="none")),
    ("cross_entropy_weight", lambda L, F, t: F.cross_entropy(t(3, 4), _i(L, 0, 1, 2), t(4, grad=False, low=0.1))),
    ("cross_entropy_label_smoothing", lambda L, F, t: F.cross_entropy(t(3, 4), _i(L, 0, 1, 2), label_smoothing=0.1)),
    *[(f"cross_entropy_probs_{red}", lambda L, F, t, red=red: F.cross_entropy(
        t(3, 4), t(3, 4, grad=False, low=0.0, high=1.0), reduction=red)) for red in ("mean", "sum", "none")],
    ("cross_entropy_probs_1d", lambda L, F, t: F.cross_entropy(t(4), t(4, grad=False, low=0.0, high=1.0))),
    ("nll_loss", lambda L, F, t: F.nll_loss(t(3, 4), _i(L, 0, 1, 2))),
    ("nll_loss_1d_none", lambda L, F, t: F.nll_loss(t(4), _i(L, 1)[0], reduction="none")),
    ("nll_loss_sum", lambda L, F, t: F.nll_loss(t(3, 4), _i(L, 0, 1, 2), reduction="sum")),
    *[(f"nll_loss_{d}d_{red}", lambda L, F, t, d=d, red=red: F.nll_loss(
        t(2, 4, *(3,) * (d - 2)), L.zeros((2,) + (3,) * (d - 2), dtype=L.int64), reduction=red))
      for d in (3, 4, 5) for red in ("mean", "none")],
    # regression losses: their own nodes, l1's composition
    *[(f"{name}_{red}", lambda L, F, t, name=name, red=red: getattr(F, name)(t(3), t(3), reduction=red))
      for name in ("mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss") for red in ("mean", "sum", "none")],
    ("smooth_l1_loss_beta0", lambda L, F, t: F.smooth_l1_loss(t(3), t(3), beta=0.0)),
    ("smooth_l1_loss_beta0_none", lambda L, F, t: F.smooth_l1_loss(t(3), t(3), beta=0.0, reduction="none")),
    ("l1_loss_target_only", lambda L, F, t: F.l1_loss(t(3, grad=False), t(3))),
    *[(f"{name}_broadcast", lambda L, F, t, name=name: getattr(F, name)(t(3, 1), t(3)))
      for name in ("mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss")],
    ("mse_loss_weight", lambda L, F, t: F.mse_loss(t(3), t(3), weight=t(3, grad=False, low=0.1))),
    ("huber_loss_weight", lambda L, F, t: F.huber_loss(t(3), t(3), weight=t(3, grad=False, low=0.1))),
    # the other losses
    *[(f"{name}_{red}", lambda L, F, t, name=name, red=red: call(L, F, t, red))
      for name, call in (
        ("soft_margin_loss", lambda L, F, t, red: F.soft_margin_loss(t(3), L.tensor([1.0, -1, 1]), reduction=red)),
        ("multi_margin_loss", lambda L, F, t, red: F.multi_margin_loss(t(3, 4), _i(L, 0, 1, 2), reduction=red)),
        ("multilabel_margin_loss", lambda L, F, t, red: F.multilabel_margin_loss(
            t(2, 4), _i(L, 0, 1, -1, 0, 3, -1, 0, 0).reshape(2, 4), reduction=red)),
        ("multilabel_soft_margin_loss", lambda L, F, t, red: F.multilabel_soft_margin_loss(
            t(3, 4), t(3, 4, grad=False, low=0.0, high=1.0), reduction=red)),
        ("binary_cross_entropy", lambda L, F, t, red: F.binary_cross_entropy(
            t(3, low=0.1, high=0.9), t(3, grad=False, low=0.0, high=1.0), reduction=red)),
        ("binary_cross_entropy_weight", lambda L, F, t, red: F.binary_cross_entropy(
            t(3, low=0.1, high=0.9), t(3, grad=False, low=0.0, high=1.0), t(3, grad=False), reduction=red)),
        ("binary_cross_entropy_with_logits", lambda L, F, t, red: F.binary_cross_entropy_with_logits(
            t(3), t(3, grad=False, low=0.0, high=1.0), reduction=red)),
        ("binary_cross_entropy_with_logits_weights", lambda L, F, t, red: F.binary_cross_entropy_with_logits(
            t(2, 3), t(2, 3, low=0.0, high=1.0), t(3, grad=False), pos_weight=t(3, grad=False, low=0.1),
            reduction=red)),
        ("kl_div", lambda L, F, t, red: F.kl_div(t(2, 3), t(2, 3, grad=False, low=0.0, high=1.0), reduction=red)),
        ("margin_ranking_loss", lambda L, F, t, red: F.margin_ranking_loss(t(3), t(3), L.tensor([1.0, -1, 1]),
                                                                           reduction=red)),
        ("hinge_embedding_loss", lambda L, F, t, red: F.hinge_embedding_loss(t(3), L.tensor([1.0, -1, 1]),
                                                                             reduction=red)),
        ("triplet_margin_loss", lambda L, F, t, red: F.triplet_margin_loss(t(2, 3), t(2, 3), t(2, 3), swap=True,
                                                                           reduction=red)),
        ("triplet_margin_with_distance_loss", lambda L, F, t, red: F.triplet_margin_with_distance_loss(
            t(2, 3), t(2, 3), t(2, 3), reduction=red)),
        ("poisson_nll_loss", lambda L, F, t, red: F.poisson_nll_loss(t(3), t(3, grad=False, low=0.0), reduction=red)),
      ) for red in ("mean", "sum", "none")],
    ("kl_div_batchmean", lambda L, F, t: F.kl_div(t(2, 3), t(2, 3, grad=False, low=0.0, high=1.0),
                                                  reduction="batchmean")),
    # embeddings
    ("embedding", lambda L, F, t: F.embedding(_i(L, 0, 2, 2), t(3, 4), padding_idx=0)),
    *[(f"embedding_bag_{mode}", lambda L, F, t, mode=mode: F.embedding_bag(_i(L, 0, 2, 1), t(3, 4), _i(L, 0, 1),
                                                                           mode=mode))
      for mode in ("mean", "sum", "max")],
    ("embedding_bag_2d", lambda L, F, t: F.embedding_bag(_i(L, 0, 2, 1, 1).reshape(2, 2), t(3, 4))),
    ("embedding_bag_weights", lambda L, F, t: F.embedding_bag(_i(L, 0, 2, 1), t(3, 4), _i(L, 0, 1), mode="sum",
                                                              per_sample_weights=t(3))),
    # linear: aten::linear's dispatch
    ("linear_2d_bias", lambda L, F, t: F.linear(t(2, 3), t(4, 3), t(4))),
    ("linear_2d", lambda L, F, t: F.linear(t(2, 3), t(4, 3))),
    ("linear_2d_scalar_bias", lambda L, F, t: F.linear(t(2, 3), t(4, 3), t())),
    ("linear_2d_transposed", lambda L, F, t: F.linear(t(3, 2).t(), t(4, 3), t(4))),
    ("linear_1d_bias", lambda L, F, t: F.linear(t(3), t(4, 3), t(4))),
    ("linear_1d", lambda L, F, t: F.linear(t(3), t(4, 3))),
    ("linear_1d_scalar_bias", lambda L, F, t: F.linear(t(3), t(4, 3), t())),
    ("linear_1d_strided_bias", lambda L, F, t: F.linear(t(6)[::2], t(4, 3), t(4))),
    ("linear_3d_bias", lambda L, F, t: F.linear(t(2, 2, 3), t(4, 3), t(4))),
    ("linear_3d", lambda L, F, t: F.linear(t(2, 2, 3), t(4, 3))),
    ("linear_3d_scalar_bias", lambda L, F, t: F.linear(t(2, 2, 3), t(4, 3), t())),
    ("linear_3d_transposed_bias", lambda L, F, t: F.linear(t(2, 3, 2).transpose(1, 2), t(4, 3), t(4))),
    ("linear_3d_transposed", lambda L, F, t: F.linear(t(2, 3, 2).transpose(1, 2), t(4, 3))),
    ("linear_4d_bias", lambda L, F, t: F.linear(t(2, 1, 2, 3), t(4, 3), t(4))),
    ("linear_3d_bias_only", lambda L, F, t: F.linear(t(2, 2, 3, grad=False), t(4, 3, grad=False), t(4))),
    ("bilinear", lambda L, F, t: F.bilinear(t(2, 3), t(2, 4), t(5, 3, 4), t(5))),
    ("bilinear_no_bias", lambda L, F, t: F.bilinear(t(2, 3), t(2, 4), t(5, 3, 4))),
    # dropout (training)
    ("dropout", lambda L, F, t: F.dropout(t(3, 4), 0.5)),
    ("dropout_p1", lambda L, F, t: F.dropout(t(3, 4), 1.0)),
    ("dropout2d", lambda L, F, t: F.dropout2d(t(2, 3, 2, 2), 0.5)),
    ("alpha_dropout", lambda L, F, t: F.alpha_dropout(t(3, 4), 0.5, True)),
    # vision
    *[(f"interpolate_{mode}_{d}d", lambda L, F, t, mode=mode, d=d: F.interpolate(t(1, 2, *(3,) * d), scale_factor=2,
                                                                                 mode=mode))
      for mode, dims in (("nearest", (1, 2, 3)), ("nearest-exact", (1, 2, 3)), ("linear", (1,)),
                         ("bilinear", (2,)), ("trilinear", (3,))) for d in dims],
    ("interpolate_bilinear_align_corners", lambda L, F, t: F.interpolate(t(1, 2, 3, 3), size=(4, 5), mode="bilinear",
                                                                         align_corners=True)),
    ("interpolate_same_size", lambda L, F, t: F.interpolate(t(1, 2, 3, 3), size=3)),
    ("interpolate_channels_last", lambda L, F, t: F.interpolate(t(1, 2, 3, 3, cl=True), scale_factor=2,
                                                                mode="bilinear")),
    ("interpolate_area", lambda L, F, t: F.interpolate(t(1, 2, 5, 5), size=3, mode="area")),
    ("interpolate_area_1", lambda L, F, t: F.interpolate(t(1, 2, 4, 4), size=1, mode="area")),
    ("interpolate_area_1d", lambda L, F, t: F.interpolate(t(1, 2, 4), size=2, mode="area")),
    ("pixel_shuffle", lambda L, F, t: F.pixel_shuffle(t(1, 4, 2, 2), 2)),
    ("pixel_shuffle_unbatched", lambda L, F, t: F.pixel_shuffle(t(4, 2, 2), 1)),
    ("pixel_unshuffle", lambda L, F, t: F.pixel_unshuffle(t(1, 1, 4, 4), 2)),
    ("channel_shuffle", lambda L, F, t: F.channel_shuffle(t(1, 4, 2, 2), 2)),
    # attention: flash where torch's CPU dispatch takes it, else the math composition
    ("sdpa", lambda L, F, t: F.scaled_dot_product_attention(t(1, 2, 3, 4), t(1, 2, 3, 4), t(1, 2, 3, 4))),
    ("sdpa_causal", lambda L, F, t: F.scaled_dot_product_attention(t(1, 2, 2, 4), t(1, 2, 3, 4), t(1, 2, 3, 4),
                                                                   is_causal=True)),
    ("sdpa_bool_mask", lambda L, F, t: F.scaled_dot_product_attention(
        t(1, 2, 3, 4), t(1, 2, 3, 4), t(1, 2, 3, 4), attn_mask=t(3, 3, grad=False) > 0)),
    ("sdpa_mask_4d", lambda L, F, t: F.scaled_dot_product_attention(
        t(2, 2, 3, 4), t(2, 2, 3, 4), t(2, 2, 3, 4), attn_mask=t(2, 1, 1, 3, grad=False))),
    ("sdpa_mask_3d", lambda L, F, t: F.scaled_dot_product_attention(
        t(1, 2, 3, 4), t(1, 2, 3, 4), t(1, 2, 3, 4), attn_mask=t(2, 3, 3, grad=False))),
    ("sdpa_mask_needs_grad", lambda L, F, t: F.scaled_dot_product_attention(
        t(1, 2, 3, 4), t(1, 2, 3, 4), t(1, 2, 3, 4), attn_mask=t(3, 3))),
    ("sdpa_gqa", lambda L, F, t: F.scaled_dot_product_attention(t(1, 4, 3, 4), t(1, 2, 3, 4), t(1, 2, 3, 4),
                                                                enable_gqa=True)),
    ("sdpa_transposed", lambda L, F, t: F.scaled_dot_product_attention(
        t(1, 3, 2, 4).transpose(1, 2), t(1, 2, 3, 4), t(1, 2, 3, 4))),
    ("sdpa_strided_rows", lambda L, F, t: F.scaled_dot_product_attention(
        t(1, 2, 4, 3).transpose(2, 3), t(1, 2, 3, 4), t(1, 2, 3, 4))),
    ("sdpa_value_dim", lambda L, F, t: F.scaled_dot_product_attention(t(1, 2, 3, 4), t(1, 2, 3, 4), t(1, 2, 3, 5))),
    ("sdpa_broadcast_batch", lambda L, F, t: F.scaled_dot_product_attention(t(2, 2, 3, 4), t(1, 2, 3, 4),
                                                                            t(1, 2, 3, 4))),
    ("sdpa_dropout", lambda L, F, t: F.scaled_dot_product_attention(t(1, 2, 3, 4), t(1, 2, 3, 4), t(1, 2, 3, 4),
                                                                    dropout_p=0.5)),
    ("sdpa_3d", lambda L, F, t: F.scaled_dot_product_attention(t(2, 3, 4), t(2, 3, 4), t(2, 3, 4))),
    ("sdpa_5d", lambda L, F, t: F.scaled_dot_product_attention(t(1, 1, 2, 3, 4), t(1, 1, 2, 3, 4),
                                                               t(1, 1, 2, 3, 4))),
    ("sdpa_2d", lambda L, F, t: F.scaled_dot_product_attention(t(3, 4), t(3, 4), t(3, 4))),
    ("sdpa_2d_batched_value", lambda L, F, t: F.scaled_dot_product_attention(t(3, 4), t(3, 4), t(2, 3, 4))),
    ("sdpa_3d_bf16", lambda L, F, t: F.scaled_dot_product_attention(
        t(2, 3, 4, dtype="bfloat16"), t(2, 3, 4, dtype="bfloat16"), t(2, 3, 4, dtype="bfloat16"))),
    ("sdpa_bf16", lambda L, F, t: F.scaled_dot_product_attention(
        t(1, 2, 3, 4, dtype="bfloat16"), t(1, 2, 3, 4, dtype="bfloat16"), t(1, 2, 3, 4, dtype="bfloat16"))),
    ("sdpa_empty_keys", lambda L, F, t: F.scaled_dot_product_attention(t(1, 2, 3, 4), t(1, 2, 0, 4), t(1, 2, 0, 4))),
    ("sdpa_empty_queries", lambda L, F, t: F.scaled_dot_product_attention(t(2, 0, 4), t(2, 3, 4), t(2, 3, 4))),
    ("sdpa_zero_head_dim", lambda L, F, t: F.scaled_dot_product_attention(t(2, 3, 0), t(2, 3, 0), t(2, 3, 4))),
]


# paragrad's fused ops, named for torch's last op of what they fuse: (id, paragrad call, torch
# call), with P = paragrad.nn.functional
FUSED = [
    ("batch_norm_relu", lambda P, t: P.batch_norm_relu(t(4, 3, 2), None, None, training=True, residual=t(4, 3, 2)),
     lambda F, t: F.relu(F.batch_norm(t(4, 3, 2), None, None, training=True) + t(4, 3, 2))),
    ("residual_dropout", lambda P, t: P.residual_dropout(t(3, 4), t(3, 4), 0.5),
     lambda F, t: t(3, 4) + F.dropout(t(3, 4), 0.5)),
    ("layer_norm_cast", lambda P, t: P.layer_norm_cast(t(2, 4), (4,), t(4), t(4), dtype=pg.bfloat16),
     lambda F, t: F.layer_norm(t(2, 4), (4,), t(4), t(4)).to(torch.bfloat16)),
    *[(f"linear_act_{act}", lambda P, t, act=act: pg.ops.neural.linear.linear_act(t(2, 3), t(4, 3), t(4), act),
       lambda F, t, act=act: (F.relu if act == "relu" else lambda y: F.gelu(y, approximate="tanh"))(
           F.linear(t(2, 3), t(4, 3), t(4)))) for act in ("relu", "gelu_tanh")],
    ("mlp", lambda P, t: pg.ops.neural.linear.mlp(t(2, 2, 3), [(t(4, 3), t(4), "relu"), (t(2, 4), None, None)]),
     lambda F, t: F.linear(F.relu(F.linear(t(2, 2, 3), t(4, 3), t(4))), t(2, 4))),
]


@pytest.mark.parametrize("pg_call,torch_call", [pytest.param(p, t, id=n) for n, p, t in FUSED])
def test_fused_op_is_named_for_its_last_op(pg_call, torch_call):
    want = _name(torch_call(torch.nn.functional, _maker(torch)))
    got = pg_call(pg.nn.functional, _maker(pg)).grad_fn
    assert (type(got).__name__, got.name()) == (want, want)


def _module(L, name, *args, **kw):
    """The same layer on both libraries (its weights don't change its node names)."""
    return getattr(L.nn, name)(*args, **kw)


# (id, call(L, t)): layers, whose outputs' names come from several ops together
MODULE_ROWS = [
    *[(f"{mode}{kw}", lambda L, t, mode=mode, kw=kw: _module(L, mode, 3, 4, **kw)(t(5, 2, 3))[0])
      for mode in ("RNN", "GRU", "LSTM") for kw in ({}, {"num_layers": 2}, {"bidirectional": True})],
    ("LSTM_proj", lambda L, t: _module(L, "LSTM", 3, 4, proj_size=2)(t(5, 2, 3))[0]),
    ("LSTM_float64", lambda L, t: _module(L, "LSTM", 3, 4, dtype=L.float64)(t(5, 2, 3, dtype="float64"))[0]),
    ("RNN_relu", lambda L, t: _module(L, "RNN", 3, 4, nonlinearity="relu")(t(5, 2, 3))[0]),
    ("LSTM_h_n", lambda L, t: _module(L, "LSTM", 3, 4)(t(5, 2, 3))[1][0]),
    ("GRU_batch_first", lambda L, t: _module(L, "GRU", 3, 4, batch_first=True)(t(2, 5, 3))[0]),
    ("RNN_batch_first", lambda L, t: _module(L, "RNN", 3, 4, batch_first=True)(t(2, 5, 3))[0]),
    ("LSTM_batch_first", lambda L, t: _module(L, "LSTM", 3, 4, batch_first=True)(t(2, 5, 3))[0]),
    ("LSTM_unbatched", lambda L, t: _module(L, "LSTM", 3, 4)(t(5, 3))[0]),
    ("LSTMCell", lambda L, t: _module(L, "LSTMCell", 3, 4)(t(2, 3))[0]),
    ("GRUCell", lambda L, t: _module(L, "GRUCell", 3, 4)(t(2, 3))),
    ("RNNCell", lambda L, t: _module(L, "RNNCell", 3, 4)(t(2, 3))),
    ("Linear_ReLU", lambda L, t: L.nn.Sequential(L.nn.Linear(3, 4), L.nn.ReLU())(t(2, 3))),
    ("Linear_GELU_tanh", lambda L, t: L.nn.Sequential(L.nn.Linear(3, 4), L.nn.GELU(approximate="tanh"))(t(2, 3))),
    ("MLP", lambda L, t: L.nn.Sequential(L.nn.Linear(3, 4), L.nn.ReLU(), L.nn.Linear(4, 2))(t(2, 2, 3))),
    ("BatchNorm_ReLU", lambda L, t: L.nn.Sequential(L.nn.BatchNorm2d(2), L.nn.ReLU())(t(2, 2, 3, 3))),
    ("MultiheadAttention", lambda L, t: _module(L, "MultiheadAttention", 4, 2)(t(3, 2, 4), t(3, 2, 4), t(3, 2, 4))[0]),
    ("TransformerEncoderLayer", lambda L, t: _module(L, "TransformerEncoderLayer", 4, 2, 8, dropout=0.0)(
        t(3, 2, 4))),
]



NAMED_SINCE_2_13 = {"sdpa_empty_keys", "sdpa_empty_queries"}     # (older torch ends an empty attention in another node)


@pytest.mark.parametrize("call", [pytest.param(c, id=n, marks=needs_torch_2_13 if n in NAMED_SINCE_2_13 else ())
                                  for n, c in ROWS])
def test_grad_fn_name_matches_torch(call):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")          # (torch's and paragrad's deprecation notes)
        want = _name(call(torch, torch.nn.functional, _maker(torch)))
        got = call(pg, pg.nn.functional, _maker(pg)).grad_fn
    assert want is not None
    assert (type(got).__name__, got.name()) == (want, want)


@pytest.mark.parametrize("call", [pytest.param(c, id=n) for n, c in MODULE_ROWS])
def test_layer_output_grad_fn_name_matches_torch(call):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = _name(call(torch, _maker(torch)))
        got = call(pg, _maker(pg)).grad_fn
    assert want is not None
    assert (type(got).__name__, got.name()) == (want, want)
