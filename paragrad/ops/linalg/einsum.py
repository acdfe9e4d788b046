"""einsum (PyTorch's torch.einsum) as permutes, diagonals, sums and one batched matmul per pair
of operands, contracted left to right; gradients come from those ops.

Supported: explicit ("ij,jk->ik") and implicit ("ij,jk") outputs, repeated subscripts within an
operand (diagonals: "ii->i"), sums over subscripts that appear once and not in the output,
size-1 broadcasting between operands, and "..." for leading batch dims (the same count of them in
every operand that has one)."""
from __future__ import annotations

import math

from ...autograd import rename
from ...tensor import Tensor
from ..autocast_policy import policy


@policy("einsum")
def einsum(equation, *operands):
    """Sums of products of the operands' elements given by an equation ("ij,jk->ik"), as torch.einsum.
    Only the string form: torch's sublist form (einsum(a, [0, 1], b, [1, 2])) raises TypeError."""
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    if not operands or not all(isinstance(t, Tensor) for t in operands):
        raise TypeError("einsum(): expected an equation and tensor operands")
    lhs, arrow, out = equation.replace(" ", "").partition("->")
    terms = lhs.split(",")
    if len(terms) != len(operands):
        raise ValueError(f"einsum(): {len(terms)} operands in the equation but {len(operands)} were given")
    terms = _expand_ellipsis(terms, operands, out if arrow else None)
    terms, out = terms[:-1], terms[-1]
    for t, x in zip(terms, operands):
        if len(t) != x.ndim:
            raise RuntimeError(f"einsum(): the number of subscripts in the equation ({len(t)}) does not "
                               f"match the number of dimensions ({x.ndim}) for operand of shape {tuple(x.shape)}")
    xs = [_diagonals(x, t) for x, t in zip(operands, terms)]          # [(tensor, subscripts)]
    while len(xs) > 1:
        (a, sa), (b, sb) = xs[0], xs[1]
        later = set(out).union(*[set(s) for _, s in xs[2:]])
        xs = [_contract(a, sa, b, sb, later)] + xs[2:]
    x, s = xs[0]
    x, s = _sum_out(x, s, set(out))
    x = x.permute([s.index(c) for c in out])
    # torch's last step: one operand is permuted, then summed if a subscript leaves; more are
    # multiplied, and viewed to the output shape where a subscript was contracted
    contracted = set("".join(terms)) - set(out)
    if len(operands) == 1:
        return rename(x, "SumBackward1" if contracted else "PermuteBackward0")
    return rename(x, "ViewBackward0" if contracted else "MulBackward0")


def _expand_ellipsis(terms, operands, out):
    """Replace '...' by fresh capital letters (one per broadcast dim) and append the output
    (the implicit one: the subscripts used once, in order, after the ellipsis dims)."""
    fresh = [c for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZ" if all(c not in t for t in terms) and (out is None or c not in out)]
    n_ell = 0
    for t, x in zip(terms, operands):
        if "..." in t:
            n_ell = max(n_ell, x.ndim - (len(t) - 3))
    ell = "".join(fresh[:n_ell])
    new_terms = []
    for t, x in zip(terms, operands):
        if "..." in t:
            k = x.ndim - (len(t) - 3)
            t = t.replace("...", ell[n_ell - k:])
        new_terms.append(t)
    if out is None:
        counts = {}
        for t in new_terms:
            for c in t:
                counts[c] = counts.get(c, 0) + 1
        out = ell + "".join(sorted(c for c, k in counts.items() if k == 1 and c not in ell))
    else:
        out = out.replace("...", ell)
    return new_terms + [out]


def _diagonals(x, s):
    """Take the diagonal for each subscript repeated within one operand."""
    while len(set(s)) != len(s):
        c = next(c for c in s if s.count(c) > 1)
        i, j = s.index(c), s.index(c, s.index(c) + 1)
        x = x.diagonal(0, i, j)                        # the pair leaves; the diagonal goes last
        s = "".join(ch for k, ch in enumerate(s) if k not in (i, j)) + c
    return x, s


def _sum_out(x, s, keep):
    """Sum the dims whose subscripts are not in keep."""
    drop = [i for i, c in enumerate(s) if c not in keep]
    if drop:
        x = x.sum(tuple(drop))
        s = "".join(c for c in s if c in keep)
    return x, s


def _contract(a, sa, b, sb, later):
    """a (subscripts sa) with b (sb): -> (tensor, subscripts), keeping those in `later`."""
    a, sa = _sum_out(a, sa, later | set(sb))
    b, sb = _sum_out(b, sb, later | set(sa))
    batch = [c for c in sa if c in sb and c in later]
    summed = [c for c in sa if c in sb and c not in later]
    a_only = [c for c in sa if c not in sb]
    b_only = [c for c in sb if c not in sa]
    size = {}
    for x, s in ((a, sa), (b, sb)):
        for c, n in zip(s, x.shape):
            if size.get(c, 1) not in (1, n) and n != 1:
                raise RuntimeError(f"einsum(): operands do not broadcast with remapped shapes: subscript "
                                   f"{c} has sizes {size[c]} and {n}")
            size[c] = max(size.get(c, 1), n)
    a = a.permute([sa.index(c) for c in batch + a_only + summed])
    b = b.permute([sb.index(c) for c in batch + summed + b_only])
    a = a.expand(*[size[c] for c in batch], *a.shape[len(batch):len(batch) + len(a_only)],
                 *[size[c] for c in summed])
    b = b.expand(*[size[c] for c in batch], *[size[c] for c in summed], *b.shape[len(batch) + len(summed):])
    nb, m, k, n = (math.prod(size[c] for c in batch), math.prod(a.shape[len(batch):len(batch) + len(a_only)]),
                   math.prod(size[c] for c in summed), math.prod(b.shape[len(batch) + len(summed):]))
    out = a.reshape(nb, m, k) @ b.reshape(nb, k, n)                       # (batch, a_only, b_only)
    shape = [size[c] for c in batch] + list(a.shape[len(batch):len(batch) + len(a_only)]) + \
        list(b.shape[len(batch) + len(summed):])
    return out.reshape(*shape), "".join(batch + a_only + b_only)
