"""Probe: cuDNN frontend conv fprop/dgrad/wgrad (float32 NCHW and NHWC-strided) and SDPA
fwd/bwd (bf16) on CuPy memory, against PyTorch on the same GPU."""
import time
import cupy as cp, numpy as np, torch, cudnn
print("cudnn backend", cudnn.backend_version())
h = cudnn.create_handle()
cudnn.set_stream(h, cp.cuda.get_current_stream().ptr)
DT = {np.dtype(np.float32): cudnn.data_type.FLOAT}

def conv_graphs(xs, ws, pad, stride, dil, nhwc):
    N, C, H, W = xs; K, _, R, S = ws
    def strides(shape):
        n, c, h, w = shape
        return [c * h * w, 1, w * c, c] if nhwc else [c * h * w, h * w, w, 1]
    g = cudnn.pygraph(io_data_type=cudnn.data_type.FLOAT, compute_data_type=cudnn.data_type.FLOAT, handle=h)
    X = g.tensor(name="X", dim=list(xs), stride=strides(xs), data_type=cudnn.data_type.FLOAT)
    Wt = g.tensor(name="W", dim=list(ws), stride=strides(ws), data_type=cudnn.data_type.FLOAT)
    Y = g.conv_fprop(image=X, weight=Wt, padding=pad, stride=stride, dilation=dil, compute_data_type=cudnn.data_type.FLOAT)
    Y.set_output(True).set_data_type(cudnn.data_type.FLOAT)
    g.build([cudnn.heur_mode.A])
    return g, X, Wt, Y

try:
    for nhwc in (False, True):
        xs, ws = (64, 32, 32, 32), (64, 32, 3, 3)
        g, X, Wt, Y = conv_graphs(xs, ws, [1, 1], [1, 1], [1, 1], nhwc)
        x = cp.random.randn(*xs, dtype=cp.float32); w = cp.random.randn(*ws, dtype=cp.float32)
        if nhwc:
            x = cp.ascontiguousarray(x.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)
            w = cp.ascontiguousarray(w.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)
        ydim = Y.get_dim(); print("Y dim", ydim, "stride", Y.get_stride())
        y = cp.empty(int(np.prod(ydim)), dtype=cp.float32)
        ws_buf = cp.empty(max(g.get_workspace_size(), 1), dtype=cp.uint8)
        g.execute({X: x.data.ptr, Wt: w.data.ptr, Y: y.data.ptr}, ws_buf.data.ptr, handle=h)
        cp.cuda.Device().synchronize()
        ys = cp.lib.stride_tricks.as_strided(y, shape=tuple(ydim), strides=tuple(s * 4 for s in Y.get_stride()))
        ref = torch.nn.functional.conv2d(torch.as_tensor(cp.asnumpy(x)).cuda(), torch.as_tensor(cp.asnumpy(w)).cuda(), padding=1)
        print("conv fprop nhwc" if nhwc else "conv fprop nchw", "err", float(np.abs(cp.asnumpy(ys) - ref.cpu().numpy()).max()))
        t = time.perf_counter()
        for _ in range(50):
            g.execute({X: x.data.ptr, Wt: w.data.ptr, Y: y.data.ptr}, ws_buf.data.ptr, handle=h)
        cp.cuda.Device().synchronize(); print("  fprop us/call (host incl.)", (time.perf_counter() - t) / 50 * 1e6)
except Exception as e:
    import traceback; traceback.print_exc()

try:
    B, H, L, D = 8, 6, 256, 64
    q, k, v = (torch.randn(B, H, L, D, device="cuda", dtype=torch.bfloat16) for _ in range(3))
    g = cudnn.pygraph(io_data_type=cudnn.data_type.BFLOAT16, intermediate_data_type=cudnn.data_type.FLOAT,
                      compute_data_type=cudnn.data_type.FLOAT, handle=h)
    dims, strides = [B, H, L, D], [H * L * D, L * D, D, 1]
    Q = g.tensor(name="q", dim=dims, stride=strides, data_type=cudnn.data_type.BFLOAT16)
    K = g.tensor(name="k", dim=dims, stride=strides, data_type=cudnn.data_type.BFLOAT16)
    V = g.tensor(name="v", dim=dims, stride=strides, data_type=cudnn.data_type.BFLOAT16)
    O, Stats = g.sdpa(q=Q, k=K, v=V, generate_stats=True, attn_scale=1 / 8, use_causal_mask=True, name="sdpa")
    O.set_output(True).set_dim(dims).set_stride(strides).set_data_type(cudnn.data_type.BFLOAT16)
    Stats.set_output(True).set_data_type(cudnn.data_type.FLOAT)
    g.build([cudnn.heur_mode.A])
    o = torch.empty_like(q); st = torch.empty(B, H, L, 1, device="cuda", dtype=torch.float32)
    wsb = torch.empty(max(g.get_workspace_size(), 1), device="cuda", dtype=torch.uint8)
    cudnn.set_stream(h, torch.cuda.current_stream().cuda_stream)
    g.execute({Q: q.data_ptr(), K: k.data_ptr(), V: v.data_ptr(), O: o.data_ptr(), Stats: st.data_ptr()}, wsb.data_ptr(), handle=h)
    torch.cuda.synchronize()
    ref = torch.nn.functional.scaled_dot_product_attention(q.float(), k.float(), v.float(), is_causal=True)
    print("sdpa fwd rel err", float((o.float() - ref).norm() / ref.norm()), "stats shape", Stats.get_dim())
except Exception:
    import traceback; traceback.print_exc()
