"""Reference models: shapes, and ResNet-18 against a torchvision-layout ResNet-18 written in torch.nn
(tests/torch_resnet.py: torchvision is not installed)."""
import numpy as np
import pytest
import torch
import torch.nn as tnn

import paragrad as pg
from paragrad.models import MLP, MNISTCNN, resnet18
from tests.torch_resnet import TorchResNet18


def _randomize_bn(tm, seed=0):
    # non-trivial running statistics and affine parameters, so eval mode really uses them
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for m in tm.modules():
            if isinstance(m, tnn.BatchNorm2d):
                m.weight.copy_(torch.rand(m.num_features, generator=g) + 0.5)
                m.bias.copy_(torch.randn(m.num_features, generator=g) * 0.1)
                m.running_mean.copy_(torch.randn(m.num_features, generator=g) * 0.1)
                m.running_var.copy_(torch.rand(m.num_features, generator=g) + 0.5)
                m.num_batches_tracked.fill_(3)


def _load_from_torch(pm, tm, dtype=np.float64):
    pm.load_state_dict({k: pg.tensor(v.detach().numpy().astype(dtype) if v.is_floating_point()
                                     else v.detach().numpy()) for k, v in tm.state_dict().items()})


def test_mnist_cnn_shapes_and_size():
    m = MNISTCNN()
    assert tuple(m(pg.randn(4, 1, 28, 28)).shape) == (4, 10)
    assert sum(p.numel() for p in m.parameters()) < 200_000   # trains on a small CPU


@pytest.mark.parametrize("stem,size,num_classes", [("imagenet", 64, 1000), ("cifar", 32, 10)])
def test_resnet18_forward_shapes(stem, size, num_classes):
    m = resnet18(num_classes=num_classes, stem=stem)
    assert tuple(m(pg.randn(2, 3, size, size)).shape) == (2, num_classes)


@pytest.mark.parametrize("stem", ["imagenet", "cifar"])
def test_resnet18_state_dict_keys_and_parameter_count(stem):
    pm, tm = resnet18(num_classes=10, stem=stem), TorchResNet18(num_classes=10, stem=stem)
    assert list(pm.state_dict().keys()) == list(tm.state_dict().keys())
    for k, v in pm.state_dict().items():
        assert tuple(v.shape) == tuple(tm.state_dict()[k].shape), k
    assert sum(p.numel() for p in pm.parameters()) == sum(p.numel() for p in tm.parameters())
    assert "layer2.0.downsample.0.weight" in pm.state_dict() and "layer1.0.downsample.0.weight" \
        not in pm.state_dict()
    # torchvision's order: scripts rebuild the network as Sequential(*list(model.children())[:-1])
    assert [n for n, _ in pm.named_children()] == [n for n, _ in tm.named_children()] == [
        "conv1", "bn1", "relu", "maxpool", "layer1", "layer2", "layer3", "layer4", "avgpool", "fc"]
    x = pg.randn(2, 3, 32, 32)
    trunk = pg.nn.Sequential(*list(pm.children())[:-1])
    np.testing.assert_allclose(pm.fc(trunk(x).flatten(1)).detach().numpy(), pm(x).detach().numpy(), rtol=1e-5, atol=1e-6)


def test_resnet18_unknown_stem():
    with pytest.raises(ValueError, match="stem"):
        resnet18(stem="tiny")


@pytest.mark.parametrize("stem,size", [("imagenet", 32), ("cifar", 8)])
def test_resnet18_matches_torch_weights_eval_float64(stem, size):
    torch.manual_seed(0)
    tm = TorchResNet18(num_classes=7, stem=stem).double()
    _randomize_bn(tm)
    tm.eval()
    pm = resnet18(num_classes=7, stem=stem).double()
    _load_from_torch(pm, tm)
    pm.eval()
    x = np.random.default_rng(0).standard_normal((2, 3, size, size))
    with torch.no_grad():
        want = tm(torch.tensor(x)).numpy()
    with pg.no_grad():
        got = pm(pg.tensor(x)).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-9)


def test_resnet18_train_mode_matches_torch_forward_and_grad():
    torch.manual_seed(1)
    tm = TorchResNet18(num_classes=5, stem="cifar").double()
    pm = resnet18(num_classes=5, stem="cifar").double()
    _load_from_torch(pm, tm)
    x = np.random.default_rng(1).standard_normal((3, 3, 8, 8))
    y = np.array([0, 3, 4])
    tl = torch.nn.functional.cross_entropy(tm(torch.tensor(x)), torch.tensor(y))
    tl.backward()
    pl = pg.nn.functional.cross_entropy(pm(pg.tensor(x)), pg.tensor(y))
    pl.backward()
    np.testing.assert_allclose(float(pl), float(tl.detach()), rtol=1e-9)
    tgrads = dict(tm.named_parameters())
    for name, p in pm.named_parameters():
        np.testing.assert_allclose(p.grad.numpy(), tgrads[name].grad.numpy(), rtol=1e-6, atol=1e-9,
                                   err_msg=name)
    np.testing.assert_allclose(pm.bn1.running_mean.numpy(), tm.bn1.running_mean.numpy(), rtol=1e-9)


@pytest.mark.parametrize("make,shape", [(lambda: resnet18(num_classes=10, stem="cifar"), (8, 3, 16, 16)),
                                        (MNISTCNN, (8, 1, 28, 28)),
                                        (lambda: MLP(784, (32,), 10), (8, 1, 28, 28))])
def test_one_training_step_reduces_loss(make, shape):
    pg.manual_seed(0)
    m = make()
    x, y = pg.randn(*shape), pg.randint(0, 10, (shape[0],))
    opt = pg.optim.SGD(m.parameters(), lr=0.05, momentum=0.9)
    losses = []
    for _ in range(2):
        loss = pg.nn.functional.cross_entropy(m(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(loss))
    assert losses[1] < losses[0], losses


def test_resnet_module_hooks_still_run():
    """ResNet blocks run batch norm, the skip add and ReLU as one op, calling no bn or relu
    module; with a hook on one, the block calls each (torchvision's form): the hook runs and the
    output is the same."""
    from paragrad.models import resnet18
    pg.manual_seed(0)
    model = resnet18(num_classes=10, stem="cifar")
    x = pg.randn(2, 3, 16, 16)
    plain = model(x).detach().numpy()
    seen = []
    model.layer1[0].bn2.register_forward_hook(lambda m, args, out: seen.append(tuple(out.shape)))
    model.relu.register_forward_hook(lambda m, args, out: seen.append("stem relu"))
    np.testing.assert_allclose(model(x).detach().numpy(), plain, rtol=1e-5, atol=1e-6)
    assert seen == ["stem relu", (2, 64, 16, 16)]
