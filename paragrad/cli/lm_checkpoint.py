"""A language model back from its checkpoint: the GPT its config describes, its weights, and the
tokenizer.json `paragrad train` wrote in the same folder (the ids the weights know). A run on
random tokens has no tokenizer: its checkpoints are for --resume only."""
from __future__ import annotations

from pathlib import Path

from ..autograd import no_grad
from ..io import checkpoint
from ..io.safetensors import SafetensorsError
from ..nn import Parameter
from ..text import fingerprint, load_tokenizer
from .arguments import UsageError
from .lm_config import RANDOM_TOKENS, build_gpt, check_config
from .lm_preset import model_vocab_size
from .run_config import read_train_state

TOKENIZER = "tokenizer.json"


def load_language_model(path, device, padded_rows=False):
    """(model in eval mode on `device`, tokenizer, training state) of checkpoint `path`;
    UsageError naming the file that is missing or doesn't fit. A vocabulary padded past the
    tokenizer's (--model gpt2's 50304 rows) is cut back to the tokenizer's ids, so that sampling
    draws only ids that have text, unless padded_rows (evaluate: the loss the run computed)."""
    state = read_train_state(path, "checkpoint")
    config = state["extra"]["config"]
    if config.get("model") != "gpt":
        raise UsageError(f"checkpoint {path}: a {config.get('model')} model, not a language model "
                         f"(paragrad train shakespeare|tinystories writes those)")
    if config.get("dataset") == RANDOM_TOKENS:
        raise UsageError(f"checkpoint {path}: trained on random tokens (paragrad train {RANDOM_TOKENS}, "
                         f"a speed measurement): its ids stand for no text and it has no tokenizer, "
                         f"so there is nothing to generate or evaluate; only --resume takes it")
    check_config(path, state, "checkpoint")
    tokenizer = run_tokenizer(path, state, "checkpoint")
    try:
        model = build_gpt(config).to(device)
        checkpoint.load(path, model)
    except (SafetensorsError, KeyError, TypeError, ValueError, RuntimeError) as e:
        raise UsageError(f"checkpoint {path}: can't load it ({type(e).__name__}: {e})") from None
    if not padded_rows:
        _cut_padded_rows(model, tokenizer.vocab_size)
    model.eval()
    return model, tokenizer, state


def _cut_padded_rows(model, vocab_size):
    """Keep the (tied) embedding's and head's first vocab_size rows: the padding rows were never
    a target, so an id of theirs has no text. For sampling, the same as masking their logits."""
    head = model.lm_head
    if head.weight.shape[0] > vocab_size:
        with no_grad():
            kept = Parameter(head.weight[:vocab_size].contiguous())     # (vocab_size, n_embd)
        head.weight = model.transformer.wte.weight = kept


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
    # (--model gpt2 pads the model's vocabulary past the tokenizer's: lm_preset.model_vocab_size)
    preset, model_vocab = state["extra"].get("run", {}).get("preset"), state["extra"]["config"]["vocab_size"]
    if model_vocab_size(preset, tokenizer.vocab_size) != model_vocab:
        padded = f" (padded to {model_vocab_size(preset, tokenizer.vocab_size)} by --model {preset})" \
            if preset else ""
        raise UsageError(f"{source} {path}: {tpath} has {tokenizer.vocab_size} tokens{padded}, the model "
                         f"{model_vocab}")
    return tokenizer
