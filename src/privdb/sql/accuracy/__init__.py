"""``DP-SELECT ACCURACY …``: the ε an accuracy asks for, chosen from plans alone, and accuracy first
(noise reduction) where an interval depends on the data."""
