"""Data-parallel training with DistributedDataParallel, started on N processes by
`paragrad launch`: each rank trains on its own shard of MNIST (DistributedSampler) and the
gradients are averaged across ranks in backward, so every rank holds the same weights. MPI on
the CPU, NCCL with one GPU per rank.

    paragrad launch -n 2 -- python examples/ddp.py --data-dir ../shared/data [--epochs 1] [--limit N]
"""
import argparse

import paragrad as pg
import paragrad.distributed as dist
import paragrad.nn.functional as F
from paragrad import nn
from paragrad.data import MNIST, DataLoader, DistributedSampler
from paragrad.nn.parallel import DistributedDataParallel as DDP


def main():
    p = argparse.ArgumentParser(description="An MNIST MLP trained data-parallel; run under paragrad launch.")
    p.add_argument("--data-dir", default=None, help="folder holding mnist/ (default: $PARAGRAD_DATA)")
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--limit", type=int, default=None, help="train and test on the first N images")
    p.add_argument("--cuda", action="store_true", help="NCCL, one GPU per rank (else MPI on the CPU)")
    args = p.parse_args()

    dist.init_process_group("nccl" if args.cuda else "mpi")
    rank, world = dist.get_rank(), dist.get_world_size()
    device = f"cuda:{pg.cuda.current_device()}" if args.cuda else "cpu"
    pg.manual_seed(0)                   # the same initial weights on every rank (DDP also broadcasts rank 0's)
    train, test = MNIST(args.data_dir, train=True), MNIST(args.data_dir, train=False)
    if args.limit:
        train.subset(args.limit), test.subset(args.limit)
    model = DDP(nn.Sequential(nn.Flatten(), nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 10)).to(device))
    optimizer = pg.optim.Adam(model.parameters(), lr=1e-3)
    sampler = DistributedSampler(train, num_replicas=world, rank=rank, shuffle=True)

    for epoch in range(1, args.epochs + 1):
        sampler.set_epoch(epoch)        # a new shuffle each epoch, the same on every rank
        for x, y in DataLoader(train, batch_size=64, sampler=sampler):
            loss = F.cross_entropy(model(x.to(device)), y.to(device))
            optimizer.zero_grad()
            loss.backward()             # (the gradients are all-reduced here)
            optimizer.step()
        with pg.no_grad():
            accuracy = (model(test.images.to(device)).argmax(1) == test.targets.to(device)).float().mean()
        # every rank has the same weights: check it, then let rank 0 report
        total = accuracy.clone()
        dist.all_reduce(total)
        if rank == 0:
            same = abs(total.item() / world - accuracy.item()) < 1e-6
            print(f"epoch {epoch}: {world} ranks, test accuracy {100 * accuracy.item():.2f}% "
                  f"({'the same' if same else 'DIFFERENT'} on every rank)")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
