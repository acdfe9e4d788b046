"""`paragrad evaluate CHECKPOINT`: test accuracy of a saved model on its dataset's test split."""
from __future__ import annotations

import json
import os

from .. import checkpoint
from ..safetensors import SafetensorsError, load_file
from .train import DATASET_NAMES, build_model, evaluate, load_dataset


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
    dataset = config.get("dataset", "mnist")
    if args.limit is not None and args.limit <= 0:
        raise ValueError(f"--limit must be positive, got {args.limit}")
    _, test = load_dataset(dataset, args.data_dir)
    if args.limit:
        test.subset(args.limit)
    acc = evaluate(model, test, args.device)
    print(f"{args.checkpoint}: test accuracy {100 * acc:.2f}% on {len(test):,} "
          f"{DATASET_NAMES[dataset]} test images")
    return 0
