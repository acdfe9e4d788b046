"""The `paragrad` command line: info, train, evaluate, generate, run, launch.

Exit codes: 0 done; 2 the input was refused (a flag, file or folder, named in one line on
stderr, before anything was written); 1 a run that started failed (e.g. the loss diverged).
"""
from __future__ import annotations

import argparse
import sys

from .. import __version__
from .arguments import (UsageError, layer_sizes, nonnegative_float, positive_float, positive_int,
                        usable_device)
from .data_parallel import add_flags as add_data_parallel_flags
from .lm_arguments import add_generate_command, add_train_flags
from .precision import PRECISIONS


class _Parser(argparse.ArgumentParser):
    """Bad arguments: one clear line and exit code 2, no usage dump."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message} (see '{self.prog} --help')\n")


def build_parser():
    p = _Parser(prog="paragrad", description="paragrad: train and evaluate models.",
                epilog="exit codes: 0 done; 2 input refused (nothing written); 1 a started run failed")
    p.add_argument("--version", action="version", version=f"paragrad {__version__}")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)
    sub.add_parser("info", help="version, backends, devices and library versions")

    # defaults of None are filled in by train.resolve (lm_config.resolve_lm for language
    # models): from the dataset and model, or from the
    # checkpoint being resumed, so that a flag given explicitly can be told from a default
    t = sub.add_parser("train", help="train a model")
    t.add_argument("dataset", choices=["mnist", "cifar10", "shakespeare", "tinystories", "random-tokens"],
                   help="random-tokens: uniformly random token ids, for throughput runs only")
    t.add_argument("--model", default=None, choices=["mlp", "cnn", "resnet18", "gpt2"],
                   help="mnist: mlp (default) or cnn; cifar10: resnet18 (default, CIFAR stem); "
                        "language models: gpt2 (GPT-2 124M as nanoGPT's config/train_gpt2.py: its "
                        "values for every flag left out) or none (nanoGPT's shakespeare_char config)")
    t.add_argument("--hidden", type=layer_sizes, default=None,
                   help="mlp hidden layer sizes, comma separated (default 256,128)")
    t.add_argument("--epochs", type=positive_int, default=None,
                   help="total epochs of the run, counting those a --resume checkpoint has done "
                        "(default: 5 for the mnist cnn, else 3; with --resume, the run's own)")
    t.add_argument("--batch-size", type=positive_int, default=None,
                   help="default 64 (language models on the cpu: 12; --model gpt2: 12 a rank)")
    t.add_argument("--optimizer", default=None, choices=["adam", "adamw", "sgd"],
                   help="default: adam for mnist, sgd (momentum 0.9) for cifar10")
    t.add_argument("--lr", type=positive_float, default=None,
                   help="default: 0.1 for sgd on cifar10, else 1e-3")
    t.add_argument("--weight-decay", type=nonnegative_float, default=None,
                   help="default: 5e-4 for cifar10, 0 for mnist, 0.1 for language models")
    t.add_argument("--schedule", default=None, choices=["cosine", "none"],
                   help="learning-rate schedule over the run's --epochs (default: cosine decay to 0)")
    t.add_argument("--device", type=usable_device, default="cpu", help="cpu (default), cuda or cuda:N")
    t.add_argument("--precision", default=None, choices=PRECISIONS,
                   help="dtype of the forward pass and loss: bf16 or fp16 (with loss scaling) under "
                        "autocast, weights kept in float32, or fp32 (default: bf16 for the cnn and "
                        "resnet18 on cuda, and for language models on cuda, else fp32)")
    t.add_argument("--no-jit", dest="jit", action="store_false",
                   help="on cuda, run each step eagerly instead of as one captured CUDA graph")
    t.add_argument("--data-dir", default=None,
                   help="an existing folder holding mnist/, cifar10/, tinyshakespeare/ or "
                        "tinystories/ (default $PARAGRAD_DATA, else, "
                        "with --resume, the run's own, else ~/.cache/paragrad)")
    t.add_argument("--out", default=None,
                   help="output folder for metrics, plot, checkpoints (default runs/DATASET-MODEL, "
                        "runs/DATASET for language models; "
                        "with --resume, the checkpoint's folder)")
    t.add_argument("--overwrite", action="store_true",
                   help="replace the checkpoints, metrics and plot of an earlier run in --out")
    t.add_argument("--seed", type=int, default=None, help="default 0")
    t.add_argument("--resume", default=None,
                   help="checkpoint to continue from; flags left out take the run's own values")
    t.add_argument("--limit", type=positive_int, default=None,
                   help="train on the first N training images only (default: all)")
    t.add_argument("--test-limit", type=positive_int, default=None,
                   help="test each epoch on the first N test images only (default: all)")
    add_train_flags(t)
    add_data_parallel_flags(t)

    e = sub.add_parser("evaluate", help="test accuracy (images) or val loss (language models) of a "
                                        "saved checkpoint")
    e.add_argument("checkpoint")
    e.add_argument("--data-dir", default=None, help="an existing folder holding mnist/ or cifar10/ "
                                                    "(default $PARAGRAD_DATA, else the folder the "
                                                    "checkpoint was trained from)")
    e.add_argument("--limit", type=positive_int, default=None,
                   help="evaluate on the first N test images only")
    e.add_argument("--device", type=usable_device, default="cpu", help="cpu (default), cuda or cuda:N")
    e.add_argument("--eval-iters", type=positive_int, default=None,
                   help="language models: batches the val loss averages (default: the run's)")
    add_generate_command(sub)

    r = sub.add_parser(
        "run", help="run a PyTorch script on paragrad (import torch gives paragrad)",
        description="Run an unmodified PyTorch script with `import torch` (torch.nn, torch.optim, "
                    "torch.utils.data, torch.cuda, torch.backends, ...) answered by paragrad. The "
                    "script runs as `python SCRIPT ARGS` would: as __main__, with sys.argv = "
                    "[SCRIPT, *ARGS], its folder first on sys.path, and its own exit code. A torch "
                    "API paragrad lacks fails naming it; torch.utils.tensorboard's SummaryWriter "
                    "does nothing.",
        epilog="everything after SCRIPT is the script's, flags included: "
               "paragrad run train.py --lr 3e-4")
    r.add_argument("script", help="the Python file to run")
    r.add_argument("args", nargs=argparse.REMAINDER, help="the script's own arguments"
                   ).required = False    # may be empty: a missing SCRIPT alone is the error

    la = sub.add_parser(
        "launch", help="start N ranks of a command with the MPI launcher (mpirun/mpiexec)",
        description="Start N processes of COMMAND with mpirun or mpiexec (the one next to this "
                    "Python, else on PATH), adding --allow-run-as-root as root and --oversubscribe "
                    "for more ranks than cores (Open MPI), and NCCL_NVLS_ENABLE=0 for every rank. "
                    "Each rank calls paragrad.distributed.init_process_group(); the exit status is "
                    "the job's.",
        epilog="examples: paragrad launch -n 4 -- python train.py --lr 3e-4; across two hosts of "
               "8 GPUs: paragrad launch -n 16 --hostfile hosts.txt -- python train.py")
    la.add_argument("-n", "--nproc", type=positive_int, required=True, help="number of ranks")
    la.add_argument("--hostfile", default=None, metavar="FILE",
                    help="run the ranks on the hosts this file names, one a line with its slots "
                         "('node1 slots=8'), as mpirun's --hostfile (MPICH's -f)")
    la.add_argument("rank_command", metavar="COMMAND", nargs=argparse.REMAINDER,
                    help="-- then the command every rank runs")
    return p, sub.choices


def main(argv=None):
    parser, commands = build_parser()
    args, unknown = parser.parse_known_args(argv)
    command = commands[args.command]
    if unknown:     # reported by the subcommand, whose --help lists what it takes
        command.error(f"unrecognized arguments: {' '.join(unknown)}")
    if args.command == "run":   # the script's own errors keep their traceback: none caught here
        from .run import prepare, run_script
        try:
            script = prepare(args)
        except UsageError as e:
            return _fail(command, e, 2)
        return run_script(script, args.args)
    if args.command == "launch":
        from .launch import launch
        try:
            return launch(args)
        except UsageError as e:
            return _fail(command, e, 2)
    from ..data import DataError
    from ..io.safetensors import SafetensorsError
    try:
        if args.command == "info":
            from .info import info
            return info()
        if args.command == "train":
            from .train import train
            return train(args)
        if args.command == "generate":
            from .generate import generate
            return generate(args)
        from .evaluate import evaluate_checkpoint
        return evaluate_checkpoint(args)
    except (UsageError, DataError) as e:     # a missing or corrupt dataset file is bad input too
        return _fail(command, e, 2)
    except (SafetensorsError, ValueError, RuntimeError, OSError) as e:
        return _fail(command, e, 1)
    except KeyboardInterrupt:
        print("paragrad: interrupted", file=sys.stderr)
        return 130


def _fail(command, error, code):
    """One line on stderr, however many the message had (a load_state_dict report has several)."""
    print(f"{command.prog}: error: {' '.join(str(error).split())}", file=sys.stderr)
    return code
