"""`paragrad train mnist|cifar10`: train a model, evaluate each epoch, checkpoint, log and plot."""
from __future__ import annotations

import json
import time
from pathlib import Path

from .. import checkpoint, nn, optim
from ..autograd import no_grad
from ..jit import jit
from ..ops.creation import tensor, zeros
from ..data import CIFAR10, MNIST, DataLoader
from ..data.transforms import Compose, RandomCrop, RandomHorizontalFlip
from ..models import MLP, MNISTCNN, resnet18
from ..random import Generator, manual_seed
from .plot import plot_curves
from .progress import Progress


# which models each dataset can train; the first is the default
MODELS = {"mnist": ("mlp", "cnn"), "cifar10": ("resnet18",)}
DATASET_NAMES = {"mnist": "MNIST", "cifar10": "CIFAR-10"}


def build_model(config):
    """The model a checkpoint's config describes (configs saved before cifar10 lack "dataset")."""
    model, dataset = config["model"], config.get("dataset", "mnist")
    if dataset not in MODELS:
        raise ValueError(f"unknown dataset {dataset!r}; available: {', '.join(MODELS)}")
    if model not in MODELS[dataset]:
        raise ValueError(f"model {model!r} does not train on {dataset}; {dataset} models: "
                         f"{', '.join(MODELS[dataset])}")
    if model == "mlp":
        return MLP(784, tuple(config["hidden"]), 10, config.get("activation", "relu"))
    if model == "cnn":
        return MNISTCNN()
    return resnet18(num_classes=config.get("num_classes", 10), stem=config.get("stem", "cifar"))


def describe(config):
    if config["model"] == "mlp":
        return f"mlp {'-'.join(map(str, [784, *config['hidden'], 10]))}"
    return config["model"]


def build_optimizer(name, params, lr, weight_decay=0.0):
    if name == "adam":
        return optim.Adam(params, lr=lr, weight_decay=weight_decay)
    if name == "adamw":
        return optim.AdamW(params, lr=lr, weight_decay=weight_decay)
    if name == "sgd":
        return optim.SGD(params, lr=lr, momentum=0.9, weight_decay=weight_decay)
    raise ValueError(f"unknown optimizer {name!r}; expected adam, adamw or sgd")


