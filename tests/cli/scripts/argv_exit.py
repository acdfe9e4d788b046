"""Prints what `python argv_exit.py ARGS` would see, then exits with the code its last argument names."""
import json
import sys

import sibling
import torch

print(json.dumps({"argv": sys.argv, "name": __name__, "file": __file__, "path0": sys.path[0],
                  "sibling": sibling.GREETING, "tensor": isinstance(torch.ones(1), torch.Tensor)}))
sys.exit(int(sys.argv[-1]))
