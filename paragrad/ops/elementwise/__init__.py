"""Elementwise ops: unary and binary arithmetic, powers, math composed from them, special
functions. Every output element depends on the input elements at the same position only."""
