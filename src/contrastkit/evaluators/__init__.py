"""Score models on contrastkit datasets: model adapters, tasks, metrics and reports.

Its modules arrive with the evaluator issue; it never imports ``contrastkit.builders``."""
