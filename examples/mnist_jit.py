"""The MNIST loop of mnist.py made fast on a GPU: the whole training step (forward under bf16
autocast, backward, Adam) captured as one CUDA graph by pg.jit, and the dataset on the device
so that a step is an index into it, not a copy from the host. On the CPU the same code runs
eagerly (pg.jit has nothing to capture there).

    python examples/mnist_jit.py --data-dir ../shared/data [--epochs 3] [--limit N]
"""
import argparse

import paragrad as pg
import paragrad.nn.functional as F
from paragrad import nn
from paragrad.data import MNIST


def main():
    p = argparse.ArgumentParser(description="MNIST with the training step as one CUDA graph.")
    p.add_argument("--data-dir", default=None, help="folder holding mnist/ (default: $PARAGRAD_DATA)")
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--limit", type=int, default=None, help="train and test on the first N images")
    p.add_argument("--device", default="cuda" if pg.cuda.is_available() else "cpu")
    args = p.parse_args()
    device, batch = args.device, 64

    pg.manual_seed(0)
    train, test = MNIST(args.data_dir, train=True), MNIST(args.data_dir, train=False)
    if args.limit:
        train.subset(args.limit), test.subset(args.limit)
    images, labels = train.images.to(device), train.targets.to(device)      # (N, 1, 28, 28), (N,)
    model = nn.Sequential(nn.Flatten(), nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 10)).to(device)
    optimizer = pg.optim.Adam(model.parameters(), lr=1e-3)     # (its step counter lives on the device)

    @pg.jit
    def train_step(idx):                # idx (batch,) int64 on the device: the graph's one input
        x, y = images[idx], labels[idx]
        with pg.autocast(device_type=device, dtype=pg.bfloat16):
            loss = F.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        return loss                     # (the same tensor each replay: read it before the next)

    for epoch in range(1, args.epochs + 1):
        model.train()
        order = pg.randperm(len(train), device=device)
        for start in range(0, len(train) - batch + 1, batch):      # whole batches: one graph
            loss = train_step(order[start:start + batch])
        model.eval()
        with pg.no_grad():
            predicted = model(test.images.to(device)).argmax(1)
        accuracy = 100 * (predicted == test.targets.to(device)).float().mean().item()
        print(f"epoch {epoch}: last batch loss {loss.item():.4f}, test accuracy {accuracy:.2f}%")


if __name__ == "__main__":
    main()
