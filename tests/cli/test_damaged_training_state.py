"""A training state that lies (hand-edited or damaged) is refused in one line with exit code 2,
before anything is built from it: a config is checked against the weights' own header."""
import time

import pytest

from tests.cli.helpers import copy_lm_checkpoint, edit_train_state, refused, train_mnist

_COMMANDS = {"evaluate": ["evaluate"], "generate": ["generate", "--max-new-tokens", "5"],
             "resume": ["train", "shakespeare", "--max-iters", "60", "--resume"]}


def _set(name, value):
    def edit(state):
        state["extra"]["config"][name] = value
        state["extra"]["run"][name] = value
    return edit


@pytest.mark.parametrize("command", _COMMANDS)
@pytest.mark.parametrize("name, value, naming", [
    ("n_layer", 10 ** 9, "n_layer 1000000000, its weights"),
    ("block_size", 10 ** 12, "block_size 1000000000000, its weights"),
    ("n_embd", 32, "n_embd 32, its weights"),
    ("vocab_size", 7, "vocab_size 7, its weights"),
    ("n_head", 3, "n_embd 16 is not a multiple of its n_head 3"),
    ("n_layer", "many", "n_layer is many, not a positive integer"),
    ("dropout", 2.0, "dropout 2.0"),
])
def test_a_config_that_does_not_describe_the_weights_is_refused_at_once(
        shakespeare_run, tmp_path, capsys, command, name, value, naming):
    ckpt = copy_lm_checkpoint(shakespeare_run, tmp_path / "run")
    edit_train_state(ckpt, _set(name, value))
    t0 = time.perf_counter()
    refused(capsys, *_COMMANDS[command], ckpt, naming=[str(ckpt), naming])
    assert time.perf_counter() - t0 < 5          # nothing of the claimed size was built


@pytest.mark.parametrize("field, value", [("step", "abc"), ("step", -3), ("epoch", 1.5), ("step", True)])
def test_a_step_or_epoch_that_is_not_a_count_is_refused(shakespeare_run, tmp_path, capsys, field, value):
    ckpt = copy_lm_checkpoint(shakespeare_run, tmp_path / "run")
    edit_train_state(ckpt, lambda state: state.__setitem__(field, value))
    for command in _COMMANDS.values():
        refused(capsys, *command, ckpt, naming=[str(ckpt), f"records {field} {value!r}, not a count"])


def test_an_unknown_dataset_in_a_config_is_refused(tmp_path, capsys):
    out = tmp_path / "run"
    assert train_mnist(out, "--epochs", "1") == 0
    ckpt = out / "epoch1.safetensors"
    edit_train_state(ckpt, lambda state: state["extra"]["config"].__setitem__("dataset", "imagenet"))
    refused(capsys, "evaluate", ckpt, naming=[str(ckpt), "dataset 'imagenet'", "mnist, cifar10"])
    refused(capsys, "train", "mnist", "--resume", ckpt, "--epochs", "2", naming=["dataset 'imagenet'"])
