"""DILBERT (Miftahutdinov et al. 2021): a metric-learning name encoder with parent and
sibling negatives."""
