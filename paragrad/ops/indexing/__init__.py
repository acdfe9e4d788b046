"""Indexing: x[key], x[key] = v, gathers, scatters and the known ranges of index tensors."""
