"""The ``kalbert`` command line: one module per noun, verbs as subcommands.

Importing it (what the ``kalbert`` command does first) leaves out library warnings about what kalbert handles
itself (:mod:`kalbert.cli.quiet`).
"""

from kalbert.cli.quiet import quiet_libraries

quiet_libraries()
