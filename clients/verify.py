"""`rummy-referee verify`: check that a finished game's deals were fair (docs/fairness.md).

``verify RECORD`` checks a saved game record (docs/records.md); ``verify --referee HOST:PORT --game ID`` fetches
the game's GetReplay (any token of the game once the match is over: ``--token`` or $RUMMY_TOKEN, else the
organizer's, $RUMMY_ORGANIZER_TOKEN). Exit 0 with a one-line summary when every deal, restock and stock draw is the
one the seed gives and the seed is the committed one; exit 1 with the first mismatch otherwise; 2 when the game
cannot be read.
"""

from __future__ import annotations

import argparse
import os
import sys

from clients.sdk import RefereeClient, RefereeError
from clients.sdk.fairness import FairnessError, Verified, verify_game, verify_record

#: mismatches (exit 1); every other FairnessError means the game could not be read (exit 2)
MISMATCHES = frozenset(("commitment", "deal", "stock", "restock", "moves"))


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of the verify command."""
    parser.add_argument("record", nargs="?", help="a saved game record (JSON)")
    parser.add_argument("--referee", metavar="HOST:PORT", help="fetch the game from this referee instead (or "
                        "HOST:PORT,HOST:PORT: several sharing one Redis)")  # fmt: skip
    parser.add_argument("--game", metavar="ID", help="with --referee: the game id")
    parser.add_argument(
        "--token",
        default=os.environ.get("RUMMY_TOKEN") or os.environ.get("RUMMY_ORGANIZER_TOKEN"),
        help="with --referee: a token of the game, or the organizer's (default: $RUMMY_TOKEN, "
        "else $RUMMY_ORGANIZER_TOKEN)",
    )


def run(args: argparse.Namespace) -> int:
    """Verify what ``args`` name; prints the summary (stdout) or the first mismatch (stderr); the exit status."""
    if (args.record is None) == (args.referee is None) or (args.referee is not None) != (args.game is not None):
        print("rummy-referee verify: give a RECORD file, or --referee HOST:PORT and --game ID", file=sys.stderr)
        return 2
    try:
        done: Verified
        if args.record is not None:
            done, name = verify_record(args.record), args.record
        else:
            with RefereeClient(args.referee, args.token) as client:
                done, name = verify_game(client, args.game), args.game
    except FairnessError as exc:
        verdict = "FAILED" if exc.what in MISMATCHES else "cannot verify"
        print(f"rummy-referee verify: {verdict}: {exc.what}: {exc.message}", file=sys.stderr)
        return 1 if exc.what in MISMATCHES else 2
    except RefereeError as exc:
        print(f"rummy-referee verify: cannot fetch the game: {exc}", file=sys.stderr)
        return 2
    print(f"{name}: verified: {done.summary()}")
    return 0
