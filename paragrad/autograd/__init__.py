"""Reverse-mode autograd (torch.autograd): grad mode, graph nodes, the backward engine and
user-defined functions, one file each, gathered here under torch's names.

Each differentiable op that sees an input requiring grad records a `Node` as its output's
`grad_fn`. A node knows, for each input, the edge `(node, output_index)` its gradient flows
to: the input's own `grad_fn`, or an `AccumulateGrad` node for a leaf. `run_backward` walks
those edges in topological order with an explicit queue (no recursion, so chains of any length
work) and writes `.grad` on leaves. Without retain_graph, each node then releases every
tensor and buffer it held (`Node.release_variables`), so activations die at backward, not
when the output does. Gradients meeting at one input add into a buffer the engine made
itself, in place, and a node whose gradient is a slice written into zeros (`add_into`) adds
just its slice there. Anomaly mode (`anomaly_mode.py`) adds forward tracebacks and NaN checks.

This package never imports `tensor.py`: it sees tensors only through the attributes
`grad_fn`, `_output_nr`, `_requires_grad`, `_grad` (`.grad` without the setter's checks),
`_acc`, `_hooks`, `_post_acc_hooks`, `_vc` and a few methods (`_with_data` wraps a buffer).
Gradients themselves are Tensors; backward formulas are written with Tensor ops and run
with grad mode off.

The files, bottom up: grad_mode.py (no_grad, enable_grad, inference_mode, set_grad_enabled
and the flag every op reads); graph.py (Node, AccumulateGrad, and `record`, which every op
calls); engine.py (run_backward and its helpers: hooks, accumulation into .grad); function.py
(Function and its ctx, and the public `backward` / `grad`); anomaly_mode.py.
"""

from . import anomaly_mode, grad_mode
from .anomaly_mode import (detect_anomaly, is_anomaly_check_nan_enabled, is_anomaly_enabled,
                           set_detect_anomaly)
from .engine import queue_callback, run_backward
from .function import Function, FunctionCtx, backward, grad
from .grad_mode import enable_grad, inference_mode, is_grad_enabled, no_grad, set_grad_enabled
from .graph import (RELEASED, AccumulateGrad, Node, accumulator, edge, needs_grad, node_class, record,
                    rename)