def load_dataset(name, data_dir, limit=None):
    cls = {"mnist": MNIST, "cifar10": CIFAR10}[name]
    train, test = cls(data_dir, train=True), cls(data_dir, train=False)
    if limit:
        train.subset(limit)
        test.subset(max(limit // 6, 1))
    return train, test


def on_device(dataset, device):
    """A dataset's (images, labels) as two tensors on `device` (one copy; views on the CPU)."""
    images, labels = dataset.get_batch(slice(None))
    return images.to(device), labels.to(device)


@no_grad()
def evaluate(model, dataset, device, batch_size=500, tensors=None):
    """Accuracy of model on dataset (fraction in [0, 1]); `tensors` = on_device(dataset, device)
    if already made. One host read at the end."""
    model.eval()
    images, labels = tensors if tensors is not None else on_device(dataset, device)
    correct = None
    for i in range(0, len(labels), batch_size):
        hits = (model(images[i:i + batch_size]).argmax(-1) == labels[i:i + batch_size]).sum()
        correct = hits if correct is None else correct + hits
    return int(correct) / len(dataset)


def make_step(model, opt, images, labels, augment, loss_sum):
    """One optimization step on the batch images[idx], labels[idx] (an on-device gather), adding
    its summed loss to the device scalar loss_sum: nothing here reads the device on the host,
    so pg.jit can capture it whole."""
    def train_step(idx):
        x, y = images[idx], labels[idx]
        if augment is not None:
            x = augment(x)
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        loss_sum.add_(loss.detach() * x.shape[0])
        return loss
    return train_step


def _defaults(args):
    """Fill the flags whose default depends on the dataset (and the optimizer)."""
    if args.model is None:
        args.model = MODELS[args.dataset][0]
    if args.model not in MODELS[args.dataset]:
        raise ValueError(f"--model {args.model} does not train on {args.dataset}; {args.dataset} "
                         f"models: {', '.join(MODELS[args.dataset])}")
    cifar = args.dataset == "cifar10"
    if args.epochs is None:     # the CNN needs 4-5 epochs to pass 99 %
        args.epochs = 5 if args.model == "cnn" else 3
    if args.optimizer is None:
        args.optimizer = "sgd" if cifar else "adam"
    if args.lr is None:
        args.lr = 0.1 if cifar and args.optimizer == "sgd" else 1e-3
    if args.weight_decay is None:
        args.weight_decay = 5e-4 if cifar else 0.0
    if args.out is None:
        args.out = f"runs/{args.dataset}"


def train(args):
    _defaults(args)
    config = {"model": args.model, "dataset": args.dataset}
    if args.model == "mlp":
        config.update(hidden=[int(h) for h in args.hidden.split(",") if h], activation="relu")
        if not config["hidden"] or min(config["hidden"]) <= 0:
            raise ValueError(f"--hidden must list positive layer sizes, got {args.hidden!r}")
    elif args.model == "resnet18":
        config.update(num_classes=10, stem="cifar")
    for name in ("epochs", "batch_size"):
        if getattr(args, name) <= 0:
            raise ValueError(f"--{name.replace('_', '-')} must be positive, got {getattr(args, name)}")
    if args.lr <= 0:
        raise ValueError(f"--lr must be positive, got {args.lr}")
    if args.weight_decay < 0:
        raise ValueError(f"--weight-decay must be non-negative, got {args.weight_decay}")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    manual_seed(args.seed)
    train_ds, test_ds = load_dataset(args.dataset, args.data_dir, args.limit)
    model = build_model(config).to(args.device)
    opt = build_optimizer(args.optimizer, model.parameters(), args.lr, args.weight_decay)
    shuffle_gen = Generator().manual_seed(args.seed)
    generators, augment = [shuffle_gen], None
    if args.dataset == "cifar10":
        # the usual CIFAR augmentation, drawn on the batch's device from its own seeded generator
        aug_gen = Generator(args.device).manual_seed(args.seed + 1)
        augment = Compose([RandomCrop(32, padding=4, generator=aug_gen),
                           RandomHorizontalFlip(generator=aug_gen)])
        generators.append(aug_gen)
    # the loader only draws each epoch's order: batches are gathered from tensors on the device
    loader = DataLoader(train_ds, batch_size=args.batch_size, shuffle=True, generator=shuffle_gen)
    # cosine decay to zero over the whole run, stepped every batch
    sched = optim.lr_scheduler.CosineAnnealingLR(opt, T_max=args.epochs * len(loader)) \
        if args.schedule == "cosine" else None
    records, start_epoch = [], 0
    if args.resume:
        state = checkpoint.load(args.resume, model, opt, sched, generators=generators)
        start_epoch = state["epoch"]
        records = state["extra"].get("records", [])[:start_epoch]
        print(f"resumed from {args.resume} at epoch {start_epoch}")
    n_params = sum(p.numel() for p in model.parameters())
    jitted = args.jit and args.device != "cpu"
    print(f"training {describe(config)} ({n_params:,} parameters) on {len(train_ds):,} "
          f"{DATASET_NAMES[args.dataset]} images, device {args.device}"
          f"{', one CUDA graph per step (pg.jit)' if jitted else ''}")
    images, labels = on_device(train_ds, args.device)
    test_tensors = on_device(test_ds, args.device)
    loss_sum = zeros((), device=args.device)
    train_step = make_step(model, opt, images, labels, augment, loss_sum)
    if jitted:
        train_step = jit(train_step)
    for epoch in range(start_epoch, args.epochs):
        model.train()
        bar = Progress(len(loader), desc=f"epoch {epoch + 1}/{args.epochs}")
        t0, seen = time.perf_counter(), 0
        loss_sum.zero_()
        order = tensor(loader._order(), device=args.device)        # (N,) this epoch's order
        for step, start in enumerate(range(0, len(order), args.batch_size), 1):
            train_step(order[start:start + args.batch_size])
            if sched is not None:
                sched.step()
            seen = min(start + args.batch_size, len(order))
            if bar.tty or step == len(loader) or step % 100 == 0:
                bar.update(step, seen, loss=float(loss_sum) / seen)
        bar.close()
        train_seconds = time.perf_counter() - t0
        acc = evaluate(model, test_ds, args.device, tensors=test_tensors)
        rec = {"epoch": epoch + 1, "train_loss": float(loss_sum) / seen, "test_accuracy": acc,
               "seconds": round(time.perf_counter() - t0, 3), "train_seconds": round(train_seconds, 3),
               "samples_per_second": round(seen / train_seconds, 1)}
        records.append(rec)
        print(f"epoch {epoch + 1}: train loss {rec['train_loss']:.4f}, test accuracy {100 * acc:.2f}%, "
              f"{rec['seconds']:.1f}s")
        ckpt = out / f"epoch{epoch + 1}.safetensors"
        checkpoint.save(ckpt, model, opt, sched, step=(epoch + 1) * len(loader), epoch=epoch + 1,
                        extra={"config": config, "records": records}, generators=generators)
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
