"""The top layer: one module per subcommand of `python3 -m grader` (grader/cli.py
parses the options and calls them). Commands drive the engine and the
infrastructure below; nothing below imports a command."""
