"""pytorch/examples' dcgan/main.py (bench/third_party/dcgan/, unmodified: a DCGAN's generator of
ConvTranspose2d / BatchNorm2d / ReLU and its discriminator of strided convolutions with
LeakyReLU, BCELoss, two Adams, torchvision's FakeData, a two-worker shuffled DataLoader,
save_image and torch.save each epoch) on its fake dataset under `paragrad run` on the CPU,
beside real PyTorch through tests/cli/scripts/mnist_same_draws.py (the same weights, noise,
batches and fake images, drawn from NumPy). The first step agrees to float32 rounding; after it
Adam's first steps, lr * g / |g| where g is near zero, let rounding move weights by a whole
step, and the adversarial game grows that, so the curves are compared as curves. Its MNIST
option (Resize(64) on each digit) runs a dry run."""
import re
import statistics

import pytest

import paragrad as pg

from . import script_runs
from .test_mnist_example import SAME_DRAWS, _layout
from .test_public_scripts import REPO

MAIN = REPO / "bench" / "third_party" / "dcgan" / "main.py"
LINE = (r"\[0/1\]\[(\d+)/16\] Loss_D: ([\d.]+) Loss_G: ([\d.]+) D\(x\): ([\d.]+) "
        r"D\(G\(z\)\): ([\d.]+) / ([\d.]+)")


def test_dcgan_example_trains_like_pytorch_and_saves_its_models(tmp_path):
    args = [SAME_DRAWS, MAIN, "--dataset", "fake", "--niter", "1", "--batchSize", "64", "--workers", "2",
            "--ngf", "16", "--ndf", "16", "--manualSeed", "1", "--outf", "out"]
    for fw in ("paragrad", "torch"):
        (tmp_path / fw).mkdir()
    procs = {fw: script_runs.start(fw, args, tmp_path / fw) for fw in ("paragrad", "torch")}   # side by side
    outs = {fw: script_runs.finish(fw, proc) for fw, proc in procs.items()}
    rows = {fw: [[float(v) for v in m[1:]] for m in re.findall(LINE, out)] for fw, out in outs.items()}
    ours, theirs = rows["paragrad"], rows["torch"]
    assert len(ours) == len(theirs) == 16, outs["paragrad"]         # 1,000 fake images, batches of 64
    assert ours[0] == pytest.approx(theirs[0], rel=1e-4), (ours[0], theirs[0])
    for a, b in zip(ours[:4], theirs[:4]):
        assert a == pytest.approx(b, rel=1e-3), (a, b)
    for column in range(5):        # Loss_D, Loss_G, D(x), D(G(z)) before and after D's step
        assert statistics.mean(r[column] for r in ours) == pytest.approx(
            statistics.mean(r[column] for r in theirs), rel=0.03), column
    out = tmp_path / "paragrad" / "out"
    assert {p.name for p in out.iterdir()} == {"real_samples.png", "fake_samples_epoch_000.png",
                                               "netG_epoch_0.pth", "netD_epoch_0.pth"}
    generator = pg.load(out / "netG_epoch_0.pth")
    assert tuple(generator["main.0.weight"].shape) == (100, 128, 4, 4)      # nz -> ngf * 8
    assert tuple(generator["main.12.weight"].shape) == (16, 3, 4, 4)        # ngf -> 3 channels


def test_dcgan_example_dry_run_on_mnist(tmp_path):
    """Its MNIST option: torchvision's MNIST with Resize(64) on each PIL digit, one channel."""
    work = _layout(tmp_path, train=64, test=10)
    out = script_runs.run("paragrad", [MAIN, "--dataset", "mnist", "--dataroot", "../data", "--dry-run",
                                       "--workers", "0", "--batchSize", "16", "--ngf", "8", "--ndf", "8",
                                       "--outf", "out"], work)
    (row,) = re.findall(LINE.replace("16", r"\d+"), out)
    assert all(float(v) > 0 for v in row[1:]), out
    generator = pg.load(work / "out" / "netG_epoch_0.pth")
    assert tuple(generator["main.12.weight"].shape) == (8, 1, 4, 4)        # ngf -> 1 channel
