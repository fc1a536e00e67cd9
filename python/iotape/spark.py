"""A PySpark (4.0+) data source that reads iotape traces directly.

    from iotape.spark import register
    register(spark)
    df = spark.read.format("iotape").load("/captures/fleet")   # a file, a directory or a glob

Every .iot file is one partition, read on an executor with iotape's reader
(chunk by chunk, handed to Spark as Arrow batches). The parts of a rotated
capture are separate files of one trace: they share the `trace` column (the
header's trace_id, or the file's path for a trace written without one).
Executors read the files by the same path as the driver, so on a cluster
they must be on a file system every node mounts (docs/python.md).
"""

import glob
import os

import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

import iotape

# Spark has no unsigned or dictionary types: names are strings, the rest as
# iotape.SCHEMA. `index` is the IO's position in its file.
SPARK_SCHEMA = (
    "trace STRING, file STRING, part INT, index BIGINT, device INT, device_name STRING, op STRING, "
    "flags INT, offset BIGINT, length BIGINT, queue_ns BIGINT, issue_ns BIGINT, complete_ns BIGINT, "
    "status INT, pid INT, comm STRING, cpu INT, cgroup BIGINT, source_index BIGINT"
)


def trace_files(path):
    """The .iot files a load() path names: a file, a directory (searched
    recursively) or a glob; several may be given separated by commas."""
    files = []
    for p in path.split(","):
        if os.path.isdir(p):
            found = glob.glob(os.path.join(p, "**", "*.iot"), recursive=True)
        else:
            found = glob.glob(p) or [p]
        files.extend(sorted(found))
    return files


class _File(InputPartition):
    def __init__(self, path):
        super().__init__(path)
        self.path = path


class _Reader(DataSourceReader):
    def __init__(self, options):
        path = options.get("path")
        if not path:
            raise ValueError("iotape data source: give a path (load(PATH) or option('path', ...))")
        self.files = trace_files(path)
        if not self.files:
            raise ValueError(f"iotape data source: no .iot files in {path}")

    def partitions(self):
        return [_File(f) for f in self.files]

    def read(self, partition):
        trace = iotape.open(partition.path)
        header = trace.header
        key = header["trace_id"] or os.path.abspath(partition.path)
        for batch in trace.batches():
            n = batch.num_rows
            columns = [pa.repeat(pa.scalar(key, pa.string()), n), pa.repeat(pa.scalar(partition.path, pa.string()), n),
                       pa.repeat(pa.scalar(header["part"], pa.int32()), n)]
            for name in iotape.COLUMNS:
                col = batch.column(name)
                columns.append(col.dictionary_decode() if pa.types.is_dictionary(col.type) else col)
            yield pa.RecordBatch.from_arrays(columns, names=["trace", "file", "part", *iotape.COLUMNS])


class IotapeDataSource(DataSource):
    """spark.read.format("iotape").load(PATH)"""

    @classmethod
    def name(cls):
        return "iotape"

    def schema(self):
        return SPARK_SCHEMA

    def reader(self, schema):
        return _Reader(self.options)


def register(spark):
    """Makes format("iotape") known to this Spark session."""
    spark.dataSource.register(IotapeDataSource)
