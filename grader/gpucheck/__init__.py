"""The course's own check on a GPU (`grader gpucheck`): every lab's
reference graded and timed, the bench's floors, the release's scripts,
and the summary that merges partial runs."""
