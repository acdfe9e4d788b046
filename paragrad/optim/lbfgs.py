"""L-BFGS (torch.optim.LBFGS): a quasi-Newton method that re-evaluates the loss through a
closure, several times a step, with an optional strong-Wolfe line search (line_search.py)."""
from __future__ import annotations

from ..autograd import enable_grad, no_grad
from ..ops import cat, zeros
from ..tensor import Tensor
from .line_search import strong_wolfe
from .optimizer import Optimizer, check_hyper


class LBFGS(Optimizer):
    """L-BFGS, as torch.optim.LBFGS (after minFunc): each step(closure) runs up to max_iter
    iterations and max_eval evaluations of closure (default max_iter * 5 // 4). An iteration
    moves along the direction the last history_size (step, gradient change) pairs give through
    the two-loop recursion, by lr, or by the step line_search_fn="strong_wolfe" finds. It stops
    early when the gradient's largest entry is <= tolerance_grad, or the step, the loss change
    or the directional derivative is below tolerance_change.

    One parameter group only. The parameters are handled as one flat vector (their history
    costs (history_size + 1) times their memory); the scalars of the method (step sizes, the
    curvature ys, ...) are 0-d tensors as in torch, so the iterates are torch's, and each test
    on them reads the device, as torch's do. Complex and sparse parameters are not supported
    (paragrad has neither)."""

    def __init__(self, params, lr=1, max_iter=20, max_eval=None, tolerance_grad=1e-7,
                 tolerance_change=1e-9, history_size=100, line_search_fn=None):
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        check_hyper("LBFGS", lr=lr)
        if max_eval is None:
            max_eval = max_iter * 5 // 4
        super().__init__(params, dict(lr=lr, max_iter=max_iter, max_eval=max_eval,
                                      tolerance_grad=tolerance_grad, tolerance_change=tolerance_change,
                                      history_size=history_size, line_search_fn=line_search_fn))
        if len(self.param_groups) != 1:
            raise ValueError("LBFGS doesn't support per-parameter options (parameter groups)")
        self._params = self.param_groups[0]["params"]

    def _shaped_like_param(self, key):
        """None of its state is: flat vectors, lists of them, and numbers."""
        return False

    # ---- the parameters as one flat vector ---------------------------------------------------
    def _flat_grad(self):
        """The gradients joined into one new vector (zeros for a parameter without one)."""
        return cat([p.grad.reshape(-1) if p.grad is not None
                    else zeros(p.numel(), dtype=p.dtype, device=p.device) for p in self._params])

    def _add_to_params(self, step_size, update):
        """params += step_size * update (update flat); a 0-d step size is read on the host,
        as torch's add_ reads a tensor alpha."""
        alpha = step_size.item() if isinstance(step_size, Tensor) else step_size
        offset = 0
        for p in self._params:
            n = p.numel()
            p.add_(update[offset:offset + n].view_as(p), alpha=alpha)
            offset += n

    def _evaluate_along(self, closure, x, t, d):
        """(loss, flat gradient) at x + t d; the parameters are x again afterwards."""
        self._add_to_params(t, d)
        loss = float(closure())
        flat_grad = self._flat_grad()
        for p, saved in zip(self._params, x):
            p.copy_(saved)
        return loss, flat_grad

    # ---- the step ----------------------------------------------------------------------------
    @no_grad()
    def step(self, closure):
        """Up to max_iter iterations; closure() re-evaluates the model (zeroing the gradients,
        calling backward) and returns the loss. -> the loss at the start of the step."""
        if len(self.param_groups) != 1:
            raise AssertionError(f"Expected exactly one param_group, but got {len(self.param_groups)}")

        def evaluate():
            with enable_grad():
                return closure()

        group = self.param_groups[0]
        lr = group["lr"].item() if isinstance(group["lr"], Tensor) else group["lr"]
        max_iter, max_eval = group["max_iter"], group["max_eval"]
        tolerance_grad, tolerance_change = group["tolerance_grad"], group["tolerance_change"]
        line_search_fn, history_size = group["line_search_fn"], group["history_size"]

        state = self.state.setdefault(self._params[0], {})
        state.setdefault("func_evals", 0)
        state.setdefault("n_iter", 0)

        orig_loss = evaluate()
        loss = float(orig_loss)
        current_evals = 1
        state["func_evals"] += 1
        flat_grad = self._flat_grad()
        opt_cond = flat_grad.abs().max() <= tolerance_grad
        if opt_cond:                        # already at a stationary point
            return orig_loss

        d, t, prev_flat_grad, prev_loss = (state.get(k) for k in ("d", "t", "prev_flat_grad", "prev_loss"))
        history = [state.get(k) for k in ("old_dirs", "old_stps", "ro", "H_diag")]
        n_iter = 0
        while n_iter < max_iter:
            n_iter += 1
            state["n_iter"] += 1
            if state["n_iter"] == 1:        # the first iteration ever: steepest descent
                d = flat_grad.neg()
                history = [[], [], [], 1]
            else:
                self._remember(history, flat_grad.sub(prev_flat_grad), d.mul(t), history_size)
                d = self._direction(state, history, flat_grad, history_size)
            if prev_flat_grad is None:
                prev_flat_grad = flat_grad.clone()
            else:
                prev_flat_grad.copy_(flat_grad)
            prev_loss = loss

            # the first step ever is scaled by the gradient's size; later ones start at lr
            t = min(1.0, 1.0 / flat_grad.abs().sum()) * lr if state["n_iter"] == 1 else lr
            gtd = flat_grad.dot(d)          # the directional derivative
            if gtd > -tolerance_change:
                break

            ls_func_evals = 0
            if line_search_fn is not None:
                if line_search_fn != "strong_wolfe":
                    raise RuntimeError("only 'strong_wolfe' is supported")
                x_init = [p.clone() for p in self._params]
                loss, flat_grad, t, ls_func_evals = strong_wolfe(
                    lambda step_size: self._evaluate_along(evaluate, x_init, step_size, d),
                    t, d, loss, flat_grad, gtd, max_ls=max_eval - current_evals)
                self._add_to_params(t, d)
                opt_cond = flat_grad.abs().max() <= tolerance_grad
            else:
                self._add_to_params(t, d)
                if n_iter != max_iter:      # (the last iteration's loss would go unused)
                    loss = float(evaluate())
                    flat_grad = self._flat_grad()
                    opt_cond = flat_grad.abs().max() <= tolerance_grad
                    ls_func_evals = 1
            current_evals += ls_func_evals
            state["func_evals"] += ls_func_evals

            if n_iter == max_iter or current_evals >= max_eval or opt_cond:
                break
            if d.mul(t).abs().max() <= tolerance_change:    # no progress in the parameters
                break
            if abs(loss - prev_loss) < tolerance_change:    # nor in the loss
                break

        state.update(d=d, t=t)
        state.update(zip(("old_dirs", "old_stps", "ro", "H_diag"), history))
        state.update(prev_flat_grad=prev_flat_grad, prev_loss=prev_loss)
        return orig_loss

    @staticmethod
    def _remember(history, y, s, history_size):
        """Add the pair (gradient change y, step s) to the history when its curvature y.s is
        positive enough (else the inverse-Hessian estimate would lose positive definiteness),
        dropping the oldest pair when full; H_diag, the initial inverse Hessian's scale, becomes
        y.s / y.y."""
        old_dirs, old_stps, ro, _ = history
        ys = y.dot(s)
        if ys > 1e-10:
            if len(old_dirs) == history_size:
                old_dirs.pop(0)
                old_stps.pop(0)
                ro.pop(0)
            old_dirs.append(y)
            old_stps.append(s)
            ro.append(1.0 / ys)
            history[3] = ys / y.dot(y)

    @staticmethod
    def _direction(state, history, flat_grad, history_size):
        """-H grad, H the L-BFGS inverse-Hessian estimate, by the two-loop recursion in one
        buffer; the first loop's coefficients are kept in state['al'], as torch keeps them."""
        old_dirs, old_stps, ro, h_diag = history
        if "al" not in state:
            state["al"] = [None] * history_size
        al = state["al"]
        q = flat_grad.neg()
        for i in range(len(old_dirs) - 1, -1, -1):
            al[i] = old_stps[i].dot(q) * ro[i]
            q.add_(old_dirs[i], alpha=-float(al[i]))
        r = q.mul(h_diag)
        for i in range(len(old_dirs)):
            be_i = old_dirs[i].dot(r) * ro[i]
            r.add_(old_stps[i], alpha=float(al[i] - be_i))
        return r
