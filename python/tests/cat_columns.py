"""The rows of `iotape cat --format csv` as iotape.open().to_arrow() must
read them, and the first place a table differs from them. Plain Python, no
pytest: tests/wheel_check.py uses it where only the wheel and pyarrow are
installed."""


def expected_columns(rows):
    """The CSV rows as the Arrow columns must read them (unknown -> None)."""
    def num(v, unknown=None):
        return None if v == unknown else int(v)

    return {
        "index": [int(r["index"]) for r in rows],
        "device": [int(r["device"]) for r in rows],
        "device_name": [r["device_name"] or None for r in rows],
        "op": [r["op"] for r in rows],
        "flags": [int(r["flag_bits"]) for r in rows],
        "offset": [int(r["offset"]) for r in rows],
        "length": [int(r["length"]) for r in rows],
        "queue_ns": [num(r["queue_ns"], "") for r in rows],
        "issue_ns": [int(r["issue_ns"]) for r in rows],
        "complete_ns": [num(r["complete_ns"], "") for r in rows],
        "status": [int(r["status"]) for r in rows],
        "pid": [num(r["pid"], "0") for r in rows],
        "comm": [r["comm"] or None for r in rows],
        "cpu": [num(r["cpu"], "-1") for r in rows],
        "cgroup": [num(r["cgroup"], "0") for r in rows],
        "source_index": [num(r["source_index"], "-1") for r in rows],
    }


def first_difference(table, rows, columns):
    """None when the columns COLUMNS of the Arrow table equal the CSV rows
    (csv.DictReader's dicts); else where they first differ."""
    if table.num_rows != len(rows):
        return f"{table.num_rows} rows, the CSV has {len(rows)}"
    want = expected_columns(rows)
    for name in columns:
        got = table.column(name).to_pylist()
        if got != want[name]:
            i = next(i for i, (a, b) in enumerate(zip(got, want[name])) if a != b)
            return f"column {name} differs first at row {i}: {got[i]!r} != {want[name][i]!r}"
    return None
