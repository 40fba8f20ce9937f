"""`-d/--data`: one data kind or several joined by commas, all from one run (run_group.py)."""
import argparse

from ..run_group import members, split_data


def data_kinds(text):
    """argparse type of -d: the kinds as start() takes them, or the reason they are not."""
    try:
        return ",".join(split_data(text))
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def run_files(opened):
    """The files each session of the run wrote, one list per data kind (parts, or the whole file)."""
    return [member.data_files() for member in members(opened)]
