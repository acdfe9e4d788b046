"""Run pytorch/examples' MNIST scripts, mnist/main.py and vae/main.py (`python
mnist_same_draws.py SCRIPT ARGS...`, or under `paragrad run`), so that torch and paragrad start
from the same weights and compute the same steps: Conv2d's and Linear's initialization, the
shuffled batch order and a VAE's noise are drawn from NumPy (numpy_draws.py, which then runs the
script) and dropout is off (the frameworks' random streams differ). The losses then differ by
float32 rounding alone.

Real torch has no torchvision here: under torch the script gets a stand-in written with torch and
NumPy alone (the IDX files read by their fixed MNIST headers, ToTensor as
`from_numpy(a).float().div(255).unsqueeze(0)`, Normalize as `(x - mean) / std`, save_image
writing nothing), the reference for paragrad.vision. Under paragrad run, `import torchvision` is
answered by paragrad.vision."""
import gzip
import runpy
import sys
import types
from pathlib import Path

import numpy as np
import torch

def _torchvision_for_torch():
    def idx(path, header):
        return np.frombuffer(gzip.decompress(Path(path).read_bytes()), np.uint8, offset=header)

    class MNIST(torch.utils.data.Dataset):
        def __init__(self, root, train=True, transform=None, download=False):
            raw, split = Path(root) / "MNIST" / "raw", "train" if train else "t10k"
            self.images = idx(raw / f"{split}-images-idx3-ubyte.gz", 16).reshape(-1, 28, 28)
            self.labels = idx(raw / f"{split}-labels-idx1-ubyte.gz", 8)
            self.transform = transform

        def __len__(self):
            return len(self.labels)

        def __getitem__(self, i):
            return self.transform(self.images[i]), int(self.labels[i])

    def compose(steps):
        def apply(x):
            for step in steps:
                x = step(x)
            return x
        return apply

    def to_tensor():
        return lambda a: torch.from_numpy(a.copy()).float().div(255).unsqueeze(0)

    def normalize(mean, std):
        return lambda x: (x - torch.tensor(mean).view(-1, 1, 1)) / torch.tensor(std).view(-1, 1, 1)

    vision = types.ModuleType("torchvision")
    vision.datasets = types.SimpleNamespace(MNIST=MNIST)
    vision.transforms = types.SimpleNamespace(Compose=compose, ToTensor=to_tensor, Normalize=normalize)
    vision.utils = types.ModuleType("torchvision.utils")
    vision.utils.save_image = lambda tensor, fp, **kwargs: None
    return vision


torch.nn.Dropout.forward = lambda self, x: x
if "paragrad run" not in repr(torch):        # real torch: no torchvision installed
    sys.modules["torchvision"] = _torchvision_for_torch()
    sys.modules["torchvision.utils"] = sys.modules["torchvision"].utils

# the weights drawn from NumPy, and the script run, by numpy_draws.py
draws = str(Path(__file__).with_name("numpy_draws.py"))
sys.argv = [draws, *sys.argv[1:]]
runpy.run_path(draws, run_name="__main__")
