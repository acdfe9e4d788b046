"""curves.png: training loss and test accuracy per epoch, or a language model's train and val loss
per evaluation (needs matplotlib: paragrad[plot])."""
from __future__ import annotations

import io

from ..io.atomic_write import atomic_write


def _pyplot():
    """matplotlib.pyplot drawing to files only, or None when matplotlib is not installed."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    return plt


def _save(plt, fig, path):
    """Atomically, as the checkpoints: a kill mid-write leaves the previous plot."""
    fig.tight_layout()
    png = io.BytesIO()
    fig.savefig(png, format="png", dpi=100)
    plt.close(fig)
    atomic_write(path, [png.getvalue()])
    return True


def plot_curves(records, path):
    """Write the plot; returns False (and writes nothing) when matplotlib is not installed."""
    plt = _pyplot()
    if plt is None:
        return False
    epochs = [r["epoch"] for r in records]
    fig, (a, b) = plt.subplots(1, 2, figsize=(9, 3.5))
    a.plot(epochs, [r["train_loss"] for r in records], marker="o")
    a.set(xlabel="epoch", ylabel="train loss", title="training loss")
    b.plot(epochs, [100 * r["test_accuracy"] for r in records], marker="o", color="tab:green")
    b.set(xlabel="epoch", ylabel="test accuracy (%)", title="test accuracy")
    for ax in (a, b):
        ax.grid(alpha=0.3)
        ax.set_xticks(epochs)
    return _save(plt, fig, path)


def plot_lm_curves(records, path):
    """A language-model run's curves.png: train and val loss per evaluation iteration; False
    (nothing written) without matplotlib."""
    plt = _pyplot()
    if plt is None:
        return False
    iters = [r["iter"] for r in records]
    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.plot(iters, [r["train_loss"] for r in records], marker="o", label="train")
    ax.plot(iters, [r["val_loss"] for r in records], marker="o", label="val")
    ax.set(xlabel="iteration", ylabel="loss", title="train and val loss")
    ax.grid(alpha=0.3)
    ax.legend()
    return _save(plt, fig, path)
