"""A language model back from its checkpoint: the GPT its config describes, its weights, and the
tokenizer.json `paragrad train` wrote in the same folder (the ids the weights know)."""
from __future__ import annotations

from pathlib import Path

from ..io import checkpoint
from ..io.safetensors import SafetensorsError
from ..text import fingerprint, load_tokenizer
from .arguments import UsageError
from .lm_config import build_gpt, check_config
from .run_config import read_train_state

TOKENIZER = "tokenizer.json"


def load_language_model(path, device):
    """(model in eval mode on `device`, tokenizer, training state) of checkpoint `path`;
    UsageError naming the file that is missing or doesn't fit."""
    state = read_train_state(path, "checkpoint")
    config = state["extra"]["config"]
    if config.get("model") != "gpt":
        raise UsageError(f"checkpoint {path}: a {config.get('model')} model, not a language model "
                         f"(paragrad train shakespeare|tinystories writes those)")
    check_config(path, state, "checkpoint")
    tokenizer = run_tokenizer(path, state, "checkpoint")
    try:
        model = build_gpt(config).to(device)
        checkpoint.load(path, model)
    except (SafetensorsError, KeyError, TypeError, ValueError, RuntimeError) as e:
        raise UsageError(f"checkpoint {path}: can't load it ({type(e).__name__}: {e})") from None
    model.eval()
    return model, tokenizer, state


def run_tokenizer(path, state, source):
    """The tokenizer.json beside checkpoint `path`: UsageError if it is missing, damaged, or not
    the one the checkpoint was trained with (its fingerprint, recorded at each save, differs: a
    permuted vocabulary would give silently wrong ids)."""
    tpath = Path(path).parent / TOKENIZER
    if not tpath.is_file():
        raise UsageError(f"{source} {path}: its tokenizer {tpath} is missing (paragrad train "
                         f"writes it beside the checkpoint)")
    try:
        tokenizer = load_tokenizer(tpath)
    except (ValueError, OSError) as e:
        raise UsageError(f"{source} {path}: {e}") from None
    recorded = state["extra"].get("tokenizer_sha256")      # (checkpoints before it was recorded: None)
    if recorded is not None and fingerprint(tokenizer) != recorded:
        raise UsageError(f"{source} {path}: {tpath} is not the tokenizer this checkpoint was trained "
                         f"with (its sha256 {fingerprint(tokenizer)[:12]}..., the checkpoint's "
                         f"{str(recorded)[:12]}...)")
    if tokenizer.vocab_size != state["extra"]["config"]["vocab_size"]:
        raise UsageError(f"{source} {path}: {tpath} has {tokenizer.vocab_size} tokens, the model "
                         f"{state['extra']['config']['vocab_size']}")
    return tokenizer
