"""ResNet-18 training throughput on one GPU: paragrad (the step under pg.jit) vs PyTorch eager,
both with cudnn.benchmark on (pg.backends.cudnn.benchmark, torch.backends.cudnn.benchmark),
side by side in one process run.

    python bench/resnet.py [--steps 30] [--cases 32x256,32x256-cifar,224x64] [--precisions fp32,tf32,bf16] [--json PATH]

Cases: 32x32 images at batch 256 with torchvision's resnet18 as it is (the ImageNet stem: 7x7
stride-2 conv and max pool, so the blocks see 8x8 down to 1x1; 10 classes), the same images with
the CIFAR stem (3x3 first conv, no max pool, so the blocks see 32x32 down to 4x4 and the step
does 16x the arithmetic), and 224x224 at batch 64 (the ImageNet stem, 1000 classes). Precisions: float32 with TF32 off, and
TF32 (paragrad: pg.backends.cuda.matmul.allow_tf32, which covers GEMMs and convolutions;
PyTorch: torch.backends.cuda.matmul.allow_tf32 and torch.backends.cudnn.allow_tf32), and bf16:
bfloat16 autocast over the forward and the loss (float32 weights and SGD on them), model and
images channels-last in both frameworks (`.to(memory_format=channels_last)`). Both
frameworks train the same architecture (torchvision's layout; the PyTorch model here is a copy
of torchvision's resnet18, which the GPU machines don't have) with SGD (lr 0.1, momentum 0.9,
weight decay 5e-4) and cross-entropy, on random images and labels already on the device (a
fixed set of 4 batches, cycled). A training step is forward, backward and the optimizer step in
train mode (BatchNorm batch statistics and running-statistics updates included); paragrad
passes each batch to the jitted step, which copies it into the graph's inputs. Each number: 5
warm-up steps (compiles, cuDNN plans and autotuning, the capture), then --steps timed steps
between two synchronizations; images/s = steps * batch / seconds.
"""
from __future__ import annotations

import argparse
import json
import sys

import numpy as np

from common import per_second, print_header

WARMUP = 5
# name: (image size, batch, stem, classes)
CASES = {"32x256": (32, 256, "imagenet", 10), "32x256-cifar": (32, 256, "cifar", 10),
         "224x64": (224, 64, "imagenet", 1000)}


def random_batches(size, batch, classes, k=4, seed=0):
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal((batch, 3, size, size)).astype(np.float32),
             rng.integers(0, classes, batch).astype(np.int64)) for _ in range(k)]


def paragrad_rate(case, batch, precision, steps, device):
    import paragrad as pg
    import paragrad.nn.functional as F
    from paragrad.models import resnet18
    size, _, stem, classes = CASES[case]
    pg.backends.cuda.matmul.allow_tf32 = precision == "tf32"
    pg.backends.cudnn.benchmark = True       # time every cuDNN plan once (in the warm-up steps)
    bf16 = precision == "bf16"
    layout = pg.channels_last if bf16 else pg.contiguous_format
    try:
        pg.manual_seed(0)
        model = resnet18(num_classes=classes, stem=stem).to(device, memory_format=layout)
        opt = pg.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=5e-4)
        data = [(pg.tensor(x, device=device).contiguous(memory_format=layout), pg.tensor(y, device=device))
                for x, y in random_batches(size, batch, classes)]

        @pg.jit
        def train_step(x, y):
            with pg.autocast(device, dtype=pg.bfloat16, enabled=bf16):
                loss = F.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            return loss
        sync = pg.cuda.synchronize if device == "cuda" else (lambda: None)
        return per_second(lambda i: train_step(*data[i % len(data)]), sync, batch, steps, WARMUP)
    finally:
        pg.backends.cuda.matmul.allow_tf32 = False
        pg.backends.cudnn.benchmark = False


