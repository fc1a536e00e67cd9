"""Run by tests/wheel_test.sh with the Python of a virtual environment where
only the iotape wheel and its dependencies from PyPI are installed: each
TRACE.iot of DIR read with iotape.open().to_arrow() must equal TRACE.csv, made
by `iotape cat --format csv` of the normal build; the vscsi trace written
again with iotape.write() into DIR/written.iot (in chunks of 1,000 IOs),
which the test then reads with `iotape cat`.
Usage: python wheel_check.py DIR TRACE..."""

import csv
import os
import sys

import pyarrow

import iotape
from cat_columns import first_difference


def main(directory, names):
    print(f"iotape from {os.path.dirname(iotape.__file__)}, pyarrow {pyarrow.__version__}")
    for name in names:
        path = os.path.join(directory, f"{name}.iot")
        table = iotape.open(path).to_arrow()
        if table.schema != iotape.SCHEMA:
            sys.exit(f"{path}: schema {table.schema} is not iotape.SCHEMA")
        with open(os.path.join(directory, f"{name}.csv"), newline="") as f:
            rows = list(csv.DictReader(f))
        if not rows:
            sys.exit(f"{name}.csv has no rows")
        difference = first_difference(table, rows, iotape.COLUMNS)
        if difference:
            sys.exit(f"{path}: {difference}")
        print(f"{name}: to_arrow() equals iotape cat --format csv, {table.num_rows} IOs")
    source = iotape.open(os.path.join(directory, "vscsi.iot"))
    iotape.write(os.path.join(directory, "written.iot"), source.batches(), header=source.header, chunk_ios=1000)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
