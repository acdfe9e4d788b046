"""torchvision.models' resnet18 and resnet34 builders (paragrad.vision.models): torchvision's
parameter counts and keyword arguments, zero_init_residual, and the refusals (pretrained
weights, which paragrad does not download; the variants' arguments) naming what was asked."""
import pytest

from paragrad.vision import models


@pytest.mark.parametrize("make,classes,count", [
    (models.resnet18, 1000, 11_689_512), (models.resnet18, 10, 11_181_642), (models.resnet34, 1000, 21_797_672)])
def test_resnet_builders_have_torchvisions_parameter_counts(make, classes, count):
    m = make(num_classes=classes)
    assert sum(p.numel() for p in m.parameters()) == count
    assert tuple(m.fc.weight.shape) == (classes, 512) and len(m.layer3) == (2 if make is models.resnet18 else 6)


def test_zero_init_residual_zeroes_each_blocks_last_norm():
    m = models.resnet18(zero_init_residual=True)
    blocks = [b for layer in (m.layer1, m.layer2, m.layer3, m.layer4) for b in layer]
    assert all(float(b.bn2.weight.abs().sum()) == 0 for b in blocks)
    assert all(float(b.bn1.weight.sum()) == b.bn1.weight.numel() for b in blocks)
    assert float(models.resnet18().layer1[0].bn2.weight.sum()) == 64


def test_pretrained_weights_and_other_variants_are_refused_by_name():
    with pytest.raises(RuntimeError, match=r"resnet18: weights='IMAGENET1K_V1' would be downloaded.*load_state_dict"):
        models.resnet18(weights="IMAGENET1K_V1")
    with pytest.raises(TypeError, match="resnet34: paragrad takes num_classes, zero_init_residual; got groups, norm_layer"):
        models.resnet34(groups=2, norm_layer=None)
    with pytest.raises(TypeError):
        models.resnet18("IMAGENET1K_V1")        # keyword-only, as torchvision's
