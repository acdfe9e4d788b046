"""The optional fast paths: fused kernels a backend may add to the primitives of base.py.

The op layer asks `backend.fast(name)` for the method `fast_<name>` and composes primitives
when it gets None: because the backend has no such method, or inside `fast_paths(False)`, or
when the method itself returns None to decline a case. A backend that defines none of them
still runs every op. `FastPaths` below documents each one as a real signature; no backend
inherits it (an inherited default would be found by the lookup and stop the composition).

Common conventions: buffers the op layer passes are of one float dtype unless said otherwise,
shapes are validated by the op layer, and "None declines" means the op then composes
primitives with nothing written.
"""
from __future__ import annotations

# Every fast path by the name the op layer asks for (`backend.fast(name)` looks up "fast_" + name).
FAST_PATHS = (
    "softmax", "softmax_backward", "log_softmax", "log_softmax_backward",
    "cross_entropy", "cross_entropy_backward", "embedding_backward", "pow_scalar", "roll",
    "layer_norm", "layer_norm_backward", "linear_bias", "linear_act", "linear_act_backward", "mlp", "mlp_backward",
    "relu_backward", "sigmoid_backward", "tanh_backward", "gelu", "gelu_backward",
    "dropout", "dropout_backward", "residual_dropout",
    "conv2d", "conv2d_backward", "conv_transpose2d", "max_pool2d", "max_pool2d_backward", "batch_norm", "batch_norm_backward",
    "scaled_dot_product_attention",
    "scaled_dot_product_attention_backward", "adam_step", "sgd_step", "unscale_grads",
    "sum_of_squares",
    # the decompositions: optional primitives with nothing to compose (base.py declares them)
    "linalg_inv", "linalg_solve", "linalg_det", "linalg_slogdet", "linalg_cholesky", "linalg_qr",
    "linalg_eigh", "linalg_svd",
    # buf[key] for a key of ints and slices, as a view, or None (ops/indexing/subscripts.py's planner)
    "basic_view",
    # the one buffer that split's gradients are consecutive views of, or None (views.py's SplitBackward0)
    "joined_view",
    # several buffers of one dtype cast to another in one call (ops/conversion.py's cast_many)
    "cast_many",
    # a buffer's views at each index along an axis (views.py's unbind: iterating a tensor)
    "unbind",
    # one time step of a recurrent layer's gates (ops/neural/recurrent.py documents the arguments)
    "lstm_cell_forward", "lstm_cell_backward", "gru_cell_forward", "gru_cell_backward",
    "rnn_cell_forward", "rnn_cell_backward",
    # a whole recurrent stack in one call (ops/neural/recurrent_stack.py documents the arguments)
    "rnn", "rnn_backward",
)

_fast_paths_enabled = [True]


class fast_paths:
    """`with fast_paths(False):` makes every op compose primitives (used to test that each
    fast path agrees with the composition it replaces)."""

    def __init__(self, enabled: bool):
        self.enabled = enabled

    def __enter__(self):
        self.prev = _fast_paths_enabled[0]
        _fast_paths_enabled[0] = self.enabled

    def __exit__(self, *exc):
        _fast_paths_enabled[0] = self.prev


