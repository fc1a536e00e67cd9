#!/usr/bin/env python3
"""Runs iotape's capture check on Debian kernels under QEMU (TCG).

For each kernel series (5.10 from bullseye, 6.1 from bookworm, 6.12 from
trixie) it fetches the newest cloud kernel package with `apt-get download`
from an apt configuration of its own (the system's is left alone), builds an
initramfs holding busybox, fio, the given iotape binary (each with the shared
libraries it needs, copied from this machine) and the drivers of the emulated
drives, and boots it with an NVMe, a virtio-blk, a virtio-scsi and a SATA
drive (where the kernel has the driver) plus null_blk. In the guest,
guest-check.sh runs a mixed fio workload on each drive while `iotape record`
captures it with each back end; this script compares the trace's counts with
the drive's /sys/block stat over the same window and with fio's own counts,
and prints a table. Exit status 1 when any check is neither exact nor
"counted": short of the counters by no more IOs than the events the capture
counted as dropped (the trace owns up to its loss), with nothing else off.

Everything it fetches or makes is kept under BUILD/vm-cache.

  tests/vm/run.py --iotape build/cli/iotape [--build-dir build] [--kernel 6.1]...
                  [--flavour amd64] [--drives nvme,sata] [--backends ebpf,blktrace,auto]
"""
import argparse
import bisect
import functools
import gzip
import json
import os
import re
import socket
import shutil
import struct
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
DEBIAN = "http://deb.debian.org"
KEYRING = "/usr/share/keyrings/debian-archive-keyring.gpg"
SOURCES = [
    f"{DEBIAN}/debian bullseye main",
    f"{DEBIAN}/debian bookworm main",
    f"{DEBIAN}/debian-security bookworm-security main",
    f"{DEBIAN}/debian trixie main",
]
# Kernel series: the package name pattern (the newest match is taken), for
# a flavour: cloud (the default: fewer drivers, a smaller download; no AHCI
# before 6.12) or amd64.
KERNELS = {
    "5.10": r"^linux-image-5\.10\.0-(\d+)-{flavour}$",
    "6.1": r"^linux-image-6\.1\.0-(\d+)-{flavour}$",
    "6.12": r"^linux-image-6\.12\.(\d+)\+deb13-{flavour}$",
}
FLAVOURS = {"cloud": "cloud-amd64", "amd64": "amd64"}
# Drive kinds: the modules their driver needs (any may be built in).
DRIVES = {
    "nvme": ["nvme"],
    "virtio": ["virtio_pci", "virtio_blk"],
    "scsi": ["virtio_pci", "virtio_scsi", "sd_mod"],
    "sata": ["ahci", "sd_mod"],
    "nullb": ["null_blk"],
}
DISK_BYTES = 256 << 20
NVME_POLL = "poll_queues=1"
# /sys/block/DEV/stat fields (Documentation/block/stat.rst).
STAT = {"reads": 0, "read_sectors": 2, "writes": 4, "write_sectors": 6, "discards": 11, "discard_sectors": 13,
        "flushes": 15}


def log(msg):
    print(f"vm: {msg}", file=sys.stderr, flush=True)


