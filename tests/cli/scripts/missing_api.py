"""Asks for a torch API paragrad doesn't have; how it asks is the first argument."""
import sys

import torch

way = sys.argv[1]
model = torch.nn.Linear(2, 2)
if way == "attribute":
    model = torch.vmap(model)
elif way == "from-import":
    from torch.nn import NotAModule     # noqa: F401
elif way == "import":
    import torch.distributions          # noqa: F401
elif way == "nested-import":
    import torch.utils.checkpoint       # noqa: F401
print("unreachable: the missing API did not fail")
