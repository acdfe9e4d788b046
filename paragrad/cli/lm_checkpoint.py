"""A language model back from its checkpoint: the GPT its config describes, its weights, and the
tokenizer.json `paragrad train` wrote in the same folder (the ids the weights know)."""
from __future__ import annotations

from pathlib import Path

from ..io import checkpoint
from ..io.safetensors import SafetensorsError
from ..text import load_tokenizer
from .arguments import UsageError
from .lm_config import build_gpt
from .run_config import read_train_state


def load_language_model(path, device):
    """(model in eval mode on `device`, tokenizer, training state) of checkpoint `path`;
    UsageError naming the file that is missing or doesn't fit."""
    state = read_train_state(path, "checkpoint")
    config = state["extra"]["config"]
    if config.get("model") != "gpt":
        raise UsageError(f"checkpoint {path}: a {config.get('model')} model, not a language model "
                         f"(paragrad train shakespeare|tinystories writes those)")
    tpath = Path(path).parent / "tokenizer.json"
    if not tpath.is_file():
        raise UsageError(f"checkpoint {path}: its tokenizer {tpath} is missing (paragrad train "
                         f"writes it beside the checkpoint)")
    try:
        tokenizer = load_tokenizer(tpath)
        model = build_gpt(config).to(device)
        checkpoint.load(path, model)
    except (SafetensorsError, KeyError, TypeError, ValueError, RuntimeError) as e:
        raise UsageError(f"checkpoint {path}: can't load it ({type(e).__name__}: {e})") from None
    if tokenizer.vocab_size != config["vocab_size"]:
        raise UsageError(f"checkpoint {path}: {tpath} has {tokenizer.vocab_size} tokens, the model "
                         f"{config['vocab_size']}")
    model.eval()
    return model, tokenizer, state
