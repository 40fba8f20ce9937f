"""The one exception type the viewer raises for bad user input."""


class ViewerError(Exception):
    """A problem with the user's input; the CLI prints it as one line, exit 2."""
