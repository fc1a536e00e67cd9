#!/usr/bin/env python3
"""Writes iotape.1.gz and iotape-SUB.1.gz for every subcommand into OUTDIR,
from the --help output of the built iotape (CLI11's layout), so that the
manual pages say what the binary does.  Usage: gen_man.py IOTAPE OUTDIR"""
import gzip
import pathlib
import re
import subprocess
import sys

SECTIONS = {"Positionals:": "ARGUMENTS", "Options:": "OPTIONS", "Subcommands:": "COMMANDS"}
GAP = re.compile(r"\S {2,}(?=\S)")  # the columns between a term and its description


def run(binary, *args):
    return subprocess.run([binary, *args], check=True, capture_output=True, text=True).stdout


def esc(text):
    text = text.replace("\\", "\\e").replace("-", "\\-")
    text = re.sub(r",(?=\S)", r",\\:", text)  # long comma lists may break after a comma
    return "\\&" + text if text.startswith((".", "'")) else text


def indent(line):
    return len(line) - len(line.lstrip(" "))


def split_term(line):
    """'TERM   description' -> (TERM, description column); no gap: (line, None)."""
    gap = GAP.search(line)
    if not gap:
        return line.strip(), None
    return line[: gap.start() + 1].strip(), gap.end()


def entries(lines):
    """Groups a table (terms at the smallest indent, continuations deeper) into
    (term, description lines relative to the description column)."""
    base = min(indent(l) for l in lines)
    groups = []
    for line in lines:
        if indent(line) == base:
            groups.append([line[base:]])
        else:
            groups[-1].append(line)
    result = []
    for first, *rest in groups:
        term, column = split_term(first)
        desc = [first[column:]] if column else []
        if rest:
            column = column + base if column else min(indent(l) for l in rest)
            desc += [l[column:] if indent(l) >= column else l.lstrip() for l in rest]
        result.append((term, desc))
    return result


def text(lines):
    """Roff for description lines: unindented lines are filled; an indented
    run is a nested table when each of its terms has a description column,
    else filled too (a hanging indent)."""
    out, i = [], 0
    while i < len(lines):
        if indent(lines[i]) == 0:
            if i and lines[i - 1].endswith((".", ":")):
                out.append(".br")  # keep --help's line breaks after a sentence
            out.append(esc(lines[i]))
            i += 1
            continue
        j = i
        while j < len(lines) and indent(lines[j]) > 0:
            j += 1
        block = lines[i:j]
        base = min(map(indent, block))
        if all(split_term(l)[1] for l in block if indent(l) == base):
            table = entries(block)
            width = max(len(term) for term, _ in table) + 2
            out += [".RS", ".PD 0"]  # as compact as in --help
            for term, desc in table:
                out += [f".TP {width}n", f"\\fB{esc(term)}\\fR", *text(desc)]
            out += [".PD", ".RE"]
        else:
            out += [esc(l.strip()) for l in block]
        i = j
    return out


def term_roff(term, section):
    first, _, rest = term.partition(" ")
    if section == "OPTIONS":
        first = ", ".join(f"\\fB{esc(f)}\\fR" for f in first.split(","))
    elif section == "COMMANDS":
        first = f"\\fBiotape\\-{esc(first)}\\fR(1)"
    else:
        first = f"\\fB{esc(first)}\\fR"
    return first + (" " + esc(rest) if rest else "")


def parse(help_text):
    """-> summary line, usage arguments, {section: [(term, desc)]}, footer lines."""
    lines = help_text.rstrip("\n").split("\n")
    summary, usage = lines[0], lines[1]
    assert usage.startswith("Usage: "), usage
    blocks, block = [], []
    for line in lines[2:] + [""]:
        if line:
            block.append(line)
        elif block:
            blocks.append(block)
            block = []
    sections, footer = {}, []
    for block in blocks:
        if block[0] in SECTIONS:
            sections[SECTIONS[block[0]]] = entries(block[1:])
        else:
            footer += block
    return summary, usage.split(maxsplit=2)[2], sections, footer


def page(name, command, version, summary, args, sections, footer, see_also):
    out = [
        f'.TH {esc(name.upper())} 1 "" "{esc(version)}" "User Commands"',
        ".nh", ".ad l",  # CSV field lists neither hyphenate nor justify well
        ".SH NAME", f"{esc(name)} \\- {esc(summary)}",
        ".SH SYNOPSIS", f"\\fB{esc(command)}\\fR {esc(args)}",
        ".SH DESCRIPTION", esc(summary[0].upper() + summary[1:]) + ".",
    ]
    if footer:
        out += [".PP", *text(footer)]
    for section in ("COMMANDS", "ARGUMENTS", "OPTIONS"):
        if section in sections:
            out.append(f".SH {section}")
            for term, desc in sections[section]:
                out += [".TP", term_roff(term, section), *text(desc)]
    out += [".SH SEE ALSO", ",\n".join(f"\\fB{esc(p)}\\fR(1)" for p in see_also)]
    return "\n".join(out) + "\n"


def write(outdir, name, roff):
    # mtime 0: the same help gives the same file
    (outdir / f"{name}.1.gz").write_bytes(gzip.compress(roff.encode(), 9, mtime=0))


def main(binary, outdir):
    outdir = pathlib.Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    for old in outdir.glob("*.1.gz"):
        old.unlink()
    version = run(binary, "--version").strip()
    summary, args, sections, footer = parse(run(binary, "--help"))
    summary = summary.removeprefix("iotape: ")
    subs = [term.split()[0] for term, _ in sections["COMMANDS"]]
    write(outdir, "iotape", page("iotape", "iotape", version, summary, args, sections, footer,
                                 [f"iotape-{s}" for s in subs]))
    for sub in subs:
        summary, args, sections, footer = parse(run(binary, sub, "--help"))
        args = args.removeprefix(sub + " ")
        write(outdir, f"iotape-{sub}", page(f"iotape-{sub}", f"iotape {sub}", version, summary,
                                            args, sections, footer, ["iotape"]))


if __name__ == "__main__":
    main(*sys.argv[1:])
