"""Linear algebra: matrix products, decompositions, the functions built on them, einsum, norms."""
