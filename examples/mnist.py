"""Your own MNIST training loop: paragrad.data.MNIST, a DataLoader, an MLP and Adam, with the
test accuracy after each epoch. The same code runs under PyTorch with `torch` for `paragrad`.

    python examples/mnist.py --data-dir ../shared/data [--epochs 3] [--limit N] [--device cpu|cuda]
"""
import argparse

import paragrad as pg
import paragrad.nn.functional as F
from paragrad import nn
from paragrad.data import MNIST, DataLoader


def main():
    p = argparse.ArgumentParser(description="An MLP on MNIST, in a loop of your own.")
    p.add_argument("--data-dir", default=None, help="folder holding mnist/ (default: $PARAGRAD_DATA)")
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--limit", type=int, default=None, help="train and test on the first N images")
    p.add_argument("--device", default="cuda" if pg.cuda.is_available() else "cpu")
    args = p.parse_args()

    pg.manual_seed(0)
    train, test = MNIST(args.data_dir, train=True), MNIST(args.data_dir, train=False)
    if args.limit:
        train.subset(args.limit), test.subset(args.limit)
    model = nn.Sequential(nn.Flatten(), nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 10)).to(args.device)
    optimizer = pg.optim.Adam(model.parameters(), lr=1e-3)

    for epoch in range(1, args.epochs + 1):
        model.train()
        for x, y in DataLoader(train, batch_size=64, shuffle=True):      # x (64, 1, 28, 28), y (64,)
            x, y = x.to(args.device), y.to(args.device)
            loss = F.cross_entropy(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        model.eval()
        correct = 0
        with pg.no_grad():
            for x, y in DataLoader(test, batch_size=1000):
                correct += (model(x.to(args.device)).argmax(1) == y.to(args.device)).sum().item()
        print(f"epoch {epoch}: last batch loss {loss.item():.4f}, test accuracy {100 * correct / len(test):.2f}%")


if __name__ == "__main__":
    main()
