"""Reductions over dims: sums, extremes, statistics, sorting and order statistics."""
