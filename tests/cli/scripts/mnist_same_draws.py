"""Run pytorch/examples' MNIST scripts (mnist, vae, mnist_forward_forward, ...) and dcgan on its
fake data (`python mnist_same_draws.py SCRIPT ARGS...`, or under `paragrad run`), so that torch
and paragrad start from the same weights and compute the same steps: Conv2d's and Linear's
initialization, the shuffled batch order, a VAE's and a GAN's noise and FakeData's images are
drawn from NumPy (numpy_draws.py, which then runs the script; FakeData below) and dropout is off
(the frameworks' random streams differ). The losses then differ by float32 rounding alone.

Real torch has no torchvision here: under torch the script gets a stand-in written with torch and
NumPy alone (the IDX files read by their fixed MNIST headers, ToTensor as
`from_numpy(a).float().div(255).unsqueeze(0)`, Normalize as `(x - mean) / std`, Lambda(f) as
f, models.resnet18 as tests/torch_resnet.py builds it, save_image writing nothing), the reference for paragrad.vision. Under paragrad run, `import torchvision` is
answered by paragrad.vision."""
import gzip
import random
import runpy
import sys
import types
from pathlib import Path

import numpy as np
import torch

def _torchvision_for_torch():
    sys.path.insert(0, str(Path(__file__).resolve().parents[3]))      # (the repository: tests/)
    from tests.torch_resnet import TorchResNet18
    def idx(path, header):
        return np.frombuffer(gzip.decompress(Path(path).read_bytes()), np.uint8, offset=header)

    class MNIST(torch.utils.data.Dataset):
        def __init__(self, root, train=True, transform=None, download=False):
            raw, split = Path(root) / "MNIST" / "raw", "train" if train else "t10k"
            self.images = idx(raw / f"{split}-images-idx3-ubyte.gz", 16).reshape(-1, 28, 28)
            self.labels = idx(raw / f"{split}-labels-idx1-ubyte.gz", 8)
            self.data, self.targets = torch.from_numpy(self.images.copy()), torch.from_numpy(self.labels.astype(np.int64))
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

    def to_tensor():        # (H, W) or (H, W, C) uint8 -> (C, H, W) in [0, 1]
        return lambda a: torch.from_numpy(a[:, :, None] if a.ndim == 2 else a.copy()).permute(2, 0, 1).float().div(255)

    def normalize(mean, std):
        return lambda x: (x - torch.tensor(mean).view(-1, 1, 1)) / torch.tensor(std).view(-1, 1, 1)

    def module(name, **names):      # (registered, so `from torchvision.datasets import MNIST` works)
        m = sys.modules[name] = types.ModuleType(name)
        m.__dict__.update(names)
        return m

    return module("torchvision",
                  datasets=module("torchvision.datasets", MNIST=MNIST),
                  models=module("torchvision.models", resnet18=lambda weights=None: TorchResNet18()),
                  transforms=module("torchvision.transforms", Compose=compose, ToTensor=to_tensor,
                                    Normalize=normalize, Lambda=lambda f: f),
                  utils=module("torchvision.utils", save_image=lambda tensor, fp, **kwargs: None))


class FakeData(torch.utils.data.Dataset):
    """torchvision.datasets.FakeData with NumPy's draws, for both frameworks (dcgan's
    --dataset fake): item i from RandomState(i + random_offset), its normal draws clipped to
    [0, 1] before becoming bytes."""

    def __init__(self, size=1000, image_size=(3, 224, 224), num_classes=10, transform=None,
                 target_transform=None, random_offset=0):
        self.size, self.image_size, self.num_classes = size, image_size, num_classes
        self.transform, self.offset = transform, random_offset

    def __len__(self):
        return self.size

    def __getitem__(self, i):
        rs = np.random.RandomState(i + self.offset)
        img = (np.clip(rs.standard_normal(self.image_size), 0, 1) * 255).astype(np.uint8).transpose(1, 2, 0)
        return self.transform(img), int(rs.randint(self.num_classes))


torch.nn.Dropout.forward = torch.nn.Dropout2d.forward = lambda self, x: x
random.seed(0)      # (the siamese network's pairs are drawn with Python's random, unseeded)
if "paragrad run" not in repr(torch):        # real torch: no torchvision installed
    _torchvision_for_torch()
import torchvision.datasets  # noqa: E402  (paragrad.vision's under paragrad run)
torchvision.datasets.FakeData = FakeData

# the weights drawn from NumPy, and the script run, by numpy_draws.py
draws = str(Path(__file__).with_name("numpy_draws.py"))
sys.argv = [draws, *sys.argv[1:]]
runpy.run_path(draws, run_name="__main__")