class FastPaths:
    """The signatures of the fast paths (documentation: no backend inherits this class).
    A backend implements any subset as methods `fast_<name>` with these arguments."""

    # ---- softmax family (ops/neural/softmax.py) --------------------------------------------------
    def fast_softmax(self, x, axis):
        """-> softmax(x) along axis."""

    def fast_softmax_backward(self, y, g, axis):
        """-> dx = y * (g - sum(g * y)) along axis, y the softmax output."""

    def fast_log_softmax(self, x, axis):
        """-> log_softmax(x) along axis."""

    def fast_log_softmax_backward(self, y, g, axis):
        """-> dx = g - exp(y) * sum(g) along axis, y the log-softmax output."""

    # ---- cross_entropy (ops/neural/softmax.py; logits (N, C), int64 targets (N,), mean a bool) ---
    def fast_cross_entropy(self, x, target, ignore_index, mean, out_dtype=None):
        """-> (loss () of out_dtype (default x's dtype): the sum over counted rows, or that sum /
        count for a mean; count () of counted rows, any float dtype; lse (N,), the rows'
        logsumexp). Half logits are computed in float32, as if cast first. Targets arrive checked
        (ops/neural/softmax.py); an out-of-range one may give NaN."""

    def fast_cross_entropy_backward(self, x, target, lse, g, count, mean, ignore_index):
        """-> dx = (softmax(x) - onehot(target)) * valid * (g / max(count, 1) if mean else g) in
        x's dtype, g and count the 0-d buffers (g of the loss's dtype: x's, or float32)."""

    # ---- elementwise (ops/elementwise/unary.py, power.py) ----------------------------------------
    def fast_pow_scalar(self, x, exponent):
        """-> x ** exponent for a float buffer and an exponent the op layer would compose from
        multiplies (2, 3, 4, -2, ...), rounded as those multiplies ((x*x)*x for 3, 1/(x*x)
        for -2); None where the backend has no kernel for it."""

    def fast_relu_backward(self, g, y):
        """-> dx = 0 where y <= 0 else g (torch's threshold_backward), g and y of one shape
        and float dtype."""

    def fast_sigmoid_backward(self, g, y):
        """-> dx from the output y, rounded as ops/elementwise/unary.py's buffer formula; None where the
        kernel can't take the buffers."""

    def fast_tanh_backward(self, g, y):
        """-> dx from the output y, rounded as ops/elementwise/unary.py's buffer formula; None where the
        kernel can't take the buffers."""

    # ---- movement and indexing (ops/movement/, ops/neural/embedding.py, ops/indexing/) -----------
    def fast_roll(self, x, shift, axis):
        """-> a new buffer, x rolled by 0 < shift < x.shape[axis] along axis; None where the
        backend has no kernel for x's layout."""

    def fast_embedding_backward(self, idx, g, num_weights):
        """-> dw (num_weights, D): the rows of g (K, D) summed per id of idx (K,) (int64,
        checked by the forward), zeros (+0.) where no id points; g C-contiguous, dw of g's
        dtype; None where the backend has no kernel for g's dtype."""

    def fast_basic_view(self, x, key):
        """-> x[key] as a view for a key of ints and slices (torch's basic indexing), or None
        for anything else (the op layer's planner then gives torch's results and errors)."""

    def fast_joined_view(self, pieces, axis):
        """-> the buffer that `pieces` are consecutive slices of along axis, in order, as a view
        of the memory they share (no copy), or None: when they are not views of one allocation
        laid out that way."""

    # ---- dtype conversion (ops/conversion.py) -----------------------------------------------------
    def fast_cast_many(self, xs, dtype):
        """-> [x.astype(dtype) for x in xs], rounded as the backend's cast, by one call, or None.
        xs are buffers of one dtype on one device."""

    def fast_unbind(self, x, axis):
        """-> a list of x's views at each index along axis, that axis dropped."""

    # ---- layer_norm (ops/neural/layer_norm.py) ---------------------------------------------------
    def fast_layer_norm(self, x, w, b, n_norm_dims, eps, out_dtype=None):
        """-> (y, mean, rstd). x is C-contiguous, non-empty, of one float dtype; w and b are
        C-contiguous of x's dtype and shape x.shape[-n_norm_dims:], or None. Normalizes the
        rows of the (M, N) view, N = prod(x.shape[-n_norm_dims:]); eps a Python float;
        biased variance. y: x's shape and dtype, or out_dtype (a paragrad dtype: y then
        rounded to it once, as a cast of the x-dtype output would be). mean and rstd = 1/sqrt(var + eps): shape
        x.shape[:-n_norm_dims] + (1,) * n_norm_dims, float32 for float16/bfloat16 inputs (all
        arithmetic in float32) else x's dtype; the composite uses exactly this layout, so the
        backward may get them from either forward."""

    def fast_layer_norm_backward(self, g, x, w, mean, rstd, n_norm_dims, need_dw, need_db, acc=None):
        """-> (dx, dw or None, db or None): dx always, x's shape and dtype; dw, db w's shape
        and dtype, None unless asked for. g C-contiguous of x's shape, of x's dtype or of the
        out_dtype the forward wrote (the gradient of that output). acc: None, or a buffer
        of x's shape and dtype (any strides) that dx is added into, in place (dx is then acc):
        the gradient of x's other use, summed in the same pass."""

    # ---- batch_norm (ops/neural/batch_norm.py) ---------------------------------------------------
    def fast_batch_norm(self, x, w, b, rm, rv, training, momentum, eps, residual=None, relu=False):
        """-> (y, mean, rstd) or None. x (N, C, *) C-contiguous (or channels-last where the
        backend takes_channels_last; y then in x's layout), non-empty, of a float dtype;
        w, b (C,) of x's dtype (or float32 for a float16/bfloat16 x) or None; rm, rv the (C,) running statistics (any float dtype,
        possibly non-contiguous) or None (only in training). Training normalizes with the
        batch statistics (biased variance) and, with rm/rv given, updates them in place:
        r = r * (1 - momentum) + stat * momentum, the unbiased variance for rv; eval uses
        rm/rv. mean and rstd = 1/sqrt(var + eps): shape (1, C, 1, ...), float32 for
        float16/bfloat16 inputs else x's dtype, the composite's layout. A forward that
        declines has not touched rm/rv. With residual (x's shape and dtype) and/or relu, y is
        relu(normalized + residual), the normalized value rounded to x's dtype before the
        add (a ResNet block's batch_norm, skip add and ReLU in one pass)."""

    def fast_batch_norm_backward(self, g, x, w, mean, rstd, training, need_dx, need_dw, need_db):
        """-> (dx, dw, db), each None unless needed, or None to decline. Training:
        dx = w * rstd * (g - mean(g) - xhat * mean(g * xhat)), means over every dim but 1;
        eval: dx = w * rstd * g; dw = sum of g * xhat, db = sum of g per channel. dx in x's
        dtype; dw, db in the compute dtype (float32 for float16/bfloat16 x; the op layer casts
        them to the parameters' dtype)."""

    # ---- linear layers (ops/neural/linear.py; act 'relu' or 'gelu_tanh') -------------------------
    def fast_linear_bias(self, x, w, b):
        """-> y = x @ w.T + b with the bias added inside the GEMM, x (..., in), w (out, in),
        b (out,); or None to decline (linear then adds the bias after its product)."""

    def fast_linear_act(self, x, w, b, act):
        """-> (y, aux): y = act(x @ w.T + b), x (..., in), w (out, in), b (out,) or None; aux
        is what the backward reads (y for relu, the pre-activation for gelu)."""

    def fast_linear_act_backward(self, g, x, w, aux, act, need_dx, need_dw, need_db):
        """-> (dx, dw, db), each None unless needed."""

    def fast_mlp(self, x, layers):
        """A chain of linear layers: layers = [(w, b or None, act)], act None, 'relu' or
        'gelu_tanh'; x (..., in). -> (y, saved) where saved is whatever fast_mlp_backward
        needs (opaque to the op layer), or None to decline (the op composes linear_act /
        linear)."""

    def fast_mlp_backward(self, g, layers, saved, need_dx, needs):
        """Gradients of fast_mlp from its output gradient g and its saved state; needs is
        [(need_dw, need_db)] per layer. -> (dx or None, [(dw or None, db or None) per
        layer])."""

    # ---- convolution and pooling (ops/neural/conv.py, ops/neural/pool.py) ------------------------
    def fast_conv2d(self, x, w, b, stride, padding, dilation, groups):
        """-> y (N, C_out, Ho, Wo) of x's dtype, or None to decline. x (N, C_in, H, W),
        w (C_out, C_in/groups, kH, kW), b (C_out,) or None, all of one dtype; x and w
        C-contiguous, or channels-last as they are where the backend says takes_channels_last
        (then y is best channels-last too);
        stride, dilation (h, w) pairs >= 1; padding ((top, bottom), (left, right)) >= 0
        (asymmetric for padding='same'); groups divides C_in and C_out. The op layer has
        validated the geometry and makes unbatched input 4-D."""

    def fast_conv2d_backward(self, g, x, w, stride, padding, dilation, groups, need_dx, need_dw,
                             need_db):
        """-> (dx, dw, db): x's, w's and (C_out,) shapes in x's dtype, each None unless needed,
        or None to decline; g (N, C_out, Ho, Wo); g, x and w as the forward's x and w. It may exist without the
        forward and the forward without it."""

    def fast_conv_transpose2d(self, x, w, stride, padding, dilation, groups, out_hw):
        """-> y (N, C_out, Ho, Wo) or None: conv_transpose2d of x (N, C_in, H, W) with w (C_in,
        C_out/groups, kH, kW), which is conv2d's input gradient for the output gradient x and
        weight w, to an input of size out_hw = (Ho, Wo) (output_padding included); stride,
        padding ((top, bottom), (left, right)) and dilation as conv2d's. No bias (the op adds
        it). The backward takes conv2d and conv2d_backward's weight gradient."""

    def fast_max_pool2d(self, x, k, s, p, d, ho, wo):
        """-> (y, idx) (N, C, Ho, Wo), idx int64 flat in H*W (the first maximum of the window's
        in-bounds taps; a NaN always takes over), or None. x (N, C, H, W); k, s, p, d (h, w)
        int pairs validated by the op; ho, wo the output size."""

    def fast_max_pool2d_backward(self, gy, idx, h, w, k, s, p, d):
        """-> dx (N, C, H, W) or None."""

    # ---- dropout (nn/functional/dropout.py) --------------------------------------------------------
    def fast_dropout(self, x, p, rng_state):
        """-> (y, mask) or None, for 0 < p < 1: each element kept with probability 1 - p and
        scaled by 1 / (1 - p), drawn from rng_state (a generator's device-side state, which the
        call advances past its draws) as the backend's bernoulli draw of x's shape would be, so
        the kept elements are those the composition keeps; mask (x's shape, any integer or
        bool dtype) marks them for the backward."""

    def fast_dropout_backward(self, g, mask, p, dtype=None):
        """-> dx = g * mask / (1 - p) of g's shape, in `dtype` (a paragrad dtype; None: g's),
        or None. A narrower dtype than g's rounds g to it first (the cast of a float32
        residual stream's gradient to a half-precision branch, then dropout's backward)."""

    def fast_residual_dropout(self, res, y, p, rng_state):
        """-> (res + dropout(y), mask) in res's dtype, or None: the residual add and the
        dropout of the branch before it in one pass, 0 <= p < 1. y of res's shape and of its
        dtype or a narrower float one (a bf16 branch of a float32 stream: no separate cast);
        the dropped-and-scaled value is rounded to y's dtype before the add. The draws and
        mask are those of fast_dropout(y, p, rng_state); p == 0 draws nothing (mask None)."""

    # ---- gelu (ops/elementwise/unary.py) ---------------------------------------------------------
    def fast_gelu(self, x, approximate):
        """-> gelu(x) of x's shape and dtype, or None. approximate "none" (erf) or "tanh"; a
        float16/bfloat16 x is computed in float32 and rounded once, as PyTorch's kernel."""

    def fast_gelu_backward(self, g, x, approximate):
        """-> dx = g * gelu'(x), or None. g and x of one shape and dtype."""

    # ---- attention (ops/neural/attention.py) -----------------------------------------------------
    def fast_scaled_dot_product_attention(self, q, k, v, scale, is_causal, dropout_p=0.0, rng_state=None):
        """-> (out, stats, rng) or None. Used only with no attn_mask and q, k, v 4-D with equal
        (B, H) (no GQA, no batch broadcasting), L, S, E > 0. q (B, H, L, E), k (B, H, S, E),
        v (B, H, S, Ev): one float dtype, any strides (copy what the kernel can't read; the
        heads of a fused projection usually lie interleaved); scale a Python float; is_causal: key j
        visible to query i iff j <= i (top-left). dropout_p > 0: the attention weights are
        dropped inside the kernel with numbers drawn from rng_state (a generator's device-side
        state, which the call advances past them); rng is what the backward needs to drop the
        same weights (None without dropout). out (B, H, L, Ev), any strides; stats the per-row
        logsumexp of the scaled scores, (B, H, L, 1) float32."""

    def fast_scaled_dot_product_attention_backward(self, q, k, v, out, dout, stats, scale,
                                                   is_causal, dropout_p=0.0, rng=None):
        """-> (dq, dk, dv) of the inputs' shapes and dtype, or None; q, k, v, out and dout of
        any strides. stats (and rng, with
        dropout) come from the fast forward; without dropout stats may come from the composite
        forward when the backend has this backward (same layout)."""

    # ---- optimizers (optim/adam.py, optim/sgd.py) ------------------------------------------------
    def fast_adam_step(self, ws, gs, ms, vs, vmaxs, steps, *, lr, beta1, beta2, eps, weight_decay,
                       decoupled, amsgrad, maximize, found_inf=None):
        """Update a whole param group in place and return True, or return False having done
        nothing (the optimizer composes primitives). lr is a float64 0-d buffer and steps
        float32 0-d buffers (the counts before this step, which the update advances by one):
        read on the device, so a captured step replays. found_inf: None, or GradScaler's
        float32 0-d flag: where it is nonzero nothing changes (step counts included), decided
        on the device."""

    def fast_sgd_step(self, ws, gs, bufs, firsts, *, lr, momentum, dampening, weight_decay,
                      nesterov, maximize, found_inf=None):
        """As fast_adam_step, for SGD (momentum buffers bufs, firsts: whether each is new)."""

    # ---- GradScaler (amp/grad_scaler.py) ---------------------------------------------------------
    def fast_unscale_grads(self, grads, found_inf, inv_scale):
        """Every buffer of grads times inv_scale (float32 0-d) in place; found_inf (float32 0-d)
        set to 1 if any element is inf or NaN. -> True, or False having done nothing."""

    # ---- gradient clipping (nn/utils/clip_grad.py) -----------------------------------------------
    def fast_sum_of_squares(self, bufs):
        """-> the sum of the squares of every element of every buffer (one float dtype, one
        device), as a 0-d buffer of that dtype, or None."""

    # ---- recurrent layers (ops/neural/recurrent.py documents every buffer) -----------------------
    def fast_lstm_cell_forward(self, gi, hh, c_prev, act, c, tanh_c, h):
        """One LSTM step's gates into the given buffers -> True, or False having written
        nothing."""

    def fast_lstm_cell_backward(self, dh, dc, act, c_prev, tanh_c, dgates, dc_prev):
        """The LSTM step's gate gradients into dgates and dc_prev -> True, or False."""

    def fast_gru_cell_forward(self, gi, hh, b_hn, h_prev, act, ghn, h):
        """One GRU step's gates into the given buffers -> True, or False."""

    def fast_gru_cell_backward(self, dh, h_prev, act, ghn, dgi, dgh, dh_prev):
        """The GRU step's gate gradients into dgi, dgh and dh_prev -> True, or False."""

    def fast_rnn_cell_forward(self, gi, hh, h, nonlinearity):
        """h = nonlinearity(gi + hh) ('tanh' or 'relu') -> True, or False."""

    def fast_rnn_cell_backward(self, dh, h, dpre, nonlinearity):
        """dpre = dh * (1 - h^2) (tanh) or dh where h > 0 (relu) -> True, or False."""

    def fast_rnn(self, mode, x, hx, cx, weights, *, hidden_size, proj_size, num_layers, bidirectional,
                 dropout, training, seq_lengths, need_backward, dropout_seed):
        """Every layer, direction and step of nn.RNN/LSTM/GRU in one call -> (y, hy, cy, ctx), or
        None to decline (the module then composes per layer)."""

    def fast_rnn_backward(self, ctx, dy, dhy, dcy, need_dweights):
        """The whole stack's gradients from the forward's ctx -> (dx, dhx, dcx, dweights)."""
