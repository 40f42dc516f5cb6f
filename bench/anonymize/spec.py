"""What bench.anonymize measures: Adult's quasi-identifiers, the k values, the reference figures of issue 4
and the targets."""

from __future__ import annotations

from bench.harness.data import QI

__all__ = ["QI"]

SENSITIVE = "salary-class"
KS = (2, 5, 10, 50, 100)
BIG_K = 10
SUPPRESSION = 0.05
BIG_ROWS, QUICK_ROWS = 1_000_000, 100_000
SEED = 20261123

# Issue 4's figures, measured on this machine kind before privdb existed (not rerun here).
REF_MONDRIAN = {"seconds": 0.42, "ncp": 0.1124}  # qiyuangong/Mondrian, strict, Adult, k = 10
REF_MONDRIAN_BIG = "qiyuangong/Mondrian: 14–15 s partitioning, 35 s wall, 0.7 GB; ARX: 12.7–14 s warm, 2.7 GB"
REF_BIG = {  # per variant: label, seconds low and high (issue 4, 1,000,000 rows)
    "replicated": ("qiyuangong 14–15 s (35 s wall), 0.7 GB", 14.0, 15.0),
    "harder": ("ARX 12.7–14 s warm, 2.7 GB", 12.7, 14.0),
}
REF_ARX = {"warm": 1.2, "cold": 8.6, "ncp": 0.344}  # ARX 3.9.2 Flash, 5 % suppression, k = 10
REF_ANJANA = {"seconds": 6.4, "ncp": 0.362}
# Targets (issue 4)
T_MONDRIAN_S, T_MONDRIAN_NCP = 0.04, 0.1124
T_BIG_S, T_BIG_MB = 2.0, 1000.0
T_LATTICE_S, T_LATTICE_NCP = 1.0, 0.344
T_CHECK_ADULT, T_CHECK_BIG = 0.05, 1.0
PYCANON_FUNCS = (
    "k_anonymity",
    "l_diversity",
    "entropy_l_diversity",
    "recursive_c_l_diversity",
    "t_closeness",
)
