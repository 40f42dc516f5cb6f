"""Adversarial tests: every observable outcome is the same on neighbouring databases."""
