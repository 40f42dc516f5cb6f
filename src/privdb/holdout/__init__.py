"""The reusable holdout (Dwork et al., Science 2015): adaptive data analysis that still generalises.

``Thresholdout`` answers queries from the training set while it agrees with the holdout set, and spends a
budget of noisy holdout answers when it does not. ``privdb.holdout.experiment`` reproduces the paper's
"no signal" experiment (``run``, ``plot``, ``demo``); it is imported on demand, since it needs matplotlib.
"""

from privdb.holdout.thresholdout import Query, Thresholdout, ThresholdoutExhausted

__all__ = ["Query", "Thresholdout", "ThresholdoutExhausted"]
