"""Imports torch.onnx at the top, as scripts with an optional ONNX export do, then uses it."""
import torch
import torch.onnx

print("imported")
torch.onnx.export(torch.nn.Linear(2, 2), torch.zeros(1, 2), "model.onnx")
