"""Shared pieces of the Python tests: the iotape binary, the real samples
imported, and a capture of fio on a loop device. Whatever is made here is
removed by the fixture that made it, by its own id."""

import csv
import glob
import json
import os
import signal
import subprocess
import tempfile
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
IOTAPE = os.environ.get("IOTAPE_BINARY", os.path.join(ROOT, "build", "cli", "iotape"))
REAL = os.environ.get("IOTAPE_REAL_TRACES", os.path.join(ROOT, "..", "shared", "traces", "real"))


def require(present, capability):
    """Skips loudly when `capability` is missing, except under CI (where every
    capability the tests use is present), where it fails."""
    if present:
        return
    if os.environ.get("CI"):
        pytest.fail(f"CI lacks {capability}")
    pytest.skip(f"WARNING: skipped, needs {capability}")


def run(*args, check=True):
    r = subprocess.run([str(a) for a in args], capture_output=True, text=True)
    if check and r.returncode != 0:
        raise AssertionError(f"{' '.join(map(str, args))} exited {r.returncode}:\n{r.stdout}\n{r.stderr}")
    return r


def iotape(*args, check=True):
    return run(IOTAPE, *args, check=check)


def report(paths):
    return json.loads(iotape("report", "--json", *paths).stdout)


def cat_csv(paths):
    """iotape cat --format csv, parsed: a list of dicts of strings."""
    out = iotape("cat", "--format", "csv", *paths).stdout
    return list(csv.DictReader(out.splitlines()))


# The real samples and how iotape imports them.
SAMPLES = {
    "msr": ("msr", ["msr-hm0-sample.csv"]),
    "vscsi": ("vscsi", ["cloudphysics-sample.vscsi"]),
    "blktrace": ("blktrace", ["lvm-sda.blktrace.0", "lvm-sda.blktrace.1"]),
}


@pytest.fixture(scope="session")
def workdir():
    with tempfile.TemporaryDirectory(prefix="iotape-py-") as d:
        yield d


@pytest.fixture(scope="session")
def samples(workdir):
    """name -> [trace path] for the imports of the real samples."""
    files = {n: [os.path.join(REAL, f) for f in fs] for n, (_, fs) in SAMPLES.items()}
    require(all(os.path.exists(f) for fs in files.values() for f in fs), f"the real samples in {REAL}")
    out = {}
    for name, (fmt, _) in SAMPLES.items():
        path = os.path.join(workdir, f"{name}.iot")
        iotape("import", fmt, *files[name], "-o", path)
        out[name] = [path]
    return out


@pytest.fixture
def truncated_trace(samples, tmp_path):
    """(whole, cut): the vscsi sample in chunks of 1,000 IOs, and a copy cut
    in the middle of the file."""
    import iotape

    source = iotape.open(samples["vscsi"])
    whole = tmp_path / "whole.iot"
    iotape.write(whole, source.batches(), header=source.header, chunk_ios=1000)
    cut = tmp_path / "cut.iot"
    data = whole.read_bytes()
    cut.write_bytes(data[: len(data) // 2])
    return whole, cut


def _loop_device(backing):
    return run("losetup", "--find", "--show", backing).stdout.strip()


@pytest.fixture(scope="session")
def captured(workdir):
    """`iotape record` of a short fio run on a loop device over /dev/shm,
    rotated every second: the list of parts, one trace."""
    require(os.geteuid() == 0, "root (loop devices, BPF)")
    require(run("which", "fio", check=False).returncode == 0, "fio")
    backing = tempfile.NamedTemporaryFile(dir="/dev/shm", prefix="iotape-py-", delete=False)
    backing.truncate(256 << 20)
    backing.close()
    dev = None
    try:
        dev = _loop_device(backing.name)
        stem = os.path.join(workdir, "cap.iot")
        log = open(os.path.join(workdir, "record.log"), "w+")
        rec = subprocess.Popen([IOTAPE, "record", "-d", dev, "-o", stem, "--backend", "ebpf",
                                "--rotate-time", "1s"], stdout=log, stderr=subprocess.STDOUT)
        try:
            deadline = time.time() + 30
            while "iotape: recording" not in open(log.name).read():
                assert rec.poll() is None and time.time() < deadline, open(log.name).read()
                time.sleep(0.1)
            run("fio", "--name=mix", f"--filename={dev}", "--direct=1", "--ioengine=libaio", "--iodepth=8",
                "--rw=randrw", "--bssplit=4k/50:16k/30:128k/20", "--rate_iops=1500", "--time_based",
                "--runtime=3", "--size=200M", "--output=/dev/null")
        finally:
            rec.send_signal(signal.SIGINT)
            rec.wait(timeout=60)
        assert rec.returncode == 0, open(log.name).read()
        parts = sorted(glob.glob(os.path.join(workdir, "cap.*.iot")))
        assert len(parts) >= 2, (parts, open(log.name).read())
        yield parts
    finally:
        if dev:
            run("losetup", "-d", dev, check=False)
        os.unlink(backing.name)
