"""pg.linalg: torch.linalg's functions under their torch.linalg names (implemented in
paragrad/ops/linalg/decompositions.py and linalg/matrix_functions.py, where the differences from torch
are noted).

Not here: the complex-only and general-eigenvalue functions (eig, eigvals), LU (lu,
lu_factor, lu_solve, ldl_*), householder_product, tensorinv / tensorsolve, and the `_ex`
variants (inv_ex, cholesky_ex, solve_ex), whose per-matrix `info` needs more than np.linalg /
cupy.linalg report.
"""
from .ops.linalg.products import matmul
from .ops.linalg.decompositions import (LinAlgError, det, eigh, eigvalsh, inv, slogdet, solve,
                                        solve_triangular, svdvals)
from .ops.linalg.decompositions import linalg_cholesky as cholesky
from .ops.linalg.decompositions import linalg_qr as qr
from .ops.linalg.decompositions import linalg_svd as svd
from .ops.linalg.matrix_functions import (cond, lstsq, matrix_exp, matrix_norm, matrix_power, matrix_rank,
                               multi_dot, pinv, vander, vecdot, vector_norm)
from .ops.linalg.matrix_functions import linalg_cross as cross
from .ops.linalg.matrix_functions import linalg_diagonal as diagonal
from .ops.linalg.matrix_functions import linalg_norm as norm

__all__ = ["LinAlgError", "cholesky", "cond", "cross", "det", "diagonal", "eigh", "eigvalsh", "inv",
           "lstsq", "matmul", "matrix_exp", "matrix_norm", "matrix_power", "matrix_rank",
           "multi_dot", "norm", "pinv", "qr", "slogdet", "solve", "solve_triangular", "svd",
           "svdvals", "vander", "vecdot", "vector_norm"]
