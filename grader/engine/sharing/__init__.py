"""Sharing a GPU between students' tests: the gate (timed parts alone,
the rest together), the shared stage's runs, the kept checker processes
and their service, the admission of device memory, the reference tools'
runs and the sanitizer's places."""
