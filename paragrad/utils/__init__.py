"""PyTorch-style import paths: `paragrad.utils.data` is `paragrad.data`."""
from . import data  # noqa: F401