def torch_resnet18(num_classes, stem):
    """torchvision's resnet18 (BasicBlock, [2, 2, 2, 2]) with the CIFAR stem option."""
    from torch import nn

    class Block(nn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(cout)
            self.relu = nn.ReLU(inplace=True)
            self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(cout)
            self.downsample = None if stride == 1 and cin == cout else nn.Sequential(
                nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

        def forward(self, x):
            identity = x if self.downsample is None else self.downsample(x)
            out = self.relu(self.bn1(self.conv1(x)))
            return self.relu(self.bn2(self.conv2(out)) + identity)

    layers = [nn.Conv2d(3, 64, 7, 2, 3, bias=False) if stem == "imagenet" else nn.Conv2d(3, 64, 3, 1, 1, bias=False),
              nn.BatchNorm2d(64), nn.ReLU(inplace=True)]
    if stem == "imagenet":
        layers.append(nn.MaxPool2d(3, 2, 1))
    cin = 64
    for cout, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
        layers += [Block(cin, cout, stride), Block(cout, cout, 1)]
        cin = cout
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(512, num_classes)]
    return nn.Sequential(*layers)


def torch_rate(case, batch, precision, steps, device):
    import torch
    import torch.nn.functional as F
    size, _, stem, classes = CASES[case]
    torch.backends.cudnn.benchmark = True
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = precision == "tf32"
    bf16 = precision == "bf16"
    layout = torch.channels_last if bf16 else torch.contiguous_format
    torch.manual_seed(0)
    model = torch_resnet18(classes, stem).to(device, memory_format=layout)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=5e-4)
    data = [(torch.tensor(x, device=device).contiguous(memory_format=layout), torch.tensor(y, device=device))
            for x, y in random_batches(size, batch, classes)]

    def step(i):
        x, y = data[i % len(data)]
        with torch.autocast(device, dtype=torch.bfloat16, enabled=bf16):
            loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    return per_second(step, sync, batch, steps, WARMUP)


def measure(fn, *args):
    """images/s, or the error in one line: one failing row must not end the run."""
    try:
        return fn(*args), ""
    except Exception as e:  # noqa: BLE001 - reported in the table
        return None, f"{type(e).__name__}: {e}".split("\n")[0][:120]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--steps", type=int, default=30, help="timed steps per measurement")
    p.add_argument("--cases", default=",".join(CASES), help=f"comma separated, of {', '.join(CASES)}")
    p.add_argument("--precisions", default="fp32,tf32,bf16", help="comma separated, of fp32, tf32, bf16")
    p.add_argument("--batch", type=int, default=None, help="override every case's batch size")
    p.add_argument("--json", default=None, help="also write the numbers to this file")
    p.add_argument("--device", default="cuda", choices=("cuda", "cpu"), help=argparse.SUPPRESS)  # CPU smoke test
    args = p.parse_args()
    cases = [c for c in args.cases.split(",") if c]
    precisions = [c for c in args.precisions.split(",") if c]
    if bad := [c for c in cases if c not in CASES] + [c for c in precisions if c not in ("fp32", "tf32", "bf16")]:
        p.error(f"unknown case or precision: {', '.join(bad)}")
    import torch
    if args.device == "cuda" and not torch.cuda.is_available():
        sys.exit("bench/resnet.py needs a CUDA GPU (torch.cuda.is_available() is False); CPU smoke "
                 "test: python bench/resnet.py --device cpu --cases 32x256 --precisions fp32 --batch 2 --steps 1")
    print_header(args.device)
    print(f"\nResNet-18 training, images/s (SGD momentum 0.9, {args.steps} timed steps after {WARMUP} "
          f"warm-up ones); ratio = paragrad jit / torch eager (>1 = paragrad faster)")
    print(f"{'case':24s} {'precision':9s} {'paragrad jit':>13s} {'torch eager':>12s} {'ratio':>6s}")
    rows = []
    for case in cases:
        for prec in precisions:
            size, batch = CASES[case][0], args.batch or CASES[case][1]
            pg_rate, pg_err = measure(paragrad_rate, case, batch, prec, args.steps, args.device)
            t_rate, t_err = measure(torch_rate, case, batch, prec, args.steps, args.device)
            label = f"{size}x{size} b{batch} {CASES[case][2]}"
            cells = [f"{r:,.0f}" if r else "failed" for r in (pg_rate, t_rate)]
            ratio = f"{pg_rate / t_rate:6.2f}" if pg_rate and t_rate else f"{'-':>6s}"
            print(f"{label:24s} {prec:9s} {cells[0]:>13s} {cells[1]:>12s} {ratio}", flush=True)
            for who, err in (("paragrad", pg_err), ("torch", t_err)):
                if err:
                    print(f"  {who} failed: {err}")
            rows.append({"case": case, "precision": prec, "paragrad jit": pg_rate, "torch eager": t_rate,
                         "errors": [e for e in (pg_err, t_err) if e]})
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"command": " ".join(sys.argv), "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
