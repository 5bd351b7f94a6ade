"""The middle layer, grading one lab: the submission taken in, the build, the
checker's run, the judgement (policy, fences), the score and the feedback.
It uses the infrastructure below and never a command above."""
