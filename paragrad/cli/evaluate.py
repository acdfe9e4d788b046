"""`paragrad evaluate CHECKPOINT`: test accuracy of a saved model on its dataset's test split
(only that split is read), from the data folder the checkpoint was trained on unless
--data-dir or $PARAGRAD_DATA say otherwise. A language model's checkpoint gets its val loss."""
from __future__ import annotations

from ..io import checkpoint
from ..io.safetensors import SafetensorsError
from .arguments import UsageError
from .run_config import DATASET_NAMES, data_folder, read_train_state, recorded_run
from .train import build_model, evaluate, load_test_split


def evaluate_checkpoint(args):
    state = read_train_state(args.checkpoint, "checkpoint")
    run = recorded_run(state)
    if run.get("model") == "gpt":
        from .lm_evaluate import evaluate_lm_checkpoint
        return evaluate_lm_checkpoint(args, state)
    if args.eval_iters is not None:
        raise UsageError(f"--eval-iters is for language-model checkpoints, not {args.checkpoint}")
    data_dir = data_folder(args.data_dir, run.get("data_dir"))
    try:
        model = build_model(state["extra"]["config"])
        checkpoint.load(args.checkpoint, model)
    except (SafetensorsError, KeyError, TypeError, ValueError, RuntimeError) as e:
        raise UsageError(f"checkpoint {args.checkpoint}: can't load it ({type(e).__name__}: {e})") from None
    model.to(args.device)
    dataset = run.get("dataset", "mnist")
    test = load_test_split(dataset, data_dir)
    if args.limit:
        test.subset(args.limit)
    acc = evaluate(model, test, args.device, run["precision"])
    print(f"{args.checkpoint}: test accuracy {100 * acc:.2f}% on {len(test):,} "
          f"{DATASET_NAMES[dataset]} test images")
    return 0
