"""python3 -m iotape parquet TRACE... -o DIR [--partition-by device,hour]"""

import argparse
import sys

import iotape
from iotape import parquet


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python3 -m iotape", description="iotape traces in the data ecosystem")
    sub = ap.add_subparsers(dest="command", required=True)
    p = sub.add_parser("parquet", help="Write a trace as a Parquet dataset (hive partitioned)",
                       description="Write a trace as a Parquet dataset, with the trace header (JSON) under the "
                                   "schema metadata key iotape.header of every file and of DIR/_common_metadata. "
                                   "Progress goes to stderr when it is a terminal.")
    p.add_argument("traces", nargs="+", metavar="TRACE",
                   help="trace file(s); several are read as one trace (rotated parts)")
    p.add_argument("-o", "--output", required=True, metavar="DIR", help="dataset directory: new or empty")
    p.add_argument("--partition-by", default="", metavar="KEYS",
                   help="comma-separated hive partition keys: device (index), hour (issue_ns // 3600 s)")
    a = ap.parse_args(argv)
    keys = tuple(k for k in a.partition_by.split(",") if k)
    try:
        n = parquet.write_dataset(a.traces, a.output, keys, progress=sys.stderr.isatty())
    except (iotape.TraceError, OSError, ValueError) as e:
        print(f"python3 -m iotape: error: {e}", file=sys.stderr)
        return 1
    print(f"wrote {n} IOs to {a.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
