"""Errors shared by the commands."""


class CommandError(Exception):
    """A command cannot go on; its message is shown to the user as one line."""
