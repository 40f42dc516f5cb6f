"""Plan: a checked query to its noisy statistics — their sensitivities, mechanisms, ε shares and cost
(order statistics, Gaussian noise under zCDP, truncation estimates, personalised ε), and the shapes kept
per database. Built from the query and the metadata alone: nothing here reads data."""
