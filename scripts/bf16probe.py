import numpy as np, paragrad as pg
x = pg.randn(4, 8, device="cuda").to(pg.bfloat16)
w = pg.randn(8, 3, device="cuda").to(pg.bfloat16)
for name, f in [("add", lambda: x + x), ("mul", lambda: x * 2), ("exp", lambda: x.exp()), ("sum", lambda: x.sum()),
                ("max", lambda: x.amax(-1)), ("matmul", lambda: x @ w), ("softmax", lambda: x.softmax(-1)),
                ("to f32", lambda: x.float()), ("repr", lambda: repr(x)[:30])]:
    try:
        r = f(); print("bf16", name, "ok", getattr(r, "dtype", r))
    except Exception as e:
        print("bf16", name, "FAIL", type(e).__name__, str(e)[:100])
