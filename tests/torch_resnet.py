"""torchvision's resnet18 (BasicBlock, layers [2, 2, 2, 2]) written in torch.nn, the reference
for paragrad's: torchvision isn't installed here. Its modules are built in torchvision's
order (each downsample before its block), so a run that draws the weights from NumPy in
construction order draws them as paragrad's ResNet does. Used by tests/test_models.py and by
tests/cli/scripts/mnist_same_draws.py (torch's torchvision.models.resnet18 there)."""
import torch
import torch.nn as tnn


class TorchBasicBlock(tnn.Module):
    def __init__(self, inplanes, planes, stride=1, downsample=None):
        super().__init__()
        self.conv1 = tnn.Conv2d(inplanes, planes, 3, stride, 1, bias=False)
        self.bn1 = tnn.BatchNorm2d(planes)
        self.relu = tnn.ReLU()
        self.conv2 = tnn.Conv2d(planes, planes, 3, 1, 1, bias=False)
        self.bn2 = tnn.BatchNorm2d(planes)
        self.downsample = downsample

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        return self.relu(self.bn2(self.conv2(out)) + identity)


class TorchResNet18(tnn.Module):
    def __init__(self, num_classes=1000, stem="imagenet"):
        super().__init__()
        if stem == "imagenet":
            self.conv1 = tnn.Conv2d(3, 64, 7, 2, 3, bias=False)
        else:
            self.conv1 = tnn.Conv2d(3, 64, 3, 1, 1, bias=False)
        self.bn1 = tnn.BatchNorm2d(64)
        self.relu = tnn.ReLU()
        self.maxpool = tnn.MaxPool2d(3, 2, 1) if stem == "imagenet" else tnn.Identity()
        self.inplanes = 64
        self.layer1 = self._make_layer(64, 1)
        self.layer2 = self._make_layer(128, 2)
        self.layer3 = self._make_layer(256, 2)
        self.layer4 = self._make_layer(512, 2)
        self.avgpool = tnn.AdaptiveAvgPool2d((1, 1))
        self.fc = tnn.Linear(512, num_classes)
        for m in self.modules():      # torchvision's init (BN and Linear keep their defaults)
            if isinstance(m, tnn.Conv2d):
                tnn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")

    def _make_layer(self, planes, stride):
        down = None
        if stride != 1 or self.inplanes != planes:
            down = tnn.Sequential(tnn.Conv2d(self.inplanes, planes, 1, stride, bias=False),
                                  tnn.BatchNorm2d(planes))
        blocks = [TorchBasicBlock(self.inplanes, planes, stride, down), TorchBasicBlock(planes, planes)]
        self.inplanes = planes
        return tnn.Sequential(*blocks)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(self.avgpool(x), 1))
