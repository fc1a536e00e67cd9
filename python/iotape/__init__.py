"""iotape traces as Arrow data.

    t = iotape.open("run.iot")            # or a list of rotated parts: one trace
    t.header["devices"]                   # the device table, metadata, source
    for batch in t.batches(columns=["op", "length", "issue_ns", "complete_ns"]):
        ...                               # a pyarrow.RecordBatch per chunk
    df = t.to_pandas()

Unknown values are nulls: queue_ns, complete_ns, pid, comm, cpu, cgroup and
source_index (docs/python.md lists every column and its field).
"""

import os

import pyarrow as pa
import pyarrow.compute as pc

from . import _ext

__all__ = ["COLUMNS", "SCHEMA", "Trace", "TraceError", "open", "write"]

TraceError = _ext.TraceError
TraceError.__module__ = __name__
TraceError.__doc__ = "A file that is not an iotape trace, or a damaged one: the message names the file and byte."

_names = pa.dictionary(pa.int32(), pa.string())
SCHEMA = pa.schema([
    pa.field("index", pa.int64(), nullable=False),
    pa.field("device", pa.int32(), nullable=False),
    pa.field("device_name", _names),
    pa.field("op", pa.dictionary(pa.int8(), pa.string()), nullable=False),
    pa.field("flags", pa.int32(), nullable=False),
    pa.field("offset", pa.int64(), nullable=False),
    pa.field("length", pa.int64(), nullable=False),
    pa.field("queue_ns", pa.int64()),
    pa.field("issue_ns", pa.int64(), nullable=False),
    pa.field("complete_ns", pa.int64()),
    pa.field("status", pa.int32(), nullable=False),
    pa.field("pid", pa.int32()),
    pa.field("comm", _names),
    pa.field("cpu", pa.int32()),
    pa.field("cgroup", pa.int64()),
    pa.field("source_index", pa.int64()),
])
COLUMNS = tuple(SCHEMA.names)
assert list(COLUMNS) == list(_ext.COLUMNS)


class _Capsules:
    """The (schema, array) PyCapsules of one batch, for pyarrow.record_batch()."""

    def __init__(self, capsules):
        self._capsules = capsules

    def __arrow_c_array__(self, requested_schema=None):
        return self._capsules


def _paths(paths):
    if isinstance(paths, (str, os.PathLike)):
        return [os.fspath(paths)]
    return [os.fspath(p) for p in paths]


class Trace:
    """One trace: a file, or several read in order (the parts of a rotated capture)."""

    def __init__(self, paths):
        self.paths = _paths(paths)
        if not self.paths:
            raise ValueError("iotape.open: no trace files given")
        self._header = _ext.Reader(self.paths).header()

    @property
    def header(self):
        """dict: format_version, creator, source, source_detail, host, kernel, clock,
        anchors, devices (list of dicts), metadata (dict), trace_id, part."""
        return self._header

    def schema(self, columns=None):
        return pa.schema([SCHEMA.field(c) for c in _columns(columns)])

    def batches(self, columns=None, window=None):
        """Yields one pyarrow.RecordBatch per chunk, reading as it goes (memory
        is bounded by a chunk). `columns` picks and orders columns; `window`
        = (start_ns, end_ns) keeps IOs with start <= issue_ns < end (either
        may be None). A damaged trace raises TraceError after its good chunks."""
        cols = _columns(columns)
        codes = [COLUMNS.index(c) for c in cols]
        start, end = window if window is not None else (None, None)
        start = _ext.NO_TIME if start is None else int(start)
        end = 2**63 - 1 if end is None else int(end)
        reader = _ext.Reader(self.paths)
        # A seek skips chunks uncounted, and `index` counts from the trace's start.
        if start != _ext.NO_TIME and "index" not in cols:
            reader.seek(start)
        while True:
            capsules = reader.next(codes, start, end)
            if capsules is None:
                return
            yield pa.record_batch(_Capsules(capsules))

    def to_arrow(self, columns=None, window=None):
        """The whole trace (or window) as a pyarrow.Table."""
        return pa.Table.from_batches(list(self.batches(columns, window)), schema=self.schema(columns))

    def to_pandas(self, columns=None, window=None, **kwargs):
        """The whole trace (or window) as a pandas.DataFrame (names as categoricals)."""
        return self.to_arrow(columns, window).to_pandas(**kwargs)

    def __repr__(self):
        return f"iotape.Trace({self.paths!r})"


