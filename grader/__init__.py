"""CUDA Reduction Labs grader: build, run and score the labs.

Each subcommand of `python3 -m grader` is a thin layer over a function here;
results are dataclasses that serialise to JSON.
"""
