"""`paragrad evaluate CHECKPOINT`: test accuracy of a saved model."""
from __future__ import annotations

import json
import os

from .. import checkpoint
from ..safetensors import SafetensorsError, load_file
from .train import build_model, evaluate, load_mnist


def evaluate_checkpoint(args):
    tpath = checkpoint.train_state_path(args.checkpoint)
    if not os.path.exists(args.checkpoint):
        raise SafetensorsError(f"checkpoint file not found: {args.checkpoint}")
    if not os.path.exists(tpath):
        raise SafetensorsError(f"{args.checkpoint}: no model configuration found (expected {tpath} "
                               f"written by paragrad train)")
    _, meta = load_file(tpath)
    config = json.loads(meta["paragrad_train_state"])["extra"]["config"]
    model = build_model(config)
    checkpoint.load(args.checkpoint, model)
    model.to(args.device)
    _, test = load_mnist(args.data_dir)
    acc = evaluate(model, test, args.device)
    print(f"{args.checkpoint}: test accuracy {100 * acc:.2f}% on {len(test):,} MNIST test images")
    return 0
