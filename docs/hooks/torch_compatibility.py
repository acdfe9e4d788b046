"""MkDocs hook: the compatibility page's `<!-- torch compatibility -->` marker becomes, for each
torch namespace a script uses most, the paragrad module `paragrad run` answers it with
(paragrad/as_torch/names.py's mapping) and which of torch's public names that module lacks,
computed from the installed torch (the dev extra's) at build time, so the page can't drift."""
from __future__ import annotations

import importlib
import inspect

MARKER = "<!-- torch compatibility -->"
NAMESPACES = ("torch", "torch.nn", "torch.nn.functional", "torch.nn.init", "torch.optim",
              "torch.optim.lr_scheduler", "torch.utils.data", "torch.linalg", "torch.special",
              "torch.cuda", "torch.amp", "torch.autograd")


def on_page_markdown(markdown, page, config, files):
    if MARKER not in markdown:
        return markdown
    return markdown.replace(MARKER, "\n\n".join(_section(name) for name in NAMESPACES))


def _section(torch_name):
    from paragrad.as_torch.names import paragrad_name
    target = paragrad_name(torch_name)
    head = f"## `{torch_name}`\n\n"
    if target is None:
        return head + "Not mapped: paragrad's namesake means something else, so it fails by name."
    try:
        ours = importlib.import_module(target)
    except ImportError:
        return head + f"No paragrad module ({target}): `import {torch_name}` fails by name."
    try:
        theirs = importlib.import_module(torch_name)
    except ImportError:
        return head + f"Answered by `{target}` (torch is not installed where this page was built)."
    names = sorted(n for n, v in vars(theirs).items()      # (torch's own: not typing's Any, ...)
                   if not n.startswith("_") and callable(v) and not inspect.ismodule(v)
                   and (getattr(v, "__module__", None) or "").startswith("torch"))
    lacking = [n for n in names if not hasattr(ours, n)]
    text = (head + f"Answered by `{target}`: {len(names) - len(lacking)} of torch's {len(names)} public "
            f"functions and classes exist.")
    if lacking:
        text += " These fail by name under `paragrad run`:\n\n" + ", ".join(f"`{n}`" for n in lacking)
    return text
