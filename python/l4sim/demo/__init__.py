"""``l4sim demo``: the 2016 DualPI2 demo as a live web page (see :mod:`l4sim.demo.model` for
what is modelled and :mod:`l4sim.demo.server` for the server). The web libraries are imported
only when the command runs."""

from __future__ import annotations

import argparse
import sys
from typing import Any


def register(subparsers: Any) -> None:
    """Add the ``demo`` subcommand to the ``l4sim`` parser."""
    p = subparsers.add_parser(
        "demo",
        help="the DualPI2 demo as a live web page",
        description="Serve the live demo page (two clients through one AQM bottleneck; every control "
        "changes the running simulation) and open it in the browser. Ctrl-C stops it.",
    )
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1, this machine only)")
    p.add_argument("--port", type=int, default=8000, help="port (default 8000; 0 picks a free one)")
    p.add_argument("--no-browser", action="store_true", help="print the URL without opening a browser")
    p.set_defaults(func=_cmd_demo)


def _cmd_demo(args: argparse.Namespace) -> int:
    if not 0 <= args.port <= 65535:
        print(f"error: --port: must be 0-65535 (0: a free port), got {args.port}", file=sys.stderr)
        return 2
    from l4sim.demo.server import main

    return main(args.host, args.port, not args.no_browser)
