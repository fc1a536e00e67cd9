#!/usr/bin/env python3
"""Checks that no iotape module reaches above itself (docs/architecture.md).

Reads every `#include "..."` of the modules' sources and every iotape_*
library in their CMakeLists.txt link lines, and fails naming each file and
line that uses a module its own module may not. Usage: check_layers.py [ROOT]
"""
import pathlib
import re
import sys

# Module -> the modules it may use. The order is the build's, bottom first.
ALLOWED = {
    "proto": set(),
    "format": {"proto"},
    "blockevents": {"format", "proto"},
    "convert": {"blockevents", "format", "proto"},
    "units": {"format"},
    "stats": {"format"},
    "observer": {"format", "proto"},
    "capture": {"observer", "blockevents", "units", "format", "proto"},
    "replay": {"observer", "stats", "units", "format", "proto"},
    "analysis": {"stats", "units", "format", "proto"},
    "workloads": {"analysis", "replay", "stats", "units", "format", "proto"},
    "python": {"format", "proto"},
    "cli": {"capture", "replay", "analysis", "workloads", "convert", "blockevents", "observer", "stats", "units", "format", "proto"},
}

# The block-layer observer lives in capture/ (record captures through it,
# replay times its own IOs with it); these files are it.
OBSERVER_FILES = {"backend.h", "devices.h", "devices.cc", "ebpf_backend.cc", "iotrace.h", "iotrace.bpf.c",
                  "iotrace.skel.h"}

LIBRARIES = {
    "iotape_proto": "proto", "iotape_format": "format", "iotape_blockevents": "blockevents",
    "iotape_convert": "convert", "iotape_units": "units",
    "iotape_stats": "stats", "iotape_observer": "observer", "iotape_capture": "capture",
    "iotape_replay": "replay", "iotape_analysis": "analysis", "iotape_workloads": "workloads", "iotape_cli": "cli",
}


def module_of(path: str):
    parts = path.split("/")
    if parts[0] == "iotape" and len(parts) > 1 and parts[1] == "v1":
        return "proto"
    if parts[0] == "traces":
        if len(parts) > 2 and parts[1] == "blk":
            return "blockevents"
        return "convert" if len(parts) > 2 and parts[1] in ("import", "export") else "format"
    if parts[0] == "capture":
        return "observer" if parts[-1] in OBSERVER_FILES else "capture"
    if parts[0] in ALLOWED:
        return parts[0]
    return None


def main() -> int:
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()
    problems = []
    checked = 0
    include = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
    for src in sorted(root.rglob("*")):
        rel = src.relative_to(root).as_posix()
        if src.suffix not in (".h", ".cc", ".c") or rel.startswith(("build", "tests/", "bench/", "fuzz/")):
            continue
        own = module_of(rel)
        if own is None:
            continue
        checked += 1
        for n, line in enumerate(src.read_text(errors="replace").splitlines(), 1):
            m = include.match(line)
            if not m:
                continue
            used = module_of(m.group(1))
            if used is None or used == own:
                continue
            if used not in ALLOWED[own]:
                problems.append(f"{rel}:{n}: {own} includes {m.group(1)} ({used}), which is above it")
    link = re.compile(r"target_link_libraries\((\w+)([^)]*)\)", re.S)
    for cml in sorted(root.glob("*/CMakeLists.txt")):
        text = cml.read_text()
        for m in link.finditer(text):
            own = LIBRARIES.get(m.group(1))
            if own is None:
                continue
            line = text.count("\n", 0, m.start()) + 1
            for lib in re.findall(r"\biotape_\w+", m.group(2)):
                used = LIBRARIES.get(lib)
                if used and used != own and used not in ALLOWED[own]:
                    problems.append(f"{cml.relative_to(root)}:{line}: {m.group(1)} links {lib}, which is above it")
    for p in problems:
        print(p)
    print(f"check_layers: {checked} files, {len(problems)} layering violations")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
