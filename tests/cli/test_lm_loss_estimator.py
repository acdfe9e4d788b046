"""LossEstimator, the language-model evaluation of `paragrad train` and `paragrad evaluate`: the
same seeded windows at every call; on CUDA each batch replays a captured graph (gpu), with the
losses of the eager evaluation."""
import numpy as np
import pytest

import paragrad as pg
from paragrad.cli.lm_evaluate import LossEstimator
from paragrad.models import GPT, GPTConfig


def _model_and_splits(device):
    pg.manual_seed(0)
    model = GPT(GPTConfig(block_size=16, vocab_size=20, n_layer=1, n_head=2, n_embd=16, dropout=0.1)).to(device)
    rng = np.random.default_rng(0)
    splits = {name: pg.tensor(rng.integers(0, 20, 300), device=device) for name in ("train", "val")}
    return model, splits


def test_every_evaluation_sees_the_same_batches():
    model, splits = _model_and_splits("cpu")
    estimator = LossEstimator(model, splits, 4, 16, 3, "fp32", 7)
    first = estimator.estimate()
    assert model.training
    assert estimator.estimate() == first
    other = LossEstimator(model, splits, 4, 16, 3, "fp32", 8).estimate()     # another seed, other windows
    assert other["val"] != first["val"]


@pytest.mark.gpu
@pytest.mark.parametrize("precision", ["fp32", "bf16"])
def test_jitted_evaluation_on_cuda_equals_the_eager_one(precision):
    model, splits = _model_and_splits("cuda")
    eager = LossEstimator(model, splits, 4, 16, 5, precision, 7).estimate()
    jitted = LossEstimator(model, splits, 4, 16, 5, precision, 7, jitted=True)
    for _ in range(3):          # eager call, capture, replays
        got = jitted.estimate()
        for name in eager:
            assert got[name] == pytest.approx(eager[name], rel=1e-6, abs=1e-6), name
    with pg.no_grad():          # the model learnt in between: the replays see its new weights
        for p in model.parameters():
            p.mul_(0.5)
    assert jitted.estimate()["val"] == pytest.approx(LossEstimator(model, splits, 4, 16, 5, precision, 7).estimate()["val"],
                                                     rel=1e-6, abs=1e-6)
