"""einsum against PyTorch: values and gradients of every operand for the common forms
(matmul, batched, attention scores, outer, dot, diagonal, trace, sums, three operands,
implicit output, ellipsis, size-1 broadcasting), and the errors."""
import pytest
import torch

import paragrad as pg
from tests.helpers import check_op

CASES = [("ij,jk->ik", [(3, 4), (4, 5)]), ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
         ("bhqd,bhkd->bhqk", [(2, 3, 4, 5), (2, 3, 6, 5)]), ("i,j->ij", [(3,), (4,)]),
         ("i,i->", [(5,), (5,)]), ("ii->i", [(4, 4)]), ("ii", [(4, 4)]), ("ij->ji", [(3, 4)]),
         ("ij->", [(3, 4)]), ("iij->j", [(3, 3, 4)]), ("ij,ij->ij", [(3, 4), (3, 4)]),
         ("ijk,ikl,ilm->ijm", [(2, 3, 4), (2, 4, 5), (2, 5, 6)]), ("ij,jk", [(3, 4), (4, 5)]),
         ("...ij,...jk->...ik", [(2, 3, 4, 5), (2, 3, 5, 6)]), ("...ij->...ji", [(2, 3, 4)]),
         ("ij,kj->ik", [(1, 4), (3, 4)]), ("bi,bi->b", [(4, 5), (4, 5)]), ("ab,cd->abcd", [(2, 3), (4, 5)])]


@pytest.mark.parametrize("eq,shapes", CASES, ids=[c[0] for c in CASES])
def test_einsum_matches_torch(eq, shapes, device):
    check_op(lambda *xs: (torch if isinstance(xs[0], torch.Tensor) else pg).einsum(eq, *xs), shapes,
             device=device)


def test_einsum_list_form_and_errors():
    a, b = pg.ones(2, 3), pg.ones(3, 4)
    assert tuple(pg.einsum("ij,jk->ik", [a, b]).shape) == (2, 4)
    for bad in (lambda lib: lib.einsum("ij,jk->ik", lib.ones(2, 3)),
                lambda lib: lib.einsum("ijk,jk->ik", lib.ones(2, 3), lib.ones(3, 4)),
                lambda lib: lib.einsum("ij,jk->ik", lib.ones(2, 3), lib.ones(4, 4))):
        with pytest.raises(Exception):
            bad(torch)
        with pytest.raises((RuntimeError, ValueError)):
            bad(pg)
