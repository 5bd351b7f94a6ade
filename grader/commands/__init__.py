"""The top layer: one module per subcommand of `python3 -m grader`
(grader/commands/arguments.py reads the options, grader/cli.py calls them).
Commands drive the engine and the infrastructure below; nothing below imports
a command."""
