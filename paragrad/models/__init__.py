"""Reference models."""
from .mlp import MLP  # noqa: F401
