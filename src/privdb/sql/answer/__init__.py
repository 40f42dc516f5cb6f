"""Answer: the engine's per-group statistics to the released result — noise, the exponential
mechanism's choices, combinations into averages and variances, honest intervals, post-processing. The
accuracy an answer will have is predicted here too, from the plan alone."""
