"""Libraries the grader carries in the tree, each a pinned release of a pure-Python
package with no dependencies: the grading machine has no network and installs
nothing, so what the grader needs beyond the standard library travels with it.
Each folder holds the package's own files, its licence and a README naming the
release, where it came from and the one change made to it."""
