"""iotape.write(): traces that read back equal and that iotape's commands read."""

import json

import pandas as pd
import pyarrow as pa
import pytest

import iotape
from conftest import cat_csv, iotape as run_iotape, report


def report_of(paths):
    """iotape report --json without the names of the files it read."""
    r = report(paths)
    del r["traces"]
    return r


def same_columns(a, b):
    for name in iotape.COLUMNS:
        assert a.column(name).to_pylist() == b.column(name).to_pylist(), name


@pytest.mark.parametrize("name", ["msr", "vscsi", "blktrace"])
def test_round_trip(samples, tmp_path, name):
    source = iotape.open(samples[name])
    out = tmp_path / "copy.iot"
    stats = iotape.write(out, source.batches(), header=source.header)
    original = source.to_arrow()
    assert stats["ios"] == original.num_rows
    copy = iotape.open(out)
    same_columns(copy.to_arrow(), original)
    assert copy.header["devices"] == source.header["devices"]
    assert copy.header["clock"] == source.header["clock"]
    # Every command reads it, with the original's figures.
    assert report_of([out]) == report_of(samples[name])
    info = json.loads(run_iotape("info", "--json", out).stdout)
    assert info["ios"] == original.num_rows


def test_round_trip_of_a_capture(captured, tmp_path):
    source = iotape.open(captured)
    out = tmp_path / "copy.iot"
    iotape.write(out, source.to_arrow(), header=source.header)
    same_columns(iotape.open(out).to_arrow(), source.to_arrow())
    assert report_of([out]) == report_of(captured)


def test_write_from_pandas_with_few_columns(tmp_path):
    df = pd.DataFrame({
        "op": ["read", "write", "flush", "read"],
        "issue_ns": [1000, 2000, 3000, 4000],
        "complete_ns": [1500, None, 3300, 4100],
        "offset": [0, 4096, 0, 1 << 40],
        "length": [4096, 8192, 0, 512],
        "device": [0, 1, 1, 0],
        "device_name": ["vol-a", "vol-b", "vol-b", "vol-a"],
        "comm": ["db", None, "db", "backup"],
    })
    out = tmp_path / "mine.iot"
    iotape.write(out, df, header={"source": "import", "source_detail": "import:mine", "metadata": {"k": "v"}})
    rows = cat_csv([out])
    assert [r["op"] for r in rows] == ["read", "write", "flush", "read"]
    assert [r["complete_ns"] for r in rows] == ["1500", "", "3300", "4100"]
    assert [r["offset"] for r in rows] == ["0", "4096", "0", str(1 << 40)]
    assert [r["device_name"] for r in rows] == ["vol-a", "vol-b", "vol-b", "vol-a"]
    assert [r["comm"] for r in rows] == ["db", "", "db", "backup"]
    assert [r["cpu"] for r in rows] == ["-1"] * 4
    h = iotape.open(out).header
    assert h["source_detail"] == "import:mine" and h["metadata"] == {"k": "v"}
    r = report([out])
    assert r  # report reads it


def test_write_rejects_bad_input(tmp_path):
    with pytest.raises(ValueError, match="issue_ns"):
        iotape.write(tmp_path / "a.iot", pa.table({"op": ["read"]}))
    with pytest.raises(ValueError, match="unknown op 'jump'"):
        iotape.write(tmp_path / "b.iot", pa.table({"op": ["jump"], "issue_ns": [1]}))


def test_reorder_window_sorts_ios_that_arrive_late(tmp_path):
    issue = [1000, 3000, 2000, 5000, 4000]
    data = pa.table({"op": ["read"] * 5, "issue_ns": issue, "length": [4096] * 5})
    sorted_out, late_out = tmp_path / "sorted.iot", tmp_path / "late.iot"
    assert iotape.write(sorted_out, data, reorder_window_ns=10_000)["late_ios"] == 0
    assert iotape.open(sorted_out).to_arrow().column("issue_ns").to_pylist() == sorted(issue)
    # Without a window, IOs are written as they come and counted as late.
    assert iotape.write(late_out, data)["late_ios"] == 2
    assert json.loads(run_iotape("info", "--json", late_out).stdout)["late_ios"] == 2
