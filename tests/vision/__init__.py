"""paragrad.vision: the torchvision datasets and transforms that `paragrad run` answers with."""
