"""One exception type for every user-facing failure.

The CLI turns a :class:`KalbertError` into a single line on stderr and exit code 2;
anything else is a bug and keeps its traceback (or shows it only with ``KALBERT_DEBUG=1``).
"""

from __future__ import annotations


class KalbertError(Exception):
    """A problem the user can fix: the message says what is wrong, the hint how to fix it."""

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return f"{self.message} ({self.hint})" if self.hint else self.message


class WrongKind(KalbertError):
    """A folder that is not of a kind a command needs. The hint names the commands that make one, which only the
    verbs' records know (:func:`kalbert.verbs.makers`); the layers below them raise this, and the verb layer and
    the CLI name the makers (:meth:`name_makers`) before the user sees it."""

    def __init__(self, message: str, kinds: tuple[str, ...], also: str = "") -> None:
        super().__init__(message, f"make one with a kalbert command that makes a {' or '.join(kinds)} folder{also}")
        self.kinds, self.also = kinds, also

    def name_makers(self, makers: str) -> None:
        self.hint = f"make one with {makers}{self.also}"
