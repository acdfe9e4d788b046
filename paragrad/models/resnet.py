"""ResNet-18 and -34 with torchvision's layout and attribute names, so state_dict keys and
children() match torchvision.models.resnet18/34 (and its weights load directly)."""
from __future__ import annotations

from .. import nn
from ..nn.module import untouched

_STEMS = ("imagenet", "cifar")


class BasicBlock(nn.Module):
    """ResNet's basic block: relu(bn2(conv2(relu(bn1(conv1(x))))) + identity), two 3x3 convs, the
    identity through downsample when given; as torchvision.models.resnet.BasicBlock.
    Takes only inplanes, planes, stride and downsample (not torchvision's groups, base_width,
    dilation and norm_layer)."""

    expansion = 1

    def __init__(self, inplanes, planes, stride=1, downsample=None):
        super().__init__()
        self.conv1 = nn.Conv2d(inplanes, planes, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.relu = nn.ReLU()       # (run inside the batch norms while untouched: see forward)
        self.conv2 = nn.Conv2d(planes, planes, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.downsample = downsample
        self.stride = stride

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        if not untouched((self.bn1, nn.BatchNorm2d), (self.relu, nn.ReLU), (self.bn2, nn.BatchNorm2d)):
            # torchvision's, each module called
            out = self.relu(self.bn1(self.conv1(x)))
            return self.relu(self.bn2(self.conv2(out)) + identity)
        # each normalization with what follows it as one op: one pass over the activations, not three
        out = self.bn1.forward_relu(self.conv1(x))
        return self.bn2.forward_relu(self.conv2(out), identity)


class ResNet(nn.Module):
    """torchvision's ResNet with BasicBlocks. stem="imagenet": 7x7/2 conv + 3x3/2 max pool (for
    224x224 inputs); stem="cifar": 3x3/1 conv and no pool (for 32x32 inputs; `maxpool` is then an
    Identity, which holds no state, so the keys stay torchvision's)."""

    def __init__(self, layers=(2, 2, 2, 2), num_classes=1000, stem="imagenet", in_channels=3,
                 zero_init_residual=False):
        super().__init__()
        if stem not in _STEMS:
            raise ValueError(f"ResNet: unknown stem {stem!r}; expected one of {list(_STEMS)}")
        self.inplanes = 64
        # (children in torchvision's order: scripts rebuild the network from list(children()))
        if stem == "imagenet":
            self.conv1 = nn.Conv2d(in_channels, 64, 7, stride=2, padding=3, bias=False)
        else:
            self.conv1 = nn.Conv2d(in_channels, 64, 3, stride=1, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.relu = nn.ReLU()
        self.maxpool = nn.MaxPool2d(3, stride=2, padding=1) if stem == "imagenet" else nn.Identity()
        self.layer1 = self._make_layer(64, layers[0])
        self.layer2 = self._make_layer(128, layers[1], stride=2)
        self.layer3 = self._make_layer(256, layers[2], stride=2)
        self.layer4 = self._make_layer(512, layers[3], stride=2)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(512, num_classes)
        # torchvision's init: Kaiming-normal (fan_out) convs, BN weight 1 / bias 0 (the default)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
        if zero_init_residual:      # each block starts as the identity (torchvision's option)
            for m in self.modules():
                if isinstance(m, BasicBlock):
                    nn.init.zeros_(m.bn2.weight)

    def _make_layer(self, planes, blocks, stride=1):
        downsample = None
        if stride != 1 or self.inplanes != planes:
            downsample = nn.Sequential(nn.Conv2d(self.inplanes, planes, 1, stride=stride, bias=False),
                                       nn.BatchNorm2d(planes))
        layers = [BasicBlock(self.inplanes, planes, stride, downsample)]
        self.inplanes = planes
        layers += [BasicBlock(planes, planes) for _ in range(1, blocks)]
        return nn.Sequential(*layers)

    def forward(self, x):
        x = self.conv1(x)
        fused = untouched((self.bn1, nn.BatchNorm2d), (self.relu, nn.ReLU))
        x = self.bn1.forward_relu(x) if fused else self.relu(self.bn1(x))
        x = self.maxpool(x)                                     # (B, 64, H/4, W/4) or (B, 64, H, W)
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))  # (B, 512, h, w)
        x = self.avgpool(x).flatten(1)                          # (B, 512)
        return self.fc(x)                                       # (B, num_classes)


def resnet18(num_classes=1000, stem="imagenet", in_channels=3, zero_init_residual=False):
    """ResNet-18 (BasicBlock, [2, 2, 2, 2]); stem "imagenet" or "cifar" (see ResNet)."""
    return ResNet((2, 2, 2, 2), num_classes, stem, in_channels, zero_init_residual)


def resnet34(num_classes=1000, stem="imagenet", in_channels=3, zero_init_residual=False):
    """ResNet-34 (BasicBlock, [3, 4, 6, 3]); stem "imagenet" or "cifar" (see ResNet)."""
    return ResNet((3, 4, 6, 3), num_classes, stem, in_channels, zero_init_residual)
