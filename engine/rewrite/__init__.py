"""Rewrites of a whole module at import, before any schedule: graph passes (layout, folding, fusion of elementwise
ops), boolean tensors as bytes, math functions as vector polynomials."""