class Apt:
    """apt-get and apt-cache with a configuration, lists and cache of their own."""

    def __init__(self, root):
        self.root = root
        etc = os.path.join(root, "etc")
        for d in ("etc/sources.list.d", "etc/preferences.d", "state/lists/partial", "cache/archives/partial"):
            os.makedirs(os.path.join(root, d), exist_ok=True)
        self.sources = os.path.join(etc, "sources.list")
        with open(self.sources, "w") as f:
            for s in SOURCES:
                f.write(f"deb [signed-by={KEYRING}] {s}\n")
        self.options = []
        for k, v in (("Dir::Etc::sourcelist", self.sources), ("Dir::Etc::sourceparts", os.path.join(etc, "sources.list.d")),
                     ("Dir::Etc::preferencesparts", os.path.join(etc, "preferences.d")),
                     ("Dir::State", os.path.join(root, "state")), ("Dir::Cache", os.path.join(root, "cache")),
                     ("Debug::NoLocking", "1"), ("APT::Sandbox::User", "root"), ("Acquire::Languages", "none")):
            self.options += ["-o", f"{k}={v}"]
        self.updated = False

    def _run(self, tool, args, cwd=None):
        r = subprocess.run([tool, *self.options, *args], cwd=cwd, capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError(f"{tool} {' '.join(args)} failed:\n{r.stderr.strip()}")
        return r.stdout

    def update(self, force=False):
        stamp = os.path.join(self.root, "state", "updated")
        fresh = os.path.exists(stamp) and time.time() - os.path.getmtime(stamp) < 86400
        if self.updated or (fresh and not force):
            return
        log("apt-get update (private configuration under " + self.root + ")")
        self._run("apt-get", ["-q", "update"])
        open(stamp, "w").close()
        self.updated = True

    def names(self, pattern):
        out = self._run("apt-cache", ["search", "--names-only", pattern.replace(r"(\d+)", r"[0-9]+")])
        return [line.split(" - ")[0] for line in out.splitlines() if re.match(pattern, line.split(" - ")[0])]

    def version(self, name):
        out = self._run("apt-cache", ["policy", name])
        m = re.search(r"Candidate:\s*(\S+)", out)
        return m.group(1) if m else "?"

    def download(self, spec, into):
        os.makedirs(into, exist_ok=True)
        self._run("apt-get", ["-q", "download", spec], cwd=into)


def newest_kernel(apt, series, flavour):
    pattern = KERNELS[series].replace("{flavour}", FLAVOURS[flavour])
    names = apt.names(pattern)
    if not names and not apt.updated:
        apt.update(force=True)
        names = apt.names(pattern)
    if not names:
        raise RuntimeError(f"no package matches {pattern}")
    return max(names, key=lambda n: int(re.match(pattern, n).group(1)))


def fetch_deb(apt, spec, debs):
    """The .deb of package `spec` (NAME or NAME/SUITE), downloaded once."""
    name = spec.split("/")[0]
    found = [f for f in os.listdir(debs) if f.startswith(name + "_") and f.endswith(".deb")] if os.path.isdir(debs) else []
    if not found:
        try:
            apt.download(spec, debs)
        except RuntimeError:
            apt.update(force=True)  # the lists may name a version the mirror dropped
            apt.download(spec, debs)
        found = [f for f in os.listdir(debs) if f.startswith(name + "_") and f.endswith(".deb")]
    return os.path.join(debs, sorted(found)[-1])


def extract(deb, into):
    if not os.path.isdir(into):
        tmp = into + ".tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        os.makedirs(os.path.dirname(into), exist_ok=True)
        subprocess.run(["dpkg-deb", "-x", deb, tmp], check=True)
        os.rename(tmp, into)
    return into


def static_busybox(apt, cache):
    host = shutil.which("busybox")
    if host and "statically linked" in subprocess.run(["file", "-L", host], capture_output=True, text=True).stdout:
        return host
    root = extract(fetch_deb(apt, "busybox-static/bookworm", os.path.join(cache, "debs")),
                   os.path.join(cache, "busybox-static"))
    return os.path.join(root, "bin", "busybox")


def library_closure(binary):
    """The shared libraries `binary` loads (ldd), with the dynamic loader."""
    r = subprocess.run(["ldd", binary], capture_output=True, text=True)
    if r.returncode != 0:  # "not a dynamic executable"
        return []
    libs = []
    for line in r.stdout.splitlines():
        m = re.search(r"=>\s*(/\S+)", line) or re.match(r"\s*(/\S+)", line)
        if m:
            libs.append(m.group(1))
    return libs


class Kernel:
    """An extracted kernel package: its image, modules and their dependencies."""

    def __init__(self, root):
        self.root = root
        images = [f for f in os.listdir(os.path.join(root, "boot")) if f.startswith("vmlinuz-")]
        self.release = images[0][len("vmlinuz-"):]
        self.image = os.path.join(root, "boot", images[0])
        for d in ("lib/modules", "usr/lib/modules"):
            if os.path.isdir(os.path.join(root, d, self.release)):
                self.modules = os.path.join(root, d, self.release)
        # Module name -> path relative to self.modules (depmod's modules.dep
        # is made at installation: the package has none).
        self.paths = {}
        for d, _, files in os.walk(os.path.join(self.modules, "kernel")):
            for f in files:
                if re.search(r"\.ko(\.(xz|zst|gz))?$", f):
                    self.paths[self.name_of(f)] = os.path.relpath(os.path.join(d, f), self.modules)
        with open(os.path.join(self.modules, "modules.builtin")) as f:
            self.builtin = {self.name_of(line.strip()) for line in f}

    @staticmethod
    def name_of(path):
        return re.sub(r"\.ko(\.(xz|zst|gz))?$", "", os.path.basename(path)).replace("-", "_")

    def has(self, module):
        return module in self.paths or module in self.builtin

    def dependencies(self, module):
        """What `module` needs loaded first: the depends= of its .modinfo."""
        info = modinfo(decompressed(os.path.join(self.modules, self.paths[module])))
        return [d.replace("-", "_") for d in info.get("depends", "").split(",") if d]

    def load_order(self, modules):
        """Module paths to insmod for `modules`, dependencies first."""
        order = []

        def visit(m):
            if m not in self.paths or self.paths[m] in order:
                return
            for d in self.dependencies(m):
                visit(d)
            order.append(self.paths[m])

        for m in modules:
            visit(m)
        return order


class Cpio:
    """A newc cpio archive (what the kernel unpacks as initramfs)."""

    def __init__(self):
        self.data = bytearray()
        self.ino = 1

    def _entry(self, name, mode, body=b"", rdev=(0, 0), nlink=1):
        fields = [self.ino, mode, 0, 0, nlink, 0, len(body), 0, 0, rdev[0], rdev[1], len(name) + 1, 0]
        self.ino += 1
        self.data += b"070701" + "".join(f"{v:08x}" for v in fields).encode() + name.encode() + b"\0"
        self.data += b"\0" * (-len(self.data) % 4) + body
        self.data += b"\0" * (-len(self.data) % 4)

    def add_tree(self, root):
        for d, dirs, files in os.walk(root):
            dirs.sort()
            rel = os.path.relpath(d, root)
            if rel != ".":
                self._entry(rel, 0o040755, nlink=2)
            for f in sorted(files) + [x for x in dirs if os.path.islink(os.path.join(d, x))]:
                p = os.path.join(d, f)
                name = os.path.normpath(os.path.join(rel, f))
                if os.path.islink(p):
                    self._entry(name, 0o120777, os.readlink(p).encode())
                else:
                    with open(p, "rb") as fh:
                        self._entry(name, 0o100000 | (os.stat(p).st_mode & 0o7777), fh.read())

    def add_char_device(self, name, major, minor):
        self._entry(name, 0o020600, rdev=(major, minor))

    def finish(self):
        self._entry("TRAILER!!!", 0)
        return bytes(self.data)


def copy_binary(src, root, dest):
    """Copies `src` to `dest` in `root` with every shared library it loads."""
    target = os.path.join(root, dest.lstrip("/"))
    os.makedirs(os.path.dirname(target), exist_ok=True)
    # Without debug information: the guest unpacks the archive into its memory.
    subprocess.run(["objcopy", "--strip-debug", os.path.realpath(src), target], check=True)
    for lib in library_closure(src):
        t = os.path.join(root, lib.lstrip("/"))
        if not os.path.exists(t):
            os.makedirs(os.path.dirname(t), exist_ok=True)
            shutil.copy2(os.path.realpath(lib), t)


def decompressed(path):
    if path.endswith(".xz"):
        return subprocess.run(["xz", "-dc", path], check=True, capture_output=True).stdout
    if path.endswith(".zst"):
        return subprocess.run(["zstd", "-dc", path], check=True, capture_output=True).stdout
    if path.endswith(".gz"):
        return gzip.decompress(open(path, "rb").read())
    return open(path, "rb").read()


def modinfo(elf):
    """The key=value strings of a kernel module's .modinfo section (ELF64)."""
    shoff, = struct.unpack_from("<Q", elf, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", elf, 0x3A)

    def section(i):
        name, _, _, _, offset, size = struct.unpack_from("<IIQQQQ", elf, shoff + i * shentsize)
        return name, elf[offset:offset + size]

    names = section(shstrndx)[1]
    for i in range(shnum):
        name, body = section(i)
        if names[name:names.index(b"\0", name)] == b".modinfo":
            pairs = (s.decode("utf-8", "replace").partition("=") for s in body.split(b"\0") if s)
            return {k: v for k, _, v in pairs}
    return {}


def build_initramfs(kernel, drives, busybox, iotape, work, files=None, params=None):
    """The initramfs for `kernel` and `drives`, with `files` ({path in the
    guest: file here}) and module parameters `params` ({module: "k=v ..."});
    returns its path."""
    root = os.path.join(work, "root")
    shutil.rmtree(root, ignore_errors=True)
    os.makedirs(os.path.join(root, "bin"))
    shutil.copy2(busybox, os.path.join(root, "bin", "busybox"))
    copy_binary(shutil.which("fio"), root, "/usr/bin/fio")
    copy_binary(iotape, root, "/usr/bin/iotape")
    modules = []
    for d in drives:
        modules += DRIVES[d]
    with open(os.path.join(root, "modules.order"), "w") as order:
        for rel in kernel.load_order(modules):
            plain = re.sub(r"\.(xz|zst|gz)$", "", rel)
            target = os.path.join(root, "lib", "modules", plain)
            os.makedirs(os.path.dirname(target), exist_ok=True)
            with open(target, "wb") as f:
                f.write(decompressed(os.path.join(kernel.modules, rel)))
            name = Kernel.name_of(plain)
            order.write(plain + (f" {params[name]}" if params and name in params else "") + "\n")
    shutil.copy2(os.path.join(HERE, "init.sh"), os.path.join(root, "init"))
    for script in ("guest-check.sh", "guest-scaling.sh"):
        shutil.copy2(os.path.join(HERE, script), os.path.join(root, script))
    for dest, src in (files or {}).items():
        shutil.copy2(src, os.path.join(root, dest.lstrip("/")))
    os.chmod(os.path.join(root, "init"), 0o755)
    for d in ("dev", "proc", "sys", "tmp"):
        os.makedirs(os.path.join(root, d), exist_ok=True)
    archive = Cpio()
    archive.add_tree(root)
    archive.add_char_device("dev/console", 5, 1)
    path = os.path.join(work, "initramfs.cpio.gz")
    with open(path, "wb") as f:
        f.write(gzip.compress(archive.finish(), compresslevel=1))
    return path


def qemu_drives(drives, work):
    args = []
    for d in drives:
        if d == "nullb":
            continue
        disk = os.path.join(work, f"{d}.img")
        with open(disk, "wb") as f:  # a fresh, sparse drive each boot
            f.truncate(DISK_BYTES)
        drive = f"file={disk},if=none,id={d}0,format=raw,cache=unsafe,discard=unmap"
        args += ["-drive", drive]
        if d == "nvme":
            args += ["-device", "nvme,drive=nvme0,serial=iotape-nvme"]
        elif d == "virtio":
            args += ["-device", "virtio-blk-pci,drive=virtio0"]
        elif d == "scsi":
            args += ["-device", "virtio-scsi-pci,id=vscsi", "-device", "scsi-hd,drive=scsi0,bus=vscsi.0"]
        elif d == "sata":
            args += ["-device", "ahci,id=ahci", "-device", "ide-hd,drive=sata0,bus=ahci.0"]
    return args


def text_symbols(path):
    """(address, name) of every text symbol a guest wrote (/proc/kallsyms), by address."""
    out = []
    with open(path) as f:
        for line in f:
            parts = line.split()
            if len(parts) == 3 and parts[1] in "tTwW":
                out.append((int(parts[0], 16), parts[2]))
    return sorted(out)


def symbol_of(address, table):
    """The function of `table` (text_symbols) holding a kernel address, as func+0xoff."""
    i = bisect.bisect_right(table, (address, "\uffff")) - 1
    return f"{table[i][1]}+{address - table[i][0]:#x}" if i >= 0 else f"{address:#x}"


def stuck_at(monitor, symbols):
    """Where a hung guest's CPUs are: each one's instruction pointer, sampled
    five times through the QEMU monitor, as kernel functions."""
    table = text_symbols(symbols) if os.path.exists(symbols) else []
    samples = []
    try:
        for _ in range(5):
            with socket.socket(socket.AF_UNIX) as s:
                s.settimeout(2)
                s.connect(monitor)
                s.sendall(b"info registers -a\n")
                text, end = b"", time.monotonic() + 2
                while time.monotonic() < end and text.count(b"RIP=") < 2:
                    try:
                        text += s.recv(65536)
                    except socket.timeout:
                        break
            rips = [int(r, 16) for r in re.findall(rb"RIP=([0-9a-f]{16})", text)]
            samples.append(" ".join(symbol_of(r, table) for r in rips))
            time.sleep(0.2)
    except OSError as e:
        samples.append(f"(monitor: {e})")
    return " | ".join(samples)


def boot(kernel, initramfs, drives, backends, runtime, work, timeout, threads="single", extra=""):
    """Boots the guest (its vCPUs on one host thread, or with threads="multi"
    one each; `extra` appended to the kernel command line); returns (its
    result lines, error or None, seconds)."""
    console = os.path.join(work, "console.log")
    results = os.path.join(work, "results.log")
    for p in (console, results):
        if os.path.exists(p):
            os.remove(p)
    monitor = os.path.join(work, "monitor.sock")
    # nokaslr: the kernel's addresses are the same at every boot, so the text
    # symbols one boot writes (the package's System.map is a stub) name the
    # functions a hung guest's CPUs are in (stuck_at).
    symbols = os.path.join(os.path.dirname(kernel.image), "kallsyms")
    want_symbols = not os.path.exists(symbols)
    append = (f"console=ttyS0 panic=-1 loglevel=4 nokaslr iotape.drives={','.join(drives)} "
              f"iotape.backends={','.join(backends)} iotape.runtime={runtime} iotape.kallsyms={int(want_symbols)} {extra}")
    # One host thread runs both vCPUs (thread=single). With a thread per vCPU,
    # code one vCPU patches (enabling or disabling a tracepoint writes a
    # breakpoint, then the new bytes) could still run stale on the other: 6.12
    # crashed on such a breakpoint ("Oops: int3") in about one boot of ten,
    # and a 6.1 guest hung whole (no CPU ran its shell) at a tracer's stop in
    # two of about twenty. The matrix takes as long either way: its cells are
    # timed fio runs, and it leaves the host a core. A measurement of how
    # work scales over the two vCPUs needs a host thread for each (it patches
    # no code: no tracing).
    cmd = ["qemu-system-x86_64", "-accel", f"tcg,thread={threads}", "-cpu", "max", "-m", "1G", "-smp", "2", "-nographic",
           "-monitor", f"unix:{monitor},server,nowait", "-no-reboot", "-nic", "none", "-kernel", kernel.image,
           "-initrd", initramfs, "-append", append, "-serial", "stdio", "-serial", f"file:{results}",
           "-serial", f"file:{symbols}.part" if want_symbols else "null", *qemu_drives(drives, work)]
    start = time.monotonic()
    error = None
    with open(console, "wb") as out:
        p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT)
        try:
            p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            error = f"timeout after {timeout} s; guest CPUs at {stuck_at(monitor, symbols)}"
            p.kill()
            p.wait()
    seconds = time.monotonic() - start
    if want_symbols and os.path.getsize(symbols + ".part") > 0:
        os.replace(symbols + ".part", symbols)
    lines = []
    if os.path.exists(results):
        with open(results, "rb") as f:
            lines = [l.decode("utf-8", "replace").rstrip("\r") for l in f.read().split(b"\n")]
    if error is None and not any(l.startswith("IOTAPE-VM - - done") for l in lines):
        error = f"the guest stopped before the end (qemu exit {p.returncode})"
    if error:
        # The kernel's own complaint, if it made one (a panic, an oops, a lockup).
        with open(console, "rb") as f:
            text = f.read().decode("utf-8", "replace")
        oops = re.search(r"(Kernel panic[^\r\n]*|BUG:[^\r\n]*|Oops[^\r\n]*|INFO: task [^\r\n]*|rcu: INFO[^\r\n]*)", text)
        error += (f": {oops.group(1).strip()}" if oops else "") + f"; see {console}"
    return lines, error, seconds


def parse(lines):
    """Result lines -> {(drive, backend): {key: value or [values]}}."""
    runs = {}
    for line in lines:
        if not line.startswith("IOTAPE-VM "):
            continue
        parts = line.split(" ", 4)
        if len(parts) < 4:
            continue
        drive, backend, key = parts[1:4]
        value = parts[4] if len(parts) > 4 else ""
        run = runs.setdefault((drive, backend), {})
        if key in ("record_log", "fio_log", "replay_log", "module", "module_failed", "hang", "kernel_log",
                   "uncompleted_io", "io_diff"):
            run.setdefault(key, []).append(value)
        else:
            run[key] = value
    return runs


def fio_counts(fio):
    c = {k: 0 for k in ("reads", "read_bytes", "writes", "write_bytes", "discards", "discard_bytes", "syncs")}
    for job in fio["jobs"]:
        c["reads"] += job["read"]["total_ios"]
        c["read_bytes"] += job["read"]["io_bytes"]
        c["writes"] += job["write"]["total_ios"]
        c["write_bytes"] += job["write"]["io_bytes"]
        c["discards"] += job["trim"]["total_ios"]
        c["discard_bytes"] += job["trim"]["io_bytes"]
        c["syncs"] += job.get("sync", {}).get("total_ios", 0)
    return c


KEYS = ("reads", "writes", "discards", "flushes", "read_bytes", "write_bytes", "discard_bytes")


def judge(run):
    """One run's verdict: {"result": exact|counted|mismatch|failed, "detail": ..., counts}."""
    def fail(why):
        return {"result": "failed", "detail": why}

    if "hang" in run:
        return fail("record still running 60 s after SIGINT: " + " | ".join(run["hang"])[:600])
    rec_log = run.get("record_log", [])
    if "stat_after" not in run or run.get("record_rc") not in ("0", None):
        why = " | ".join(rec_log[-6:])
        return fail(f"record exit {run.get('record_rc')}: " + (why[:400] + " ..." if len(why) > 400 else why))
    if run.get("fio_rc") != "0" or "fio_json" not in run:
        return fail(f"fio exit {run.get('fio_rc')}: " + " | ".join(run.get("fio_log", [])[-3:]))
    if "info_json" not in run:
        return fail(f"iotape info exit {run.get('info_rc')}")
    before = [int(x) for x in run["stat_before"].split()]
    after = [int(x) for x in run["stat_after"].split()]
    if len(after) < 17:
        return fail("no flush counters in /sys/block/*/stat")
    d = {k: after[i] - before[i] for k, i in STAT.items()}
    stat = {"reads": d["reads"], "writes": d["writes"], "discards": d["discards"], "flushes": d["flushes"],
            "read_bytes": d["read_sectors"] * 512, "write_bytes": d["write_sectors"] * 512,
            "discard_bytes": d["discard_sectors"] * 512}
    info = json.loads(run["info_json"])
    # As /sys/block/*/stat counts (tests/record_test.cc): a write-zeroes is a
    # write, an fsync's empty preflush write is a write too.
    trace = {"reads": info["reads"], "writes": info["writes"] + info["write_zeroes"], "discards": info["discards"],
             "flushes": info["flushes"], "read_bytes": info["bytes_read"],
             "write_bytes": info["bytes_written"] + info["bytes_write_zeroes"],
             "discard_bytes": info["bytes_discarded"]}
    f = fio_counts(json.loads(run["fio_json"]))
    # An fsync becomes an empty preflush write only on a drive with a write
    # cache; without one the kernel completes it at once.
    write_back = run.get("write_cache", "").startswith("write back")
    fio = {"reads": f["reads"], "writes": f["writes"] + (f["syncs"] if write_back else 0), "discards": f["discards"],
           "read_bytes": f["read_bytes"], "write_bytes": f["write_bytes"], "discard_bytes": f["discard_bytes"]}
    meta = info.get("metadata", {})
    losses = {"dropped_events": info.get("dropped_events", 0),
              "unmatched_completions": int(meta.get("capture.unmatched_completions", 0)),
              "uncompleted_ios": int(meta.get("capture.uncompleted_ios", 0)),
              # Left out as the recording's own: none of fio's may be.
              "self_ios": int(meta.get("capture.self_ios", 0))}
    diffs = [f"{k} trace {trace[k]} stat {stat[k]}" for k in KEYS if trace[k] != stat[k]]
    diffs += [f"{k} trace {trace[k]} fio {fio[k]}" for k in fio if trace[k] != fio[k]]
    diffs += [f"{k} {v}" for k, v in losses.items() if v]
    diffs += [f"IO without completion: {l}" for l in run.get("uncompleted_io", [])]
    diffs += [f"{'fio IO not in the trace' if l[0] == '-' else 'trace IO fio did not make'}: {l[1:]}"
              for l in io_diffs(run, f)]
    if write_back and int(run.get("empty_preflush_writes", -1)) != f["syncs"]:
        diffs.append(f"empty preflush writes {run.get('empty_preflush_writes')}, fio fsyncs {f['syncs']}")
    if trace["reads"] + trace["writes"] == 0:
        diffs.append("no IOs recorded")
    # The submitter: fio's process (its threads share its pid) for every byte
    # fio read, wrote and trimmed.
    submitted = None
    if "report_json" in run and "fio_pid" in run:
        procs = json.loads(run["report_json"]).get("processes", [])
        submitted = sum(p["bytes_read"] + p["bytes_written"] + p["bytes_discarded"] for p in procs
                        if str(p.get("pid")) == run["fio_pid"])
        made = f["read_bytes"] + f["write_bytes"] + f["discard_bytes"]
        if submitted != made:
            diffs.append(f"bytes with fio's pid {submitted}, fio moved {made}")
    else:
        diffs.append("no per-process report")
    result = "mismatch" if diffs else "exact"
    if diffs and counted_loss(run, trace, stat, fio, losses, submitted, f):
        result = "counted"
    out = {"result": result, "detail": "; ".join(diffs), "trace": trace, "stat": stat,
           "fio": fio, "fio_syncs": f["syncs"], "fio_pid_bytes": submitted, "losses": losses,
           "source_detail": info.get("source_detail", ""),
           "metadata": meta}
    return out


def io_diffs(run, f):
    """The lines where fio's IOs (op, offset, length) and the trace's differ,
    less those fio could not log: fio logs an IO's latency only while its job
    runs (should_account in fio's io_u.c), so the IOs still in flight when the
    runtime ends are in its counts and on the drive, not in its log. The trace
    may hold that many IOs the log lacks, and must hold every IO it has."""
    lines = run.get("io_diff", [])
    if "io_diff_counts" not in run or "fio_logged" not in run:
        return lines
    missing, extra = (int(x) for x in run["io_diff_counts"].split())
    unlogged = f["reads"] + f["writes"] + f["discards"] - int(run["fio_logged"])
    return [] if missing == 0 and extra <= unlogged else lines


def counted_loss(run, trace, stat, fio, losses, submitted, f):
    """True when the trace falls short of the drive's counters and fio's by
    no more IOs than the events the capture counted as dropped, and nothing
    else is off: a loss the trace owns up to (the kernel's ring buffer
    keeping events no read returns), not one iotape hid."""
    dropped = losses["dropped_events"]
    if not dropped or any(v for k, v in losses.items() if k != "dropped_events"):
        return False
    if submitted is None or run.get("uncompleted_io") or trace["reads"] + trace["writes"] == 0:
        return False
    if any(trace[k] > stat[k] for k in KEYS) or any(trace[k] > fio[k] for k in fio):
        return False
    if int(run.get("empty_preflush_writes", 0)) > f["syncs"]:
        return False
    missing = sum(stat[k] - trace[k] for k in ("reads", "writes", "discards", "flushes"))
    missing_bytes = sum(stat[k] - trace[k] for k in ("read_bytes", "write_bytes", "discard_bytes"))
    made = f["read_bytes"] + f["write_bytes"] + f["discard_bytes"]
    # An IO whose queue events were the dropped ones is in the trace without its submitter.
    unattributed = made - submitted - missing_bytes
    return unattributed >= 0 and missing + (1 if unattributed else 0) <= dropped


def judge_without_btf(run):
    """With /sys/kernel/btf hidden: `--backend ebpf` refuses, naming the blktrace
    back end, and `--backend auto` records with blktrace, exactly."""
    v = judge(run)
    if v["result"] == "failed":
        return v
    # The capture's own verdict (exact, counted or mismatch) stands unless the refusal or the choice is wrong.
    wrong = []
    if run.get("ebpf_rc") in (None, "0") or "--backend blktrace" not in run.get("ebpf_error", ""):
        wrong.append(f"--backend ebpf: exit {run.get('ebpf_rc')}, {run.get('ebpf_error', 'no error')!r}")
    if not v.get("source_detail", "").startswith("blktrace"):
        wrong.append(f"auto chose {v.get('source_detail') or 'nothing'}")
    if wrong:
        v.update(result="mismatch", detail="; ".join(([v["detail"]] if v["detail"] else []) + wrong))
    return v


def drive_complaints(run):
    """What the guest kernel said of the drive during a cell, in short: QEMU's
    emulated NVMe controller, under TCG, now and then leaves a command
    uncompleted until the kernel aborts it and resets the controller. The
    cell's IOs still complete (retried), but its timing holds the stall."""
    log_lines = run.get("kernel_log", []) if run else []
    if not log_lines:
        return ""
    timeouts = sum("timeout, abort" in l for l in log_lines)
    resets = sum("reset controller" in l for l in log_lines)
    errors = sum("I/O error" in l for l in log_lines)
    parts = [f"{n} {what}" for n, what in ((timeouts, "command timeouts"), (resets, "controller resets"),
                                            (errors, "I/O errors")) if n]
    return "guest kernel: " + (", ".join(parts) if parts else log_lines[0][:120])


def judge_replay(run):
    """A replay's verdict: device times; every timed IO has the blk tracer's
    request of its op, offset and length; and its busy time within 1% of the
    tracer's union of request intervals over the same run, or within 1% once
    the difference the per-IO comparison measures between the two probes'
    times is taken out. Both probes time the same tracepoints, one after the
    other: under TCG a request's completion came 3-10 us later to the second
    probe than to the first, its issue 2-5 us; and for 1-5% of the IOs the
    emulator stalled between the two probes, up to 4 ms, which moves the busy
    time by more than 1% where such an IO starts or ends a busy period. So
    where at most 10% of the IOs are more than 50 us apart, within 1% of the
    tracer's union with those IOs' intervals as the replay timed them also
    holds (see match_times in guest-check.sh). Not judged on busy time where the
    guest kernel reset the emulated drive during the cell: its stalled
    commands are issued again after the reset. Untimed IOs are shown, not
    judged: on 5.10, where io_uring runs fsyncs on worker threads, up to 0.5%
    of the IOs (fsyncs' empty writes) went untimed."""
    if "hang" in run:
        return {"result": "failed", "detail": "tracer still running 60 s after SIGINT: " + " | ".join(run["hang"])[:600]}
    if run.get("replay_rc") != "0" or "result_json" not in run or "tracer_json" not in run:
        why = " | ".join(run.get("replay_log", [])[-4:])
        return {"result": "failed", "detail": f"replay exit {run.get('replay_rc')}, tracer exit "
                                              f"{run.get('tracer_rc')}: {why[:400]}"}
    result, tracer = json.loads(run["result_json"]), json.loads(run["tracer_json"])
    meta = json.loads(run.get("result_info", "{}")).get("metadata", {})
    figures, _, missed = run.get("match", "").partition(" unmatched_ios ")
    words = figures.split()
    match = {k: float(v) for k, v in zip(words[::2], words[1::2])}
    busy, truth = result["busy_time_ns"], tracer["busy_time_ns"]
    off = (busy - truth) / truth if truth else 1.0
    probes = ((match.get("mean_dcomplete_ns", 0) - match.get("mean_dissue_ns", 0)) *
              (match.get("ios", 0) - match.get("unmatched", 0)) / truth if truth else 0.0)
    untimed = int(meta.get("replay.device_untimed_ios", 0))
    reset = any("reset controller" in l for l in run.get("kernel_log", []))
    diffs = []
    if meta.get("replay.times", "") != "device":
        diffs.append(f"replay.times {meta.get('replay.times') or 'missing'}")
    if not match:
        diffs.append("no per-IO comparison")
    elif match["unmatched"]:
        diffs.append(f"{match['unmatched']:.0f} IOs without the tracer's request of their op, offset and length "
                     f"(op,flags,offset,length,issue,complete/the tracer's at that offset: {missed})")
    far_busy = match.get("far_as_replayed_busy_ns", 0)
    far_off = (busy - far_busy) / far_busy if far_busy else 1.0
    few_far = match.get("far", 0) <= 0.1 * (match.get("ios", 0) - match.get("unmatched", 0))
    if not reset and abs(off) > 0.01 and abs(off - probes) > 0.01 and not (few_far and abs(far_off) <= 0.01):
        diffs.append(f"busy {busy / 1e6:.3f} ms vs tracer {truth / 1e6:.3f} ms ({100 * off:+.2f}%; "
                     f"{100 * (off - probes):+.2f}% without the probes' difference, {100 * far_off:+.2f}% against "
                     f"the tracer's with its {match.get('far', 0):.0f} IOs over 50 us apart as replayed)")
    return {"result": "mismatch" if diffs else "exact", "detail": "; ".join(diffs), "busy_ns": busy,
            "tracer_busy_ns": truth, "busy_off": off, "probes": probes, "far_off": far_off, "busy_judged": not reset,
            "replayed_ios": result["ios"], "tracer_ios": tracer["ios"], "untimed": untimed,
            "unclaimed": int(meta.get("replay.device_unclaimed_requests", 0)), "match": match}


def judge_iopoll(run):
    """judge_replay's verdict on a replay with --iopoll, which must also have
    polled: the result says so, the drive has a poll queue, and its IO
    queues raised an interrupt for at most 1% of the replay's IOs."""
    v = judge_replay(run)
    if v["result"] == "failed":
        return v
    meta = json.loads(run.get("result_info", "{}")).get("metadata", {})
    irqs, ios = int(run.get("queue_irqs", "-1")), v["replayed_ios"]
    diffs = [v["detail"]] if v["detail"] else []
    if meta.get("replay.ring") != "iopoll":
        diffs.append(f"replay.ring {meta.get('replay.ring') or 'missing'}")
    if run.get("io_poll") != "1":
        diffs.append(f"queue/io_poll {run.get('io_poll')}")
    if irqs < 0 or irqs > ios / 100:
        diffs.append(f"{irqs} interrupts of the IO queues for {ios} IOs")
    v.update(result="mismatch" if diffs else "exact", detail="; ".join(diffs), queue_irqs=irqs)
    return v


def run_kernel(series, apt, cache, args):
    name = newest_kernel(apt, series, args.flavour)
    label = series if args.flavour == "cloud" else f"{series}-{args.flavour}"
    log(f"kernel {series}: {name} {apt.version(name)}")
    kernel = Kernel(extract(fetch_deb(apt, name, os.path.join(cache, "debs")), os.path.join(cache, "kernels", name)))
    drives, absent = [], {}
    for d in args.drives:
        missing = [m for m in DRIVES[d] if not kernel.has(m)]
        if missing:
            absent[d] = "no " + ",".join(missing) + " in this kernel"
        else:
            drives.append(d)
    work = os.path.join(cache, "work", label)
    os.makedirs(work, exist_ok=True)
    # A poll queue for the NVMe drive (as a module's parameter, or on the
    # command line where the driver is built in): --iopoll replays onto it.
    initramfs = build_initramfs(kernel, drives, static_busybox(apt, cache), args.iotape, work,
                                params={"nvme": NVME_POLL})
    log(f"booting {kernel.release} with {','.join(drives)} (initramfs {os.path.getsize(initramfs) >> 20} MiB)")

    def boot_drives():
        return boot(kernel, initramfs, drives, args.backends, args.runtime, work, args.timeout, extra=f"nvme.{NVME_POLL}")

    lines, error, seconds = boot_drives()
    for _ in range(2):
        if not (error and re.search(r"Oops: int3", error)):
            break
        # The guest kernel trapped on a breakpoint it plants while patching its
        # own code (enabling tracepoints): TCG does not order cross-modifying
        # code as a CPU does. 6.12 crashed so in about one boot of ten, twice
        # in a row once; it says nothing of iotape. Up to two boots again.
        log(f"{series}: the guest crashed ({error}); booting it again")
        lines, error, seconds = boot_drives()
    runs = parse(lines)
    general = runs.get(("-", "-"), {})
    for m in general.get("module_failed", []):
        log(f"{series}: insmod failed: {m}")
    results = []
    for d in args.drives:
        for b in args.backends:
            if d in absent:
                v = {"result": "n/a", "detail": absent[d]}
            elif (d, "-") in runs:
                v = {"result": "failed", "detail": runs[(d, "-")].get("missing", "no device")}
            elif (d, b) in runs and "end" in runs[(d, b)]:
                v = judge(runs[(d, b)])
            else:
                v = {"result": "failed", "detail": error or "no result"}
            v.update(kernel=label, release=kernel.release, package=name, drive=d, backend=b,
                     complaints=drive_complaints(runs.get((d, b))))
            results.append(v)
        if d == "nvme" and d not in absent:
            # With original timing on one ring, afap on two rings, and
            # original timing polling the drive's poll queue.
            for cell in ("replay", "replay-2", "replay-iopoll"):
                r = runs.get((d, cell))
                judged_by = judge_iopoll if cell == "replay-iopoll" else judge_replay
                v = judged_by(r) if r and "end" in r else {"result": "failed", "detail": error or "no replay result"}
                v.update(kernel=label, release=kernel.release, package=name, drive=d, backend=cell,
                         complaints=drive_complaints(r))
                results.append(v)
            r = runs.get((d, "auto-nobtf"))
            v = judge_without_btf(r) if r and "end" in r else {"result": "failed", "detail": error or "no result"}
            v.update(kernel=label, release=kernel.release, package=name, drive=d, backend="auto-nobtf",
                     complaints=drive_complaints(r))
            results.append(v)
    with open(os.path.join(work, "results.json"), "w") as f:
        json.dump({"seconds": seconds, "error": error, "runs": results}, f, indent=1)
    log(f"kernel {label}: {seconds:.0f} s in the VM" + (f" ({error})" if error else ""))
    return results, seconds


def print_table(results):
    print(f"{'kernel':<10} {'drive':<7} {'backend':<10} {'result':<9} "
          f"{'reads':>7} {'writes':>7} {'discards':>8} {'flushes':>7} {'MiB r/w/d':>15}  detail")
    for r in results:
        t = r.get("trace")
        counts = (f"{t['reads']:>7} {t['writes']:>7} {t['discards']:>8} {t['flushes']:>7} "
                  f"{t['read_bytes'] / 2**20:>5.1f}/{t['write_bytes'] / 2**20:.1f}/{t['discard_bytes'] / 2**20:.1f}"
                  if t else f"{'':>7} {'':>7} {'':>8} {'':>7} {'':>15}")
        detail = r.get("detail", "")
        if r["result"] == "exact" and r["backend"].startswith("replay"):
            m = r["match"]
            detail = (f"device times; busy {r['busy_ns'] / 1e6:.3f} ms, blk tracer {r['tracer_busy_ns'] / 1e6:.3f} ms "
                      f"({100 * r['busy_off']:+.3f}%; probes {100 * r['probes']:+.3f}%; "
                      f"{m.get('far', 0):.0f} IOs over 50 us apart as replayed {100 * r['far_off']:+.3f}%"
                      f"{'' if r['busy_judged'] else ', not judged: drive reset'}), {r['replayed_ios']} IOs replayed, "
                      f"{r['untimed']} untimed, {r['unclaimed']} requests unclaimed; per IO: "
                      f"{100 * m['within10us']:.2f}% within 10 us of the tracer's request, mean issue "
                      f"{m['mean_dissue_ns'] / 1e3:+.1f} us, completion {m['mean_dcomplete_ns'] / 1e3:+.1f} us")
        elif r["result"] == "exact" and r["backend"] == "auto-nobtf":
            detail = (f"no BTF: ebpf refused, auto took {r.get('source_detail', '')}: = stat, = fio "
                      f"({r['fio_syncs']} fsyncs), all its bytes with fio's pid")
        elif r["result"] == "exact":
            detail = (f"= stat, = fio ({r['fio_syncs']} fsyncs), all its bytes with fio's pid; "
                      f"{r.get('source_detail', '')}")
        if r.get("complaints"):
            detail += f"; {r['complaints']}"
        print(f"{r['kernel']:<10} {r['drive']:<7} {r['backend']:<10} {r['result']:<9} {counts:>15}  {detail}")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--iotape", required=True, help="the iotape binary to test (static or dynamic)")
    p.add_argument("--build-dir", default=os.path.join(HERE, "..", "..", "build"),
                   help="build tree; downloads and images go to BUILD/vm-cache")
    p.add_argument("--kernel", action="append", choices=sorted(KERNELS),
                   help="kernel series to boot, repeatable (default: all, or $IOTAPE_VM_KERNELS)")
    p.add_argument("--flavour", choices=sorted(FLAVOURS), default="cloud",
                   help="Debian kernel flavour (amd64 has AHCI on every series)")
    p.add_argument("--drives", default="nvme,virtio,scsi,sata,nullb")
    p.add_argument("--backends", default="ebpf,blktrace,auto")
    p.add_argument("--runtime", type=int, default=3, help="seconds of fio per drive and back end")
    p.add_argument("--timeout", type=int, default=400, help="seconds one boot may take (a healthy one: 1-2 minutes)")
    p.add_argument("--update", action="store_true", help="refresh the package lists")
    args = p.parse_args()
    args.drives = args.drives.split(",")
    args.backends = args.backends.split(",")
    for d in args.drives:
        if d not in DRIVES:
            p.error(f"unknown drive kind {d}")
    kernels = args.kernel or os.environ.get("IOTAPE_VM_KERNELS", "").split(",")
    kernels = [k for k in kernels if k] or list(KERNELS)
    for tool in ("qemu-system-x86_64", "apt-get", "dpkg-deb", "objcopy", "fio"):
        if not shutil.which(tool):
            p.error(f"{tool} is missing (Debian: apt-get install qemu-system-x86 fio binutils)")
    args.iotape = os.path.abspath(args.iotape)
    cache = os.path.join(os.path.abspath(args.build_dir), "vm-cache")
    apt = Apt(os.path.join(cache, "apt"))
    apt.update(force=args.update)
    results, timing = [], {}
    for k in kernels:
        try:
            r, timing[k] = run_kernel(k, apt, cache, args)
        except (RuntimeError, OSError, subprocess.CalledProcessError) as e:
            r = [{"kernel": k, "drive": "-", "backend": "-", "result": "failed", "detail": str(e)}]
        results += r
    print_table(results)
    print("time in the VM: " + ", ".join(f"{k} {s:.0f} s" for k, s in timing.items()))
    bad = [r for r in results if r["result"] not in ("exact", "counted", "n/a")]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
