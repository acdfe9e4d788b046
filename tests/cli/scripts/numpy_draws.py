"""Run a training script (`python numpy_draws.py SCRIPT ARGS...`, or under `paragrad run`) with
the random numbers that decide its weights and batches drawn from NumPy (RandomState(0))
instead of from the framework's generator: torch.nn.init.normal_ (nanoGPT's and minGPT's
weights), kaiming_normal_ (ResNet's convolutions) and xavier_uniform_, torch.randint
(nanoGPT's batch offsets), torch.randn (a GAN's noise), torch.randn_like (a VAE's noise) and
torch.utils.data.RandomSampler, with replacement (minGPT's batches) or without (a DataLoader's
shuffle=True). torch and paragrad have different random streams, so this is how both runs of
an unmodified script start from the same weights and see the same batches: with dropout off,
their losses then differ by float32 rounding alone. Linear's and LSTMCell's own
initialization, and Conv2d's and LSTM's (uniform(-k, k), torch's bounds), is drawn from it too
(time_sequence_prediction and pytorch/examples' MNIST scripts keep those weights). The script
runs as `python SCRIPT ARGS...` would run it."""
import math
import runpy
import sys
from pathlib import Path

import numpy as np
import torch
import torch.utils.data.dataloader

_rng = np.random.RandomState(0)


def normal_(tensor, mean=0.0, std=1.0, generator=None):
    with torch.no_grad():
        return tensor.copy_(torch.from_numpy(_rng.normal(mean, std, tuple(tensor.shape)).astype(np.float32)))


def _fans(tensor):
    receptive = math.prod(tensor.shape[2:])
    return tensor.shape[1] * receptive, tensor.shape[0] * receptive


def kaiming_normal_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    if nonlinearity not in ("relu", "leaky_relu"):
        raise NotImplementedError(f"numpy_draws: kaiming_normal_ for {nonlinearity}")
    fan_in, fan_out = _fans(tensor)
    return normal_(tensor, 0.0, math.sqrt(2.0 / (1 + a ** 2)) / math.sqrt(fan_in if mode == "fan_in" else fan_out))


def xavier_uniform_(tensor, gain=1.0, generator=None):
    bound = gain * math.sqrt(6.0 / sum(_fans(tensor)))
    with torch.no_grad():
        return tensor.copy_(torch.from_numpy(_rng.uniform(-bound, bound, tuple(tensor.shape)).astype(np.float32)))


def randint(low, high=None, size=None, *, device=None, **_):
    if size is None:        # the randint(high, size) form
        low, high, size = 0, low, high
    return torch.from_numpy(_rng.randint(low, high, size=tuple(size)).astype(np.int64)).to(device or "cpu")


def randn(*size, generator=None, dtype=None, device=None, **_):
    size = tuple(size[0]) if len(size) == 1 and isinstance(size[0], (tuple, list)) else size
    draws = torch.from_numpy(_rng.standard_normal(size).astype(np.float32))
    return draws.to(device=device or "cpu", dtype=dtype or torch.float32)


def randn_like(input, *, dtype=None, device=None, **_):
    draws = torch.from_numpy(_rng.standard_normal(tuple(input.shape)).astype(np.float32))
    return draws.to(device=device or input.device, dtype=dtype or input.dtype)


class RandomSampler(torch.utils.data.Sampler):
    """Indices drawn with replacement one at a time as the loader asks (minGPT asks for 1e10),
    or without: a permutation drawn per epoch."""
    def __init__(self, data_source, replacement=False, num_samples=None, generator=None):
        self.n, self.replacement = len(data_source), replacement
        self.num_samples = num_samples or len(data_source)

    def __len__(self):
        return self.num_samples

    def __iter__(self):
        if not self.replacement:
            yield from (int(i) for i in _rng.permutation(self.n)[:self.num_samples])
            return
        for _ in range(self.num_samples):
            yield int(_rng.randint(self.n))


def _uniform_reset(bound):
    def reset_parameters(self):
        with torch.no_grad():
            for _, p in sorted(self.named_parameters()):   # the same order in both frameworks
                p.copy_(torch.from_numpy(_rng.uniform(-bound(self), bound(self), tuple(p.shape))))
    return reset_parameters


torch.nn.Linear.reset_parameters = _uniform_reset(lambda m: 1 / math.sqrt(m.in_features))
torch.nn.Conv2d.reset_parameters = _uniform_reset(lambda m: 1 / math.sqrt(m.weight[0].numel()))    # (fan_in)
torch.nn.LSTMCell.reset_parameters = _uniform_reset(lambda m: 1 / math.sqrt(m.hidden_size))
torch.nn.LSTM.reset_parameters = _uniform_reset(lambda m: 1 / math.sqrt(m.hidden_size))
torch.nn.init.normal_ = normal_
torch.nn.init.kaiming_normal_ = kaiming_normal_
torch.nn.init.xavier_uniform_ = xavier_uniform_
torch.randint = randint
torch.randn = randn
torch.randn_like = randn_like
torch.utils.data.RandomSampler = RandomSampler
torch.utils.data.dataloader.RandomSampler = RandomSampler      # (DataLoader(shuffle=True) makes one)

script = sys.argv[1]
sys.argv = sys.argv[1:]
sys.path[0] = str(Path(script).resolve().parent)
runpy.run_path(script, run_name="__main__")
