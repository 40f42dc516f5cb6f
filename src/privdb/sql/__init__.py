"""DP-SELECT as a pipeline of stages, each a folder that takes the value the one before it made:

    front/ (text → checked relation) → plan/ (noisy statistics, shares, cost) → run/ (engine SQL, read)
    → answer/ (noise → result)

with the modes beside them (accuracy/, release/, public/) and, on top, engine.py calling the stages in
order, charge.py (reserve → read → respond → commit) and explain.py. docs/architecture.md draws it.
"""
