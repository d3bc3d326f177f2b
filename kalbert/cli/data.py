"""`kalbert data list`: the data sets kalbert knows, and where they were found."""

from __future__ import annotations

import argparse

from kalbert.cli.common import add_verb


def register(nouns) -> None:
    parser = nouns.add_parser("data", help="list data sets")
    verbs = parser.add_subparsers(dest="verb", metavar="VERB", required=True)
    add_verb(verbs, "list", "list the registered data sets and whether they are present", "kalbert data list", _list)


def _list(args: argparse.Namespace) -> int:
    from kalbert.datasets import describe_datasets

    rows = describe_datasets()
    width = max(len(r["name"]) for r in rows)
    for row in rows:
        state = "found" if row["found"] else "MISSING"
        splits = ",".join(row["splits"])
        print(f"{row['name']:<{width}}  {row['kind']:<8} {row['lang']:<9} {state:<8} {splits:<22} {row['url']}")
    return 0
