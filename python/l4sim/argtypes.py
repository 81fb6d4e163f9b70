"""The command line's option types, shared by every ``l4sim`` subcommand, and the parser that
reports a bad option in one line.

A value out of range is refused while the command line is read, before anything runs or any
store is opened: ``error: argument -j/--jobs: must be a whole number, at least 1; got '0'
(see l4sim study run --help)``, exit status 2.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from pathlib import Path
from typing import NoReturn

from l4sim.scenario import one_line

#: Exit status of a command refused before anything ran (bad option, bad input).
EXIT_USAGE = 2


def usage_error(message: str) -> int:
    """Print ``error: MESSAGE`` on one line on stderr; the exit status :data:`EXIT_USAGE`. Every
    subcommand reports the input it refuses with it."""
    print(f"error: {one_line(message)}", file=sys.stderr)
    return EXIT_USAGE


def _whole(text: str, least: int, what: str) -> int:
    try:
        v = int(text)
    except ValueError:
        v = None
    if v is None or v < least:
        raise argparse.ArgumentTypeError(f"must be a whole number, {what}; got {text!r}")
    return v


def count(text: str) -> int:
    """Workers, trials or runs: a whole number of at least 1."""
    return _whole(text, 1, "at least 1")


def seed(text: str) -> int:
    """A random seed: a whole number, 0 to 2^64 - 1 (the core's u64)."""
    v = _whole(text, 0, "0 or more")
    if v >= 2**64:
        raise argparse.ArgumentTypeError(f"must be a whole number below 2^64; got {text!r}")
    return v


def seconds(text: str) -> float:
    """A duration: a finite number of seconds above 0."""
    try:
        v = float(text)
    except ValueError:
        v = math.nan
    if not (math.isfinite(v) and v > 0):
        raise argparse.ArgumentTypeError(f"must be a number of seconds above 0; got {text!r}")
    return v


def directory_problem(path: str | os.PathLike[str]) -> str | None:
    """Why ``path`` cannot be (or be made) an output directory, or None: it, or the nearest
    part of it that exists, is a file, or a directory nothing can be created in (tried with a
    temporary directory, removed at once). Checked before a run, so a run's results are not
    lost to a traceback when its outputs are written."""
    import tempfile

    for p in (Path(path), *Path(path).parents):
        if p.exists():
            if not p.is_dir():
                return f"{str(p)!r} is a file, not a directory"
            try:
                tempfile.TemporaryDirectory(dir=p).cleanup()
            except OSError as e:
                return f"cannot write in {str(p)!r}: {e.strerror or e}"
            return None
    return None


def figure_format_problem(fmt: str) -> str | None:
    """Why matplotlib cannot write figures in format ``fmt`` ("png", "pdf", ...), or None."""
    from matplotlib.backend_bases import FigureCanvasBase

    known = FigureCanvasBase.get_supported_filetypes()
    if fmt.lower() in known:
        return None
    return f"cannot write figures as {fmt!r}; formats: {', '.join(sorted(known))}"


class Parser(argparse.ArgumentParser):
    """An ``ArgumentParser`` (and, through ``add_subparsers``, its subcommands' parsers) whose
    errors are one line on stderr, ``error: MESSAGE (see PROG --help)``, with exit status 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"error: {one_line(message)} (see {self.prog} --help)\n")
