"""A tiny PyTorch training script, run unmodified by both torch and `paragrad run`.

The weights and data come from arange/sin/cos rather than a seeded generator (the two frameworks'
random streams differ), and batches come in order, so both runs take the same steps."""
import math
import sys

import torch
import torch.nn.functional as F
from torch import nn
from torch.optim.lr_scheduler import StepLR
from torch.utils.data import DataLoader, SequentialSampler, TensorDataset

torch.manual_seed(0)
torch.backends.cudnn.benchmark = False
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def tanh_gelu(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(8, 16)
        self.fc2 = nn.Linear(16, 16)
        self.head = nn.Linear(16, 3)

    def forward(self, x):                       # (B, 8) -> (B, 3)
        x = torch.tanh(self.fc1(x))
        x = tanh_gelu(self.fc2(x))
        return self.head(F.dropout(x, p=0.0, training=self.training))


n = 64
x = torch.cos(torch.arange(n * 8, dtype=torch.float32) * 0.37).reshape(n, 8)
y = (3 * x[:, 0] + x[:, 1] > 0).long() + (x[:, 2] > 0.5).long()
dataset = TensorDataset(x, y)
loader = DataLoader(dataset, batch_size=16, sampler=SequentialSampler(dataset))

model = MLP().to(device)
with torch.no_grad():
    for k, p in enumerate(model.parameters()):
        p.copy_(0.3 * torch.sin(torch.arange(p.numel(), dtype=torch.float32) * 1.7 + k).reshape(p.shape))
assert all(isinstance(p, torch.Tensor) and p.dtype == torch.float32 for p in model.parameters())

optimizer = torch.optim.AdamW(model.parameters(), lr=0.02, betas=(0.9, 0.99), weight_decay=0.01)
scheduler = StepLR(optimizer, step_size=2, gamma=0.5)
losses = []
for epoch in range(5):
    model.train()
    for xb, yb in loader:
        xb, yb = xb.to(device), yb.to(device)
        loss = F.cross_entropy(model(xb), yb)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        losses.append(loss.item())
    scheduler.step()

model.eval()
with torch.no_grad():
    logits = model(x.to(device))
    eval_loss = F.cross_entropy(logits, y.to(device)).item()
    accuracy = (logits.argmax(dim=1) == y.to(device)).float().mean().item()
print("losses", " ".join(f"{v:.7f}" for v in losses))
print(f"eval loss {eval_loss:.7f} accuracy {accuracy:.4f} lr {scheduler.get_last_lr()[0]:.6f}")
sys.exit(0 if math.isfinite(eval_loss) else 1)
