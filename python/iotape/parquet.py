"""A trace as a Parquet dataset (hive partitioned), streamed chunk by chunk."""

import json
import os
import sys
import time

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq

import iotape

HEADER_KEY = b"iotape.header"
NS_PER_HOUR = 3_600_000_000_000
PARTITION_KEYS = ("device", "hour")


def dataset_schema(header, partition_by=()):
    """The dataset's schema: iotape.SCHEMA with names as plain strings (Parquet
    dictionary-encodes them itself), plus `hour` when partitioned by it, and
    the trace header as JSON in the metadata."""
    fields = [pa.field(f.name, pa.string(), f.nullable) if pa.types.is_dictionary(f.type) else f
              for f in iotape.SCHEMA]
    if "hour" in partition_by:
        fields.append(pa.field("hour", pa.int64(), nullable=False))
    return pa.schema(fields, metadata={HEADER_KEY: json.dumps(header).encode("utf-8", "surrogateescape")})


def read_header(directory):
    """The trace header stored with a dataset this module wrote."""
    return json.loads(pq.read_schema(os.path.join(directory, "_common_metadata")).metadata[HEADER_KEY])


class _Progress:
    """IOs converted so far, on stderr, only when stderr is a terminal."""

    def __init__(self, enabled):
        self.enabled = enabled
        self.start = self.shown = time.monotonic()
        self.ios = 0

    def add(self, n):
        self.ios += n
        now = time.monotonic()
        if self.enabled and now - self.shown >= 0.5:
            self.shown = now
            sys.stderr.write(f"\riotape parquet: {self.ios:,} IOs, {self.ios / (now - self.start) / 1e6:.1f} M IOs/s")
            sys.stderr.flush()

    def done(self):
        if self.enabled:
            sys.stderr.write(f"\riotape parquet: {self.ios:,} IOs in {time.monotonic() - self.start:.1f} s\n")


def write_dataset(paths, directory, partition_by=(), progress=False):
    """Writes the trace `paths` (one trace, like iotape's commands) as a Parquet
    dataset in `directory`, hive-partitioned by `partition_by` (a subset of
    device and hour: hours of the trace clock, i.e. Unix hours for traces with
    a realtime clock). Returns the number of IOs written."""
    unknown = [k for k in partition_by if k not in PARTITION_KEYS]
    if unknown:
        raise ValueError(f"cannot partition by {', '.join(unknown)}; choose from {', '.join(PARTITION_KEYS)}")
    trace = iotape.open(paths)
    schema = dataset_schema(trace.header, partition_by)
    shown = _Progress(progress)

    def batches():
        for batch in trace.batches():
            columns = [c.dictionary_decode() if pa.types.is_dictionary(c.type) else c for c in batch.columns]
            if "hour" in partition_by:
                columns.append(pc.divide(batch.column("issue_ns"), NS_PER_HOUR))
            yield pa.RecordBatch.from_arrays(columns, schema=schema)
            shown.add(batch.num_rows)

    if os.path.isdir(directory) and os.listdir(directory):
        raise ValueError(f"{directory}: not empty; give a new or empty directory")
    os.makedirs(directory, exist_ok=True)
    partitioning = ds.partitioning(pa.schema([schema.field(k) for k in partition_by]), flavor="hive") \
        if partition_by else None
    # zstd: about two thirds of the size of the default (snappy) on traces.
    options = ds.ParquetFileFormat().make_write_options(compression="zstd")
    ds.write_dataset(batches(), directory, schema=schema, format="parquet", file_options=options,
                     partitioning=partitioning,
                     existing_data_behavior="overwrite_or_ignore", basename_template="part-{i}.parquet")
    pq.write_metadata(schema, os.path.join(directory, "_common_metadata"))
    shown.done()
    return shown.ios
