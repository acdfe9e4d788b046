"""backends/array.py's sole_view, on NumPy arrays (CuPy's views point at their root owner the
same way; tests/backends/cuda/test_backend.py checks it there): whether a view alone holds its
base, which lets the CUDA engine adopt a reshaped fresh gradient as a leaf's .grad."""
import numpy as np

from paragrad.backends.array import sole_view


def test_a_reshape_of_a_fresh_array_is_the_only_holder():
    # (computed outside the assert: pytest's rewriting keeps the assert's intermediate
    # values, np.arange's array among them, which would hold the base a second time)
    alone = sole_view(np.arange(6.0).reshape(2, 3))
    assert alone


def test_a_view_beside_its_owner_or_another_view_is_not():
    owner = np.arange(6.0)
    view = owner.reshape(2, 3)
    assert not sole_view(view)
    del owner
    assert sole_view(view)
    other = view[0]             # (points at the root owner too)
    assert not sole_view(view) and not sole_view(other)
    del other
    assert sole_view(view)
