"""A character-level GPT trained on Tiny Shakespeare and sampled: nanoGPT's model
(paragrad.models.GPT, its parameter names), AdamW, gradient clipping, a validation loss and a
sample. The defaults train for a minute on a CPU; --device cuda runs each step as one CUDA
graph (pg.jit) in bf16.

    python examples/gpt.py --data-dir ../shared/data [--steps 300] [--device cpu|cuda]
"""
import argparse

import paragrad as pg
from paragrad.data import language_model_data
from paragrad.models.gpt import GPT, GPTConfig


def main():
    p = argparse.ArgumentParser(description="Train a small GPT on Tiny Shakespeare, then sample from it.")
    p.add_argument("--data-dir", default=None, help="folder holding tinyshakespeare/ (default: $PARAGRAD_DATA)")
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--block-size", type=int, default=64)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--width", type=int, default=64)
    p.add_argument("--device", default="cuda" if pg.cuda.is_available() else "cpu")
    args = p.parse_args()
    device, B, T = args.device, args.batch_size, args.block_size

    pg.manual_seed(0)
    tokenizer, train, val = language_model_data("shakespeare", args.data_dir)
    config = GPTConfig(block_size=T, vocab_size=tokenizer.vocab_size, n_layer=args.layers, n_head=4,
                       n_embd=args.width, dropout=0.0, bias=False)
    model = GPT(config).to(device)
    optimizer = pg.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.1)
    print(f"{model.get_num_params() / 1e3:.0f}k parameters, {len(train)} training tokens, on {device}")

    @pg.jit
    def train_step(x, y):               # x, y (B, T) int64 token ids, y one token later
        with pg.autocast(device_type=device, dtype=pg.bfloat16, enabled=device != "cpu"):
            _, loss = model(x, y)
        optimizer.zero_grad()
        loss.backward()
        pg.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        return loss

    for step in range(1, args.steps + 1):
        x, y = train.get_batch(B, T)
        loss = train_step(x.to(device), y.to(device))
        if step % 100 == 0 or step == args.steps:
            print(f"step {step}: loss {loss.item():.3f}")

    model.eval()
    with pg.no_grad():
        losses = [model(*(t.to(device) for t in val.get_batch(B, T)))[1].item() for _ in range(10)]
        print(f"val loss {sum(losses) / len(losses):.3f}")
        start = pg.tensor([tokenizer.encode("ROMEO:")], device=device)         # (1, 6)
        out = model.generate(start, max_new_tokens=200, temperature=0.8, top_k=20)
    print(tokenizer.decode(out[0].tolist()))


if __name__ == "__main__":
    main()
