"""The ``kalbert`` command line: one module per noun, verbs as subcommands."""
