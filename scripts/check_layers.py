#!/usr/bin/env python3
"""Checks that no iotape module reaches above itself (docs/architecture.md).

Reads every `#include "..."` of the modules' sources and every iotape_*
library in their CMakeLists.txt link lines, and fails naming each file and
line that uses a module its own module may not. It also fails on a header
that declares a function only another module defines (a program that links
the header's library alone would not link, and no include shows it), and on
a file that opens a namespace other than its module's own: directory =
library = namespace, `iotape::<module>`.
Usage: check_layers.py [ROOT]
"""
import pathlib
import re
import sys

# Module -> the modules it may use. The order is the build's, bottom first.
ALLOWED = {
    "proto": set(),
    "host": {"proto"},
    "format": {"proto"},
    "blockevents": {"format", "proto"},
    "convert": {"blockevents", "format", "proto"},
    "units": {"format"},
    "stats": {"format"},
    "observer": {"format", "proto", "host"},
    "capture": {"observer", "blockevents", "units", "format", "proto", "host"},
    "replay": {"observer", "stats", "units", "format", "proto", "host"},
    "analysis": {"stats", "units", "format", "proto"},
    "workloads": {"analysis", "replay", "stats", "units", "format", "proto", "host"},
    "python": {"format", "proto"},
    "cli": {"capture", "replay", "analysis", "workloads", "convert", "blockevents", "observer", "stats", "units", "format", "proto", "host"},
}

LIBRARIES = {
    "iotape_proto": "proto", "iotape_host": "host", "iotape_format": "format", "iotape_blockevents": "blockevents",
    "iotape_convert": "convert", "iotape_units": "units",
    "iotape_stats": "stats", "iotape_observer": "observer", "iotape_capture": "capture",
    "iotape_replay": "replay", "iotape_analysis": "analysis", "iotape_workloads": "workloads", "iotape_cli": "cli",
}


def module_of(path: str):
    parts = path.split("/")
    if parts[0] == "iotape" and len(parts) > 1 and parts[1] == "v1":
        return "proto"
    if parts[0] in ALLOWED:
        return parts[0]
    return None


def strip_comments(text: str) -> str:
    text = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


NOT_FUNCTIONS = ("return", "using", "typedef", "template", "static_assert", "friend", "class", "struct", "enum",
                 "namespace", "extern", "if", "for", "while", "switch")


def namespace_scope_functions(text: str):
    """(name, line, is_definition) of each function declared or defined at
    namespace scope (not in a class or a function body)."""
    out = []
    stack = []  # one entry per open brace: True for a namespace's
    statement, start_line, line = "", 1, 1
    for ch in strip_comments(text):
        if ch == "\n":
            line += 1
        if ch in ";{}":
            at_namespace_scope = all(stack)
            head = " ".join(statement.split())
            if ch == "}":
                if stack:
                    stack.pop()
            elif ch == "{":
                stack.append(bool(re.match(r"^(inline\s+)?namespace\b", head)) or head.startswith('extern "C"'))
            if at_namespace_scope and ch != "}" and "(" in head and not head.startswith("#"):
                m = re.match(r"^(.*?)\b([A-Za-z_]\w*)\s*\(", head)
                if m and m.group(2) not in NOT_FUNCTIONS and not m.group(1).strip().endswith(("=", "operator")) \
                        and m.group(1).strip() and not any(head.startswith(w + " ") for w in NOT_FUNCTIONS) \
                        and "=" not in head.split("(")[0]:
                    out.append((m.group(2), start_line, ch == "{"))
            statement, start_line = "", line
            continue
        if ch == "#" and not statement.strip():
            statement = "#"
        if statement.startswith("#") and ch == "\n":
            statement, start_line = "", line
            continue
        if not statement.strip():
            start_line = line
        statement += ch
    return out


def foreign_declarations(root: pathlib.Path, files):
    """Headers that declare a function defined in another module only."""
    declared, defined = [], {}
    for rel, own in files:
        for name, line, is_def in namespace_scope_functions((root / rel).read_text(errors="replace")):
            if is_def:
                defined.setdefault(name, set()).add(own)
            elif rel.endswith(".h"):
                declared.append((rel, line, own, name))
    problems = []
    for rel, line, own, name in declared:
        where = defined.get(name, set())
        if where and own not in where:
            problems.append(f"{rel}:{line}: {own} declares {name}(), which only {', '.join(sorted(where))} defines")
    return problems


def foreign_namespaces(root: pathlib.Path, files):
    """Files that open an iotape namespace other than their module's, other
    than to declare a class of it."""
    opened = re.compile(r"^\s*namespace\s+(iotape(?:::\w+)*)\s*\{", re.M)
    problems = []
    for rel, own in files:
        text = strip_comments((root / rel).read_text(errors="replace"))
        for m in opened.finditer(text):
            ns = m.group(1)
            body = text[m.end():text.find("}", m.end())]
            forward_only = re.fullmatch(r"(\s*(class|struct)\s+\w+\s*;)*\s*", body)
            if ns != f"iotape::{own}" and not ns.startswith(f"iotape::{own}::") and not forward_only:
                line = text.count("\n", 0, m.start()) + 1
                problems.append(f"{rel}:{line}: {own} opens namespace {ns}, not iotape::{own}")
    return problems


def main() -> int:
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()
    problems = []
    checked = 0
    include = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
    files = []
    for src in sorted(root.rglob("*")):
        rel = src.relative_to(root).as_posix()
        if src.suffix not in (".h", ".cc", ".c") or rel.startswith(("build", "tests/", "bench/", "fuzz/")):
            continue
        own = module_of(rel)
        if own is None:
            continue
        checked += 1
        files.append((rel, own))
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
    problems += foreign_declarations(root, files)
    problems += foreign_namespaces(root, [(rel, own) for rel, own in files if own != "proto"])
    for p in problems:
        print(p)
    print(f"check_layers: {checked} files, {len(problems)} layering violations")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
