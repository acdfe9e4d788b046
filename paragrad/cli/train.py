"""`paragrad train mnist`: train a model, evaluate each epoch, checkpoint, log and plot."""
from __future__ import annotations

import json
import time
from pathlib import Path

from .. import checkpoint, nn, optim
from ..autograd import no_grad
from ..data import MNIST, DataLoader
from ..models import MLP
from ..random import Generator, manual_seed
from .plot import plot_curves
from .progress import Progress


def build_model(config):
    if config["model"] == "mlp":
        return MLP(784, tuple(config["hidden"]), 10, config.get("activation", "relu"))
    raise ValueError(f"unknown model {config['model']!r}; available: mlp")


def build_optimizer(name, params, lr):
    if name == "adam":
        return optim.Adam(params, lr=lr)
    if name == "adamw":
        return optim.AdamW(params, lr=lr)
    if name == "sgd":
        return optim.SGD(params, lr=lr, momentum=0.9)
    raise ValueError(f"unknown optimizer {name!r}; expected adam, adamw or sgd")


def load_mnist(data_dir, limit=None):
    train, test = MNIST(data_dir, train=True), MNIST(data_dir, train=False)
    if limit:
        train.subset(limit)
        test.subset(max(limit // 6, 1))
    return train, test


@no_grad()
def evaluate(model, dataset, device, batch_size=1000):
    """Accuracy of model on dataset (fraction in [0, 1])."""
    model.eval()
    correct = None
    for x, y in DataLoader(dataset, batch_size=batch_size):
        hits = (model(x.to(device)).argmax(-1) == y.to(device)).sum()
        correct = hits if correct is None else correct + hits
    return int(correct) / len(dataset)


def train(args):
    config = {"model": args.model, "hidden": [int(h) for h in args.hidden.split(",") if h],
              "activation": "relu", "dataset": "mnist"}
    if not config["hidden"] or min(config["hidden"]) <= 0:
        raise ValueError(f"--hidden must list positive layer sizes, got {args.hidden!r}")
    for name in ("epochs", "batch_size"):
        if getattr(args, name) <= 0:
            raise ValueError(f"--{name.replace('_', '-')} must be positive, got {getattr(args, name)}")
    if args.lr <= 0:
        raise ValueError(f"--lr must be positive, got {args.lr}")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    manual_seed(args.seed)
    train_ds, test_ds = load_mnist(args.data_dir, args.limit)
    model = build_model(config).to(args.device)
    opt = build_optimizer(args.optimizer, model.parameters(), args.lr)
    shuffle_gen = Generator().manual_seed(args.seed)
    loader = DataLoader(train_ds, batch_size=args.batch_size, shuffle=True, generator=shuffle_gen)
    # cosine decay to zero over the whole run, stepped every batch
    sched = optim.lr_scheduler.CosineAnnealingLR(opt, T_max=args.epochs * len(loader)) \
        if args.schedule == "cosine" else None
    records, start_epoch = [], 0
    if args.resume:
        state = checkpoint.load(args.resume, model, opt, sched, generators=[shuffle_gen])
        start_epoch = state["epoch"]
        records = state["extra"].get("records", [])[:start_epoch]
        print(f"resumed from {args.resume} at epoch {start_epoch}")
    n_params = sum(p.numel() for p in model.parameters())
    print(f"training {config['model']} {'-'.join(map(str, [784, *config['hidden'], 10]))} "
          f"({n_params:,} parameters) on {len(train_ds):,} MNIST images, device {args.device}")
    for epoch in range(start_epoch, args.epochs):
        model.train()
        bar = Progress(len(loader), desc=f"epoch {epoch + 1}/{args.epochs}")
        t0, total, seen = time.perf_counter(), None, 0
        for step, (x, y) in enumerate(loader, 1):
            x, y = x.to(args.device), y.to(args.device)
            loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            if sched is not None:
                sched.step()
            total = loss.detach() * x.shape[0] if total is None else total + loss.detach() * x.shape[0]
            seen += x.shape[0]
            if bar.tty or step == len(loader) or step % 100 == 0:
                bar.update(step, seen, loss=float(total) / seen)
        bar.close()
        train_seconds = time.perf_counter() - t0
        acc = evaluate(model, test_ds, args.device)
        rec = {"epoch": epoch + 1, "train_loss": float(total) / seen, "test_accuracy": acc,
               "seconds": round(time.perf_counter() - t0, 3), "train_seconds": round(train_seconds, 3),
               "samples_per_second": round(seen / train_seconds, 1)}
        records.append(rec)
        print(f"epoch {epoch + 1}: train loss {rec['train_loss']:.4f}, test accuracy {100 * acc:.2f}%, "
              f"{rec['seconds']:.1f}s")
        ckpt = out / f"epoch{epoch + 1}.safetensors"
        checkpoint.save(ckpt, model, opt, sched, step=(epoch + 1) * len(loader), epoch=epoch + 1,
                        extra={"config": config, "records": records}, generators=[shuffle_gen])
        with open(out / "metrics.jsonl", "w") as f:
            for r in records:
                f.write(json.dumps(r) + "\n")
        plotted = plot_curves(records, out / "curves.png")
    if not plotted:
        print('note: curves.png not written (install matplotlib: pip install "paragrad[plot]")')
    final = records[-1]
    print(f"done: {final['epoch']} epochs, test accuracy {100 * final['test_accuracy']:.2f}%, "
          f"last checkpoint {ckpt}, metrics {out / 'metrics.jsonl'}")
    return 0
