"""Run: a plan to the engine SQL that computes its statistics — clamps, per-unit bounding, histograms —
bound on the engine holding the tables, in that engine's dialect, and read under the query's time limit."""
