"""Reference models."""
from .cnn import MNISTCNN  # noqa: F401
from .gpt import GPT, GPTConfig  # noqa: F401
from .mlp import MLP  # noqa: F401
from .resnet import BasicBlock, ResNet, resnet18, resnet34  # noqa: F401
