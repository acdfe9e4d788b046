"""The docstrings of views.py's public ops, one line each (views.py applies them: inline they
would take that file past the 600-line limit). Aliases share their function's: moveaxis is
movedim, swapaxes and swapdims are transpose."""

DOCS = {
    "flatten": "input with dims start_dim..end_dim merged into one (a view where the layout "
               "allows), as torch.flatten.",
    "unflatten": "input with dim split into dims of sizes (one may be -1), a view where the "
                 "layout allows, as torch.unflatten.",
    "unsqueeze": "A view of input with a size-1 dim inserted at dim, as torch.unsqueeze.",
    "squeeze": "A view of input without its size-1 dims (all, or those of dim: an int or a "
               "tuple), as torch.squeeze.",
    "permute": "A view of input with its dims reordered as dims, as torch.permute.",
    "transpose": "A view of input with dims dim0 and dim1 swapped, as torch.transpose (also "
                 "swapaxes, swapdims).",
    "t": "A view of a matrix transposed (tensors of under 2 dims as they are), as torch.t.",
    "movedim": "A view of input with the dims of source moved to destination, the others kept "
               "in order, as torch.movedim (also moveaxis).",
    "expand": "A view of x broadcast to sizes (-1 keeps a dim; new dims lead), as Tensor.expand.",
    "broadcast_to": "A view of input broadcast to shape, as torch.broadcast_to.",
    "narrow": "A view of input's length elements from start along dim (start < 0 counts from the "
              "end), as torch.narrow.",
    "split": "Views of x along dim in pieces of split_size_or_sections elements (the last may be "
             "smaller), or of the listed sizes, as torch.split.",
    "chunk": "Up to chunks views of input along dim, each ceil(size / chunks) long (the last may "
             "be shorter), as torch.chunk.",
}
