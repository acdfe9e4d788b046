"""`paragrad train` reads no device value on the host per step: the learning-rate schedule,
the loss sum and the progress bar stay on the device, index and target bounds are known from
where the indices came from, and the host reads only where the bar redraws and at the end of
an epoch. Checked on the CPU with a stand-in device: the NumPy backend registered as 'cuda',
counting its host reads (to_numpy). Training twice as many steps must read exactly as often."""
from types import SimpleNamespace

import pytest

from tests.cli.helpers import run
from tests.data_paths import mnist_root
from tests.host_reads import counting_device  # noqa: F401  (a fixture)


@pytest.mark.parametrize("model,precision", [("mlp", "fp32"), ("cnn", "fp32"), ("mlp", "bf16"), ("cnn", "bf16")])
def test_training_loop_reads_the_device_a_fixed_number_of_times_per_epoch(counting_device, tmp_path, model,
                                                                          precision, monkeypatch):
    """SGD: Adam's fused update (the CUDA backend's, reading step counts on the device) has no
    stand-in here, and its unfused one reads each step count on the host, as PyTorch's. The bar's
    clock stands still: its timed redraws (one per 10 s) would otherwise count on a loaded machine."""
    monkeypatch.setattr("paragrad.cli.progress.time", SimpleNamespace(perf_counter=lambda: 0.0))
    reads = []
    for limit in (500, 1000):       # 10 and 20 steps
        counting_device.reads = 0
        assert run("train", "mnist", "--model", model, "--device", "cuda", "--no-jit", "--optimizer", "sgd",
                   "--precision", precision,
                   "--batch-size", "50", "--epochs", "1", "--limit", limit, "--test-limit", "100",
                   "--data-dir", mnist_root(), "--out", tmp_path / str(limit)) == 0
        reads.append(counting_device.reads)
    assert reads[0] == reads[1], f"host reads grow with the steps: {reads[0]} for 10 steps, {reads[1]} for 20"


def test_a_cifar10_resnet_step_with_augmentation_reads_nothing(counting_device):
    """The cifar10 run's step (ResNet-18, BatchNorm, random crop and flip drawn on the device,
    SGD with momentum and weight decay), run as `paragrad train cifar10` builds it."""
    import numpy as np

    import paragrad as pg
    from paragrad.cli.divergence import LossWatch
    from paragrad.cli.train import build_model, build_optimizer, make_step
    from paragrad.data.transforms import Compose, RandomCrop, RandomHorizontalFlip
    from paragrad.random import Generator
    model = build_model({"model": "resnet18", "dataset": "cifar10"}).to("cuda")
    opt = build_optimizer("sgd", model.parameters(), 0.1, 5e-4)
    generator = Generator("cuda").manual_seed(1)
    augment = Compose([RandomCrop(32, padding=4, generator=generator), RandomHorizontalFlip(generator=generator)])
    images, labels = pg.randn(16, 3, 32, 32).to("cuda"), pg.tensor(np.arange(16) % 10).to("cuda")
    order = pg.tensor(np.random.default_rng(0).permutation(16), device="cuda")   # as an epoch's order
    step = make_step(model, opt, images, labels, augment, LossWatch("cuda"))
    step(order[:4])                                 # the first step creates the optimizer's state
    counting_device.reads = 0
    for start in (4, 8, 12):
        step(order[start:start + 4])
    assert counting_device.reads == 0


@pytest.mark.parametrize("precision", ["fp32", "bf16"])
def test_a_language_model_step_reads_nothing(counting_device, precision):
    """`paragrad train shakespeare`'s step (windows drawn on the device, GPT forward and loss over
    two accumulated micro-batches, gradient clipping) as train_language_model builds it; SGD
    stands in for the fused AdamW."""
    import numpy as np

    import paragrad as pg
    from paragrad.cli.divergence import LossWatch
    from paragrad.cli.lm_config import build_gpt
    from paragrad.cli.precision import grad_scaler
    from paragrad.cli.train_language_model import make_step
    from paragrad.random import Generator
    args = SimpleNamespace(batch_size=4, block_size=8, precision=precision, grad_clip=1.0, grad_accum=2)
    model = build_gpt({"vocab_size": 20, "n_layer": 1, "n_head": 2, "n_embd": 16, "block_size": 8,
                       "dropout": 0.1, "bias": False}).to("cuda")
    opt = pg.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    tokens = pg.tensor(np.random.default_rng(0).integers(0, 20, 200)).to("cuda")
    watch = LossWatch("cuda")
    step = make_step(model, opt, args, Generator("cuda").manual_seed(1), grad_scaler(precision, "cuda"), watch)
    step(tokens)                                    # the first step creates the optimizer's state
    counting_device.reads = 0
    for _ in range(3):
        loss = step(tokens)
    assert counting_device.reads == 0
    assert 0 < float(loss) < 10
    assert watch.bad_step()[1] is None      # the watch saw the four losses
