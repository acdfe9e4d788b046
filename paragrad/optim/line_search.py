"""The strong-Wolfe line search of LBFGS (torch.optim.lbfgs's `_strong_wolfe`, itself a port of
torch7's lswolfe.lua), with its cubic interpolation.

Step sizes, losses and directional derivatives are host floats or 0-d tensors, as in torch: the
arithmetic on them runs in the parameters' dtype (a 0-d float32 tensor stays float32 next to a
Python float), and every comparison of a 0-d tensor reads it on the host, as torch's does. So
the trial points, and the iterates LBFGS takes, are torch's.
"""
from __future__ import annotations

import math

from ..tensor import Tensor


def cubic_interpolate(x1, f1, g1, x2, f2, g2, bounds=None):
    """The minimizer of the cubic through (x1, f1) and (x2, f2) with slopes g1 and g2, clamped
    to `bounds` (default: the interval between x1 and x2); the interval's midpoint where the
    cubic has no minimum (torch7's polyinterp.lua, two points with values and slopes)."""
    xmin_bound, xmax_bound = bounds if bounds is not None else ((x1, x2) if x1 <= x2 else (x2, x1))
    d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
    d2_square = d1 ** 2 - g1 * g2
    if d2_square < 0:
        return (xmin_bound + xmax_bound) / 2.0
    d2 = d2_square.sqrt() if isinstance(d2_square, Tensor) else math.sqrt(d2_square)
    if x1 <= x2:
        min_pos = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
    else:
        min_pos = x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2))
    return min(max(min_pos, xmin_bound), xmax_bound)


def strong_wolfe(evaluate, t, d, f, g, gtd, c1=1e-4, c2=0.9, tolerance_change=1e-9, max_ls=25):
    """A step t along direction d that satisfies the strong Wolfe conditions (sufficient
    decrease, c1; curvature, c2), from loss f, flat gradient g and slope gtd = g.d at t = 0.
    evaluate(t) -> (loss, flat gradient) at x + t d. At most max_ls evaluations.
    -> (loss, flat gradient, t, number of evaluations).

    A point is (t, loss, flat gradient, slope). First the step grows (by cubic extrapolation)
    until a pair of points brackets an acceptable step; then the bracket shrinks (zoom) by
    cubic interpolation. Flat gradients are fresh tensors that nothing writes in place, so the
    bracket holds them without torch's defensive clones."""
    d_norm = d.abs().max()
    f_new, g_new = evaluate(t)
    evals = 1
    gtd_new = g_new.dot(d)
    prev = (0, f, g, gtd)
    done, ls_iter, bracket = False, 0, None
    while ls_iter < max_ls:
        new = (t, f_new, g_new, gtd_new)
        if f_new > (f + c1 * t * gtd) or (ls_iter > 1 and f_new >= prev[1]):
            bracket = [prev, new]           # too far: the loss rose
            break
        if abs(gtd_new) <= -c2 * gtd:
            bracket, done = [new], True     # acceptable already
            break
        if gtd_new >= 0:
            bracket = [prev, new]           # past a minimum: the slope turned
            break
        # extrapolate: between 1.01 t and 10 t, from the last two points
        t_next = cubic_interpolate(prev[0], prev[1], prev[3], t, f_new, gtd_new,
                                   bounds=(t + 0.01 * (t - prev[0]), t * 10))
        prev, t = new, t_next
        f_new, g_new = evaluate(t)
        evals += 1
        gtd_new = g_new.dot(d)
        ls_iter += 1
    if ls_iter == max_ls:                   # out of evaluations: the start and the last point
        bracket = [(0, f, g, None), (t, f_new, g_new, None)]

    insufficient_progress = False
    low, high = (0, 1) if bracket[0][1] <= bracket[-1][1] else (1, 0)
    while not done and ls_iter < max_ls:
        lo_t, hi_t = min(bracket[0][0], bracket[1][0]), max(bracket[0][0], bracket[1][0])
        if abs(bracket[1][0] - bracket[0][0]) * d_norm < tolerance_change:
            break                           # the bracket is too small to matter
        (t0, f0, _, s0), (t1, f1, _, s1) = bracket
        t = cubic_interpolate(t0, f0, s0, t1, f1, s1)
        # a trial within 10 % of the bracket's ends twice in a row (or outside it) moves to
        # 10 % from the nearer end, so the bracket keeps shrinking
        eps = 0.1 * (hi_t - lo_t)
        if min(hi_t - t, t - lo_t) < eps:
            if insufficient_progress or t >= hi_t or t <= lo_t:
                t = hi_t - eps if abs(t - hi_t) < abs(t - lo_t) else lo_t + eps
                insufficient_progress = False
            else:
                insufficient_progress = True
        else:
            insufficient_progress = False
        f_new, g_new = evaluate(t)
        evals += 1
        gtd_new = g_new.dot(d)
        ls_iter += 1
        new = (t, f_new, g_new, gtd_new)
        if f_new > (f + c1 * t * gtd) or f_new >= bracket[low][1]:
            bracket[high] = new             # not low enough: the new high end
            low, high = (0, 1) if bracket[0][1] <= bracket[1][1] else (1, 0)
        else:
            if abs(gtd_new) <= -c2 * gtd:
                done = True
            elif gtd_new * (bracket[high][0] - bracket[low][0]) >= 0:
                bracket[high] = bracket[low]    # the slope points back past the old low end
            bracket[low] = new
    t, f_new, g_new, _ = bracket[low]
    return f_new, g_new, t, evals