def _columns(columns):
    if columns is None:
        return list(COLUMNS)
    cols = [columns] if isinstance(columns, str) else list(columns)
    unknown = [c for c in cols if c not in COLUMNS]
    if unknown:
        raise ValueError(f"unknown column(s) {', '.join(unknown)}; the columns are {', '.join(COLUMNS)}")
    twice = sorted({c for c in cols if cols.count(c) > 1})
    if twice:
        raise ValueError(f"column(s) asked for twice: {', '.join(twice)}")
    return cols


def open(paths):
    """Opens a trace: a path, or a list of paths read as one trace."""
    return Trace(paths)


# What write() accepts per column: the type it casts to and the value of a
# missing column (None: the column is required).
_WRITE_LAYOUT = [
    ("device", pa.int32(), 0),
    ("op", pa.string(), None),
    ("flags", pa.int32(), 0),
    ("offset", pa.int64(), 0),
    ("length", pa.int64(), 0),
    ("queue_ns", pa.int64(), "null"),
    ("issue_ns", pa.int64(), None),
    ("complete_ns", pa.int64(), "null"),
    ("status", pa.int32(), 0),
    ("pid", pa.int32(), "null"),
    ("comm", pa.string(), "null"),
    ("cgroup", pa.int64(), "null"),
    ("cpu", pa.int32(), "null"),
    ("source_index", pa.int64(), "null"),
]


def _batches_of(data):
    if isinstance(data, pa.RecordBatch):
        yield data
    elif isinstance(data, pa.Table):
        yield from data.to_batches()
    elif isinstance(data, pa.RecordBatchReader):
        yield from data
    elif hasattr(data, "__arrow_c_stream__"):
        yield from pa.RecordBatchReader.from_stream(data)
    elif type(data).__module__.startswith("pandas"):
        yield from pa.Table.from_pandas(data, preserve_index=False).to_batches()
    else:
        for item in data:
            yield from _batches_of(item)


def _prepared(batch, writer):
    """The batch in the layout the extension writes, adding devices it refers to."""
    n = batch.num_rows
    arrays = []
    for name, typ, missing in _WRITE_LAYOUT:
        if name in batch.schema.names:
            col = batch.column(name)
            if pa.types.is_dictionary(col.type):
                col = col.dictionary_decode()
            col = col.cast(typ)
        elif missing is None:
            raise ValueError(f"iotape.write: the data has no '{name}' column")
        elif missing == "null":
            col = pa.nulls(n, typ)
        else:
            col = pa.array([missing] * n, typ) if n else pa.array([], typ)
        if name == "op":
            col = col.dictionary_encode()
        arrays.append(col)
    names = [name for name, _, _ in _WRITE_LAYOUT]
    prepared = pa.RecordBatch.from_arrays(arrays, names=names)
    if n:
        top = pc.max(prepared.column("device")).as_py()
        if top is not None and top >= writer.device_count:
            _add_devices(batch, writer, top)
    return prepared


def _add_devices(batch, writer, top):
    """Devices the header did not list, named by the data's device_name column."""
    names = {}
    if "device_name" in batch.schema.names:
        pairs = pa.table({"d": batch.column("device").cast(pa.int32()),
                          "n": batch.column("device_name").cast(pa.string())})
        for row in pairs.group_by(["d", "n"]).aggregate([]).to_pylist():
            if row["n"] is not None:
                names.setdefault(row["d"], row["n"])
    while writer.device_count <= top:
        writer.add_device({"name": names.get(writer.device_count, "")})


def write(path, data, header=None, *, chunk_ios=65536, reorder_window_ns=0):
    """Writes IOs as an iotape trace that every iotape command reads.

    `data`: a pyarrow Table, RecordBatch or RecordBatchReader, a pandas
    DataFrame, or an iterable of those (written as they come: memory is bounded
    by a batch). Columns are those of iotape.open(); op and issue_ns are
    required, the others default to unknown (nulls) or 0. `header`: a dict as
    Trace.header gives (devices, metadata, source, clock, ...); devices the data
    refers to beyond it are added, named from device_name. IOs should come in
    issue-time order; give reorder_window_ns to let the writer sort IOs that
    come at most that late. Returns the writer's counts (ios, chunks,
    file_bytes, late_ios)."""
    writer = _ext.Writer(os.fspath(path), dict(header or {}), int(chunk_ios), int(reorder_window_ns))
    for batch in _batches_of(data):
        if batch.num_rows:
            writer.write(*_prepared(batch, writer).__arrow_c_array__())
    writer.close()
    return writer.stats()
