"""Run a PyTorch script (`python same_init.py SCRIPT ARGS...`, or under `paragrad run`) with the
parameters of every Linear and LSTMCell it makes drawn from NumPy (RandomState(0), torch's
uniform(-k, k) bounds) instead of from the framework's generator: torch and paragrad have
different random streams, so this is how both runs of an unmodified script start from the same
weights. The script runs as `python SCRIPT ARGS...` would run it."""
import math
import runpy
import sys
from pathlib import Path

import numpy as np
import torch

_rng = np.random.RandomState(0)


def _drawn(bound):
    def reset_parameters(self):
        with torch.no_grad():
            for _, p in sorted(self.named_parameters()):   # the same order in both frameworks
                p.copy_(torch.from_numpy(_rng.uniform(-bound(self), bound(self), tuple(p.shape))))
    return reset_parameters


torch.nn.Linear.reset_parameters = _drawn(lambda m: 1 / math.sqrt(m.in_features))
torch.nn.LSTMCell.reset_parameters = _drawn(lambda m: 1 / math.sqrt(m.hidden_size))

script = sys.argv[1]
sys.argv = sys.argv[1:]
sys.path[0] = str(Path(script).resolve().parent)
runpy.run_path(script, run_name="__main__")
