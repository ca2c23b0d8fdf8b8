"""Write one of ``stickyflow bench``'s cases as a snapshot file, to time ``stickyflow solve`` on it.

    python bench/make_snapshot.py 1000000x2000 --event join --subscriptions equal -o big.json
    /usr/bin/time -v stickyflow solve big.json -o result.json --compact

The case is the bench's own, seeded: the same partitions, members and previous
assignment that ``stickyflow bench`` measures in process.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from stickyflow.adapters.bench import Case, consumer_snapshot, streams_document
from stickyflow.model import jsonio
from stickyflow.model.consumer import consumer_to_json


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("size", help="PARTITIONSxMEMBERS (consumer) or TASKSxCLIENTS (streams), e.g. 1000000x2000")
    p.add_argument("--kind", default="consumer", choices=("consumer", "streams"))
    p.add_argument("--event", default="join", choices=("fresh", "join", "leave"))
    p.add_argument("--subscriptions", default=None,
                   help="equal or mixed (consumer, default equal); stateless or stateful (streams, default stateful)")
    p.add_argument("--racks", type=int, default=0)
    p.add_argument("--per-topic", type=int, default=2000)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("-o", "--output", required=True)
    args = p.parse_args(argv)
    size, _, members = args.size.lower().replace("_", "").partition("x")
    subs = args.subscriptions or ("equal" if args.kind == "consumer" else "stateful")
    case = Case(kind=args.kind, size=int(size), members=int(members), event=args.event, subscriptions=subs,
                racks=args.racks, per_topic=args.per_topic, seed=args.seed)
    t0 = time.perf_counter()
    doc = consumer_to_json(consumer_snapshot(case)) if args.kind == "consumer" else streams_document(case)
    Path(args.output).write_bytes(jsonio.dumps(doc))
    print(f"{case.name}: wrote {args.output} ({Path(args.output).stat().st_size / 2**20:.1f} MiB) "
          f"in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
