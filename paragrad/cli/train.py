"""`paragrad train mnist|cifar10`: train a model, evaluate each epoch, checkpoint, log and plot.
(`train shakespeare|tinystories` goes to train_language_model.)"""
from __future__ import annotations

import time

from .. import nn, optim
from ..io import checkpoint
from ..autograd import no_grad
from ..jit import jit
from ..ops.creation import tensor
from ..data import CIFAR10, MNIST, DataLoader, DistributedSampler
from ..data.transforms import Compose, RandomCrop, RandomHorizontalFlip
from ..models import MLP, MNISTCNN, resnet18
from ..random import Generator, manual_seed
from ..io.safetensors import SafetensorsError
from . import out_folder
from .data_parallel import Ranks
from .arguments import UsageError
from .lm_config import LM_DATASETS, refuse_foreign_flags
from .divergence import Diverged, LossWatch, kept, weights_finite
from .out_folder import checkpoint_path, default_out
from .plot import plot_curves
from .precision import describe_precision, forward_autocast, grad_scaler
from .progress import Progress
from .run_config import (DATASET_NAMES, MODELS, data_folder, model_config, recorded_run, resolve,
                         run_record)


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


def on_device(dataset, device):
    """A dataset's (images, labels) as two tensors on `device` (one copy; views on the CPU)."""
    images, labels = dataset.get_batch(slice(None))
    return images.to(device), labels.to(device)


@no_grad()
def evaluate(model, dataset, device, precision="fp32", batch_size=500, tensors=None):
    """Accuracy of model on dataset (fraction in [0, 1]), its forward run in the `precision` it
    trained in; `tensors` = on_device(dataset, device) if already made. One host read at the end."""
    model.eval()
    images, labels = tensors if tensors is not None else on_device(dataset, device)
    correct, forward = None, forward_autocast(precision, device)
    for i in range(0, len(labels), batch_size):
        with forward:
            logits = model(images[i:i + batch_size])
        hits = (logits.argmax(-1) == labels[i:i + batch_size]).sum()
        correct = hits if correct is None else correct + hits
    return int(correct) / len(dataset)


def make_step(model, opt, images, labels, augment, watch, precision="fp32", scaler=None):
    """One optimization step on the batch images[idx], labels[idx] (an on-device gather), its
    forward and loss run in `precision`, its loss scaled by `scaler` (the run's GradScaler,
    by default grad_scaler(precision)), recording its (unscaled) loss in `watch` (a LossWatch):
    nothing here reads the device on the host, so pg.jit can capture it whole."""
    scaler = grad_scaler(precision, images.device) if scaler is None else scaler
    forward = forward_autocast(precision, images.device)

    def train_step(idx):
        x, y = images[idx], labels[idx]
        if augment is not None:
            x = augment(x)
        with forward:
            loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        watch.record(loss, x.shape[0])
        return loss
    return train_step


def load_splits(name, data_dir, limit=None, test_limit=None):
    """The training and test splits, cut to their first `limit` / `test_limit` samples."""
    cls = {"mnist": MNIST, "cifar10": CIFAR10}[name]
    train, test = cls(data_dir, train=True), load_test_split(name, data_dir)
    if limit:
        train.subset(limit)
    if test_limit:
        test.subset(test_limit)
    return train, test


def load_test_split(name, data_dir):
    return {"mnist": MNIST, "cifar10": CIFAR10}[name](data_dir, train=False)


def _follow_new_length(sched, total_steps):
    """A resumed cosine schedule planned for fewer (or more) epochs: continue from the current
    step along the cosine over the new total, instead of climbing back up past the old end."""
    if sched is None or sched.T_max == total_steps:
        return
    sched.T_max = total_steps
    lrs = sched._get_closed_form_lr()       # at sched.last_epoch = the steps already taken
    for g, lr in zip(sched.optimizer.param_groups, lrs):
        g["lr"] = lr
    sched._last_lr = lrs


def _restore(args, model, opt, sched, scaler, generators):
    try:
        restored = checkpoint.load(args.resume, model, opt, sched, generators=generators)
        # a disabled scaler (bf16, fp32) ignores it; an fp16 run's checkpoint must hold it
        scaler.load_state_dict(restored["extra"].get("grad_scaler", {}))
        return restored
    except (SafetensorsError, KeyError, TypeError, ValueError, RuntimeError) as e:
        raise UsageError(f"--resume {args.resume}: can't restore it ({type(e).__name__}: {e})") from None


def train(args):
    # launched as several ranks (or with --sync-every/--diloco): data parallel, data_parallel.py
    ranks = Ranks.join(args)
    try:
        if args.dataset in LM_DATASETS:
            from .train_language_model import train_language_model
            return train_language_model(args, ranks)
        return _train_images(args, ranks)
    finally:
        out_folder.unlock()
        ranks.close()


