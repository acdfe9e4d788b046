"""GPT-2 124M training on 1, 2 and 4 GPUs: paragrad (the whole step under pg.jit, DDP over nccl)
beside PyTorch at its strongest for this model (DistributedDataParallel, eager and
torch.compile, fused AdamW, bf16 autocast), in one run: tokens/s, scaling efficiency and MFU.

    python bench/gpt2.py [--gpus 1,2,4] [--steps 50] [--windows 3] [--json PATH]
    python bench/gpt2.py --device cpu          # smoke test: a tiny model on 1 and 2 CPU ranks

The model is nanoGPT's config/train_gpt2.py one (12 layers, 12 heads, 768 wide, block 1024,
vocabulary 50304, no biases, dropout 0) on random tokens, batch 16 per GPU. This is
bench/ddp_gpu.py's model "gpt2" with its machinery (same weights in both frameworks, the timing,
the tables, the MFU line): `python bench/ddp_gpu.py --models gpt2 --frameworks torch,torch.compile`
runs the same. Other flags pass through to it.
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import ddp_gpu  # noqa: E402 - after the path


def main(argv):
    defaults = ["--models", "gpt2", "--frameworks", "torch,torch.compile", "--gpus", "1,2,4"]
    given = {a.split("=")[0] for a in argv if a.startswith("--")}
    for flag, value in zip(defaults[::2], defaults[1::2]):
        if flag in given:
            continue
        argv = [flag, value, *argv]
    sys.argv = [str(Path(ddp_gpu.__file__)), *argv]
    ddp_gpu.main()


if __name__ == "__main__":
    main(sys.argv[1:])
