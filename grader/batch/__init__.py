"""Grading a class: the batch's orchestrator, its workers and their GPU
schedule (leads and turns, the timed stage, the pace), its guard and
configuration, the class report, and the same batch spread over Slurm."""
