import numpy as np, torch, paragrad as pg
from paragrad.backends.base import fast_paths
print("torch", torch.__version__)
rng = np.random.default_rng(0)
for shape, ns in [((37, 1000), (1000,)), ((3, 5, 300), (5, 300)), ((4096, 768), (768,))]:
    for dtype in ("float32", "float64", "float16"):
        a = (rng.standard_normal(shape) * 3 + 5).astype(dtype)
        w = rng.standard_normal(ns).astype(dtype); b = rng.standard_normal(ns).astype(dtype)
        c = rng.standard_normal(shape).astype(dtype)
        tt = [torch.tensor(v, requires_grad=True) for v in (a, w, b)]
        yt = torch.nn.functional.layer_norm(tt[0].float() if dtype == "float16" else tt[0], ns,
                                            *(t.float() if dtype == "float16" else t for t in tt[1:]))
        (yt * torch.tensor(c).to(yt.dtype)).sum().backward()
        for fast in (True, False):
            with fast_paths(fast):
                pt = [pg.tensor(v, device="cuda", requires_grad=True) for v in (a, w, b)]
                y = pg.layer_norm(pt[0], ns, pt[1], pt[2])
                (y * pg.tensor(c, device="cuda")).sum().backward()
            errs = [float(np.abs(p.detach().cpu().numpy().astype(np.float64) - t.detach().double().numpy()).max()
                          / (np.abs(t.detach().double().numpy()).max() + 1e-30))
                    for p, t in zip([y] + [q.grad for q in pt], [yt] + [q.grad for q in tt])]
            print(shape, dtype, "fast" if fast else "comp", " ".join(f"{e:.1e}" for e in errs))
