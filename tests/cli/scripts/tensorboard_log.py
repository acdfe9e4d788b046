"""Logs to TensorBoard the way training scripts do; under `paragrad run` every call does nothing."""
import torch
from torch.utils.tensorboard import SummaryWriter
from torch.utils.tensorboard.writer import SummaryWriter as WriterAgain

assert WriterAgain is SummaryWriter
writer = SummaryWriter(log_dir="tb_runs")
model = torch.nn.Linear(3, 2)
for step in range(3):
    writer.add_scalar("loss/train", 1.0 / (step + 1), step)
    writer.add_scalars("loss", {"train": 1.0, "test": 2.0}, step)
    writer.add_histogram("weight", model.weight, step)
writer.add_text("note", "hello", 0)
writer.add_graph(model, torch.ones(1, 3))
writer.flush()
writer.close()
with SummaryWriter() as w:
    w.add_scalar("x", 1.0, 0)
print("logged")
