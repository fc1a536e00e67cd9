"""iotape.open() against `iotape cat --format csv`, field by field, on the
imports of the real samples and a capture; damaged traces; columns, windows."""

import json
import os
import re

import pyarrow as pa
import pytest

import iotape
from cat_columns import first_difference
from conftest import cat_csv, iotape as run_iotape, report


def assert_equals_cat(paths):
    table = iotape.open(paths).to_arrow()
    assert table.schema == iotape.SCHEMA
    rows = cat_csv(paths)
    assert table.num_rows == len(rows) > 0
    difference = first_difference(table, rows, iotape.COLUMNS)
    if difference:
        pytest.fail(f"{paths}: {difference}")
    return table


@pytest.mark.parametrize("name", ["msr", "vscsi", "blktrace"])
def test_real_sample_imports_equal_cat(samples, name):
    table = assert_equals_cat(samples[name])
    # A trace without the field has nulls, not zeros.
    if name == "msr":
        assert table.column("queue_ns").null_count == table.num_rows
        assert table.column("cpu").null_count == table.num_rows


def test_capture_read_as_one_trace_equals_cat(captured):
    table = assert_equals_cat(captured)
    assert table.column("comm").to_pylist().count("fio") > 0.9 * table.num_rows
    assert table.column("complete_ns").null_count < table.num_rows
    # Several parts: still one trace, indexes continue across files.
    assert table.column("index").to_pylist() == list(range(table.num_rows))


def test_header(samples):
    h = iotape.open(samples["blktrace"]).header
    assert h["source"] == "import" and h["creator"] == "iotape"
    info = run_iotape("info", "--json", *samples["blktrace"]).stdout
    for d in h["devices"]:
        assert d["name"] in info
    assert isinstance(h["metadata"], dict)


def test_header_metadata_holds_the_keys_written_at_the_end(samples):
    # An import writes its counts when it ends, after its chunks (several here).
    h = iotape.open(samples["vscsi"]).header
    info = json.loads(run_iotape("info", "--json", *samples["vscsi"]).stdout)
    assert "import.records" in h["metadata"]
    assert h["metadata"] == info["metadata"]


def test_columns_and_window(samples):
    t = iotape.open(samples["vscsi"])
    full = t.to_arrow()
    part = t.to_arrow(columns=["issue_ns", "length"])
    assert part.column_names == ["issue_ns", "length"]
    assert part.column("length").equals(full.column("length"))
    issue = full.column("issue_ns").to_pylist()
    lo, hi = issue[len(issue) // 4], issue[len(issue) // 2]
    win = t.to_arrow(columns=["index", "issue_ns"], window=(lo, hi))
    want = [i for i, v in enumerate(issue) if lo <= v < hi]
    assert win.column("index").to_pylist() == want
    # Without index, the reader seeks: the same IOs.
    assert t.to_arrow(columns=["issue_ns"], window=(lo, hi)).column(0).equals(win.column("issue_ns"))
    assert t.to_arrow(columns=["issue_ns"], window=(None, hi)).num_rows == sum(v < hi for v in issue)
    with pytest.raises(ValueError, match="unknown column"):
        t.to_arrow(columns=["nope"])
    with pytest.raises(ValueError, match="asked for twice: op"):
        t.to_arrow(columns=["op", "length", "op"])


@pytest.mark.parametrize("name", ["vscsi", "blktrace"])
def test_each_column_alone_and_every_column_in_a_window(samples, name):
    """Columns are decoded only when asked for, each on its own (offsets read
    the lengths, queue and completion times the issue times): alone, each
    equals its column in the full table. A window without `index` seeks into
    the middle of a chunk: every column still holds exactly the rows of the
    window."""
    t = iotape.open(samples[name])
    full = t.to_arrow()
    for c in iotape.COLUMNS:
        assert t.to_arrow(columns=[c]).column(0).to_pylist() == full.column(c).to_pylist(), c
    issue = full.column("issue_ns").to_pylist()
    lo, hi = issue[len(issue) // 3], issue[2 * len(issue) // 3]
    keep = [i for i, v in enumerate(issue) if lo <= v < hi]
    cols = [c for c in iotape.COLUMNS if c != "index"]
    win = t.to_arrow(columns=cols, window=(lo, hi))
    assert win.num_rows == len(keep) > 0
    for c in cols:
        want = full.column(c).to_pylist()
        assert win.column(c).to_pylist() == [want[i] for i in keep], c


def test_pandas(samples):
    df = iotape.open(samples["msr"]).to_pandas()
    rows = cat_csv(samples["msr"])
    assert len(df) == len(rows)
    assert str(df["op"].dtype) == "category"
    assert df["length"].sum() == sum(int(r["length"]) for r in rows)


def test_not_a_trace(tmp_path):
    bad = tmp_path / "bad.iot"
    bad.write_bytes(b"hello, not a trace at all")
    with pytest.raises(iotape.TraceError, match=re.escape(str(bad)) + ": byte 0"):
        iotape.open(bad)
    with pytest.raises(OSError):
        iotape.open(tmp_path / "missing.iot")


def test_truncated_trace_gives_good_chunks_then_error(truncated_trace):
    whole, cut = truncated_trace
    source = iotape.open(whole)

    # The truth: what iotape cat prints before it stops, and where it stops.
    r = run_iotape("cat", "--format", "csv", cut, check=False)
    assert r.returncode != 0
    good = len(r.stdout.splitlines()) - 1
    offset = int(re.search(r": byte (\d+):", r.stderr).group(1))
    assert 0 < good < source.to_arrow().num_rows

    seen = []
    with pytest.raises(iotape.TraceError) as err:
        for batch in iotape.open(cut).batches(columns=["index", "offset"]):
            seen.append(batch)
    msg = str(err.value)
    assert str(cut) in msg and f"byte {offset}" in msg, msg
    got = pa.Table.from_batches(seen)
    full = source.to_arrow(columns=["index", "offset"])
    assert got.num_rows == good
    assert got.equals(full.slice(0, good))
    assert isinstance(err.value, ValueError)


def test_readme_example(samples, capsys):
    readme = open(os.path.join(os.path.dirname(__file__), "..", "..", "README.md")).read()
    code = re.search(r"## Python\n.*?```python\n(.*?)```", readme, re.S).group(1)
    assert len(code.strip().splitlines()) == 5
    exec(code.replace('"trace.iot"', repr(samples["msr"][0])), {})
    out = capsys.readouterr().out
    r = report(samples["msr"])
    assert f" {r['ios']}\n" in out.splitlines(keepends=True)[0]
    assert re.search(rf"read\s*│\s*{r['reads']}\s*│\s*{r['bytes_read']}", out), out
    assert re.search(rf"write\s*│\s*{r['writes']}\s*│\s*{r['bytes_written']}", out), out


def test_batches_stream_in_bounded_memory(tmp_path):
    import resource
    from conftest import iotape as run
    path = tmp_path / "long.iot"
    run("synth", "storage-heavy", "--ios", "4000000", "-o", path)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    n = nbytes = 0
    for batch in iotape.open(path).batches():
        n += batch.num_rows
        nbytes += batch.nbytes
    grew_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert n == 4_000_000
    # Over 300 MB of columns went by; a few chunks' worth at most stayed.
    assert nbytes > 300e6 and grew_mb < 100, grew_mb
