"""`import torch` answered by paragrad, for `paragrad run script.py`.

`install()` puts a finder first on sys.meta_path: `torch` is paragrad, `torch.nn.functional` is
paragrad.nn.functional, `torch.utils.data` is paragrad.data, and so on (names.py has the
exceptions). What a script asks for and paragrad lacks raises AttributeError or ImportError naming
the torch API; torch.utils.tensorboard is a do-nothing stub. Nothing imports this package but
`paragrad run`, so a plain `import paragrad` never sees torch names.
"""
from .finder import RealTorchImported, TorchFinder, install  # noqa: F401
from .module import TorchModule  # noqa: F401
