"""Expressions over noisy aggregates, and HAVING, as post-processing: the compiler, the nodes it builds
formulas from, and their runtime over vectors of released values."""
