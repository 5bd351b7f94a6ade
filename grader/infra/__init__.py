"""The bottom layer: what grading runs on. The toolchain (meson, ninja, nvcc),
processes, GPUs and their gates, the sandbox and namespaces, Slurm, and the
result store. It knows nothing of labs' scores or of the commands."""
