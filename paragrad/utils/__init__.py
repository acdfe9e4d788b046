"""PyTorch-style import paths: `paragrad.utils.data` is `paragrad.data`, `paragrad.utils.dlpack`
has torch.utils.dlpack's from_dlpack / to_dlpack."""
from . import data, dlpack  # noqa: F401