def _train_images(args, ranks):
    refuse_foreign_flags(args, False)
    # every check that can refuse the command comes before anything is written
    state = resolve(args)
    ranks.resolve(args, state)
    data_dir = data_folder(args.data_dir, state and recorded_run(state).get("data_dir"))
    if state is not None and state["epoch"] >= args.epochs:
        print(f"nothing left to train: {args.resume} has trained all {args.epochs} epochs of its run "
              f"(--epochs counts the run's total: pass more than {state['epoch']} to train further)")
        return 0
    if args.out is None:
        args.out = default_out(args)
    out, stale = out_folder.check(args, state["epoch"] if state else 0)
    config = model_config(args)
    manual_seed(args.seed)
    train_ds, test_ds = load_splits(args.dataset, data_dir, args.limit, args.test_limit)
    model = build_model(config).to(args.device)
    opt = ranks.optimizer(build_optimizer(args.optimizer, model.parameters(), args.lr, args.weight_decay), args)
    shuffle_gen = Generator().manual_seed(args.seed)
    generators, augment = [shuffle_gen], None
    if args.dataset == "cifar10":
        # the usual CIFAR augmentation, drawn on the batch's device from its own seeded generator
        aug_gen = Generator(args.device).manual_seed(ranks.seed(args.seed) + 1)
        augment = Compose([RandomCrop(32, padding=4, generator=aug_gen),
                           RandomHorizontalFlip(generator=aug_gen)])
        generators.append(aug_gen)
    # the loader only draws each epoch's order: batches are gathered from tensors on the device
    loader = DataLoader(train_ds, batch_size=args.batch_size, shuffle=True, generator=shuffle_gen)
    if ranks.world > 1:     # each rank its share of the epoch's order, in batches of its share
        loader = DataLoader(train_ds, batch_size=args.batch_size // ranks.world, sampler=DistributedSampler(
            train_ds, ranks.world, ranks.rank, shuffle=True, seed=args.seed))
    total_steps = args.epochs * len(loader)
    # cosine decay to zero over the whole run, stepped every batch
    sched = optim.lr_scheduler.CosineAnnealingLR(opt, T_max=total_steps) \
        if args.schedule == "cosine" else None
    scaler = grad_scaler(args.precision, args.device)
    train_model = ranks.wrap(model, opt, args)
    records, start_epoch, ckpt = [], 0, None
    if state is not None:
        restored = _restore(args, model, ranks.checkpointed(opt), sched, scaler, generators)
        start_epoch = restored["epoch"]
        ranks.restore(restored["extra"], generators, start_epoch)
        _follow_new_length(sched, total_steps)
        records, ckpt = state["extra"].get("records", [])[:start_epoch], args.resume
        print(f"resumed from {args.resume} at epoch {start_epoch}")
    if ranks.main:
        out_folder.lock(out)
        out, stale = out_folder.check(args, start_epoch)    # again, under the lock: another run may have written
        out_folder.remove(stale)
    run = ranks.record(run_record(args, data_dir), args)
    n_params = sum(p.numel() for p in model.parameters())
    jitted = args.jit and args.device != "cpu"
    print(f"training {describe(config)} ({n_params:,} parameters) on {len(train_ds):,} "
          f"{DATASET_NAMES[args.dataset]} images, device {args.device}, "
          f"{describe_precision(args.precision)}"
          f"{', one CUDA graph per step (pg.jit)' if jitted else ''}{ranks.describe(args)}")
    images, labels = on_device(train_ds, args.device)
    test_tensors = on_device(test_ds, args.device)
    watch = LossWatch(args.device)
    train_step = make_step(train_model, opt, images, labels, augment, watch, args.precision, scaler)
    if jitted:
        train_step = jit(train_step)
    batch, plotted = loader.batch_size, True
    for epoch in range(start_epoch, args.epochs):
        model.train()
        bar = Progress(len(loader), desc=f"epoch {epoch + 1}/{args.epochs}", stream=ranks.progress_stream())
        t0, seen = time.perf_counter(), 0
        watch.new_epoch()
        if ranks.world > 1:
            loader.sampler.set_epoch(epoch)
        order = tensor(loader._order(), device=args.device)        # (N,) this epoch's order
        try:
            for step, start in enumerate(range(0, len(order), batch), 1):
                train_step(order[start:start + batch])
                ranks.after_step()
                if sched is not None:
                    sched.step()
                seen = min(start + batch, len(order))
                if bar.due(step):   # the only host reads of the loop: a few per second at most
                    bar.update(step, seen * ranks.world, loss=watch.checked_loss(seen, epoch, len(loader), ckpt))
        finally:    # an error then starts on a line of its own
            bar.close()
        ranks.synchronize()
        train_seconds = time.perf_counter() - t0
        seen *= ranks.world                 # every rank saw as many (DistributedSampler pads)
        ranks.sum_(watch.loss_sum)
        train_loss = watch.checked_loss(seen, epoch, len(loader), ckpt)
        if not weights_finite(model):
            raise Diverged(f"the weights became non-finite in epoch {epoch + 1} (after its last "
                           f"step); stopped without saving it, {kept(ckpt)}")
        acc = ranks.accuracy(evaluate, model, test_ds, args.device, args.precision, test_tensors)
        rec = {"epoch": epoch + 1, "train_loss": train_loss, "test_accuracy": acc,
               "seconds": round(time.perf_counter() - t0, 3), "train_seconds": round(train_seconds, 3),
               "samples_per_second": round(seen / train_seconds, 1)}
        records.append(rec)
        print(f"epoch {epoch + 1}: train loss {rec['train_loss']:.4f}, test accuracy {100 * acc:.2f}%, "
              f"{rec['seconds']:.1f}s")
        ckpt = checkpoint_path(out, epoch + 1)
        ranks.before_checkpoint(opt)
        if not ranks.main:
            continue
        checkpoint.save(ckpt, model, ranks.checkpointed(opt), sched, step=(epoch + 1) * len(loader),
                        epoch=epoch + 1, extra={"config": config, "run": run, "records": records,
                                                "grad_scaler": scaler.state_dict(), **ranks.scheme_state()},
                        generators=generators)
        out_folder.write_records(records, out / "metrics.jsonl")
        plotted = plot_curves(records, out / "curves.png")
    if not plotted:
        print('note: curves.png not written (install matplotlib: pip install "paragrad[plot]")')
    final = records[-1]
    print(f"done: {final['epoch']} epochs, test accuracy {100 * final['test_accuracy']:.2f}%, "
          f"last checkpoint {ckpt}, metrics {out / 'metrics.jsonl'}")
    return 0
