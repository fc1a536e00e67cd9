"""The DuckDB example queries, on Arrow and on the Parquet dataset, against
`iotape report --json` (busy time to the nanosecond, counts and bytes exact)."""

import os
import sys

import pytest

import iotape
from conftest import ROOT, report
from iotape import parquet

sys.path.insert(0, os.path.join(ROOT, "python", "examples"))
import duckdb_queries as q  # noqa: E402


def rows(con, sql):
    cur = con.execute(sql)
    names = [d[0] for d in cur.description]
    return [dict(zip(names, r)) for r in cur.fetchall()]


def check_against_report(con, paths, header):
    whole = report(paths)
    t = rows(con, q.TOTALS)[0]
    for key in ("ios", "reads", "writes", "flushes", "discards", "bytes_read", "bytes_written", "bytes_discarded"):
        assert t[key] == whole[key], key

    sizes = {r["bucket"]: r for r in rows(con, q.SIZE_BUCKETS)}
    assert sum(r["ios"] for r in sizes.values()) == whole["reads"] + whole["writes"]
    for bucket, pct in whole["io_size_pct"].items():
        assert abs((sizes[bucket]["pct"] if bucket in sizes else 0.0) - pct) <= 0.05 + 1e-9, bucket

    lat = rows(con, q.LATENCY_PERCENTILES)
    for r in lat:
        want = whole["latency_ns"][r["op"]][r["name"]]
        assert r["report_ns"] == want, r
        assert abs(r["exact_ns"] - want) <= want / 256 + 1, r
    assert len(lat) == 4 * sum(1 for op in ("read", "write", "all") if whole.get("latency_ns", {}).get(op, {}).get("count"))

    busy = {(r["device"], r["kind"]): r["busy_ns"] for r in rows(con, q.BUSY_TIME)}
    devices = sorted({d for d, _ in busy})
    assert devices
    for d in devices:
        dev = header["devices"][d]
        per = report(paths + ["--device", f"{dev['major']}:{dev['minor']}"]) if len(devices) > 1 else whole
        assert busy[(d, "all")] == per["busy_time_ns"], (d, busy)
        assert busy.get((d, "read"), 0) == per["read_busy_time_ns"]
        assert busy.get((d, "write"), 0) == per["write_busy_time_ns"]
    return busy


@pytest.fixture(scope="module")
def traces(samples, captured):
    return {**samples, "captured": captured}


@pytest.mark.parametrize("name", ["msr", "vscsi", "blktrace", "captured"])
def test_queries_on_arrow_and_parquet_equal_report(traces, tmp_path, name):
    paths = traces[name]
    t = iotape.open(paths)
    busy_arrow = check_against_report(q.connect_arrow(t.to_arrow()), paths, t.header)
    out = tmp_path / "ds"
    parquet.write_dataset(paths, str(out), ("device", "hour"))
    busy_parquet = check_against_report(q.connect_parquet(str(out)), paths, t.header)
    assert busy_arrow == busy_parquet
    completions = t.to_arrow(columns=["complete_ns"]).column(0)
    assert (busy_arrow[(0, "all")] > 0) == (completions.null_count < len(completions))
