"""The `paragrad` command line: info, train, evaluate."""
from __future__ import annotations

import argparse
import sys


class _Parser(argparse.ArgumentParser):
    """Bad arguments: one clear line and exit code 2, no usage dump."""

    def error(self, message):
        self.exit(2, f"paragrad: error: {message} (see '{self.prog} --help')\n")


def build_parser():
    p = _Parser(prog="paragrad", description="paragrad: train and evaluate models.")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)
    sub.add_parser("info", help="version, backends, devices and library versions")

    t = sub.add_parser("train", help="train a model")
    t.add_argument("dataset", choices=["mnist", "cifar10"])
    t.add_argument("--model", default=None, choices=["mlp", "cnn", "resnet18"],
                   help="mnist: mlp (default) or cnn; cifar10: resnet18 (default, CIFAR stem)")
    t.add_argument("--hidden", default="256,128", help="mlp hidden layer sizes, comma separated")
    t.add_argument("--epochs", type=int, default=None, help="default: 5 for the mnist cnn, else 3")
    t.add_argument("--batch-size", type=int, default=64)
    t.add_argument("--optimizer", default=None, choices=["adam", "adamw", "sgd"],
                   help="default: adam for mnist, sgd (momentum 0.9) for cifar10")
    t.add_argument("--lr", type=float, default=None, help="default: 0.1 for sgd on cifar10, else 1e-3")
    t.add_argument("--weight-decay", type=float, default=None,
                   help="default: 5e-4 for cifar10, 0 for mnist")
    t.add_argument("--schedule", default="cosine", choices=["cosine", "none"],
                   help="learning-rate schedule over the run (default: cosine decay to 0)")
    t.add_argument("--device", default="cpu")
    t.add_argument("--no-jit", dest="jit", action="store_false",
                   help="on cuda, run each step eagerly instead of as one captured CUDA graph")
    t.add_argument("--data-dir", default=None, help="folder holding mnist/ or cifar10/ (default "
                                                    "$PARAGRAD_DATA or ~/.cache/paragrad)")
    t.add_argument("--out", default=None, help="output folder for metrics, plot, checkpoints "
                                               "(default runs/DATASET)")
    t.add_argument("--seed", type=int, default=0)
    t.add_argument("--resume", default=None, help="checkpoint to continue from")
    t.add_argument("--limit", type=int, default=None, help="train on the first N images only (quick runs)")

    e = sub.add_parser("evaluate", help="test accuracy of a saved checkpoint")
    e.add_argument("checkpoint")
    e.add_argument("--data-dir", default=None)
    e.add_argument("--limit", type=int, default=None, help="evaluate on the first N test images only")
    e.add_argument("--device", default="cpu")
    return p


def main(argv=None):
    args = build_parser().parse_args(argv)
    from ..data import DataError
    from ..safetensors import SafetensorsError
    try:
        if args.command == "info":
            from .info import info
            return info()
        if args.command == "train":
            from .train import train
            return train(args)
        from .evaluate import evaluate_checkpoint
        return evaluate_checkpoint(args)
    except (DataError, SafetensorsError, ValueError, RuntimeError, OSError) as e:
        print(f"paragrad: error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("paragrad: interrupted", file=sys.stderr)
        return 130
