#!/usr/bin/env python3
"""check_map.py - every source file has its place in doc/hacking.md's map.

    tests/map/check_map.py [SOURCE-ROOT]

The files checked: *.c and *.h under src/, include/, preload/, analyzer/
and bench/. A file is in the map when its path is written anywhere in
doc/hacking.md, or its name is written in its own folder's entry of the
map (the code block under "## The map"): on the folder's line, on a line
of a file of that folder, or on the lines that continue them (indented to
the description column). `name.c/.h` names both files. Prints the files
missing, by folder, and exits 1; exits 0 when none is.
"""
import os
import re
import sys

ROOTS = ["src", "include", "preload", "analyzer", "bench"]
# An entry's first word starts before this column; a deeper line continues
# the entry above it.
ENTRY_COLUMN = 20
NAME = re.compile(r"[A-Za-z0-9_+-]+(?:\.[A-Za-z0-9_+-]+)*\.[ch](?:/\.[ch])*")


def names_in(text):
    """File names written in text, `x.c/.h` as x.c and x.h."""
    out = set()
    for m in NAME.finditer(text):
        first, *more = m.group(0).split("/")
        stem = first.rsplit(".", 1)[0]
        out.add(first)
        out.update(stem + ext for ext in more)
    return out


def read_map(doc):
    """{folder: names written in its entry} from the map's code block."""
    block = re.search(r"^## The map\n.*?^```\n(.*?)^```", doc, re.S | re.M)
    if not block:
        sys.exit("check_map: doc/hacking.md has no code block under '## The map'")
    entries = {}
    stack = []  # (indent, folder path)
    current = ""
    for line in block.group(1).splitlines():
        if not line.strip():
            continue
        indent = len(line) - len(line.lstrip(" "))
        word = line.split()[0]
        if indent < ENTRY_COLUMN:
            while stack and stack[-1][0] >= indent:
                stack.pop()
            parent = stack[-1][1] if stack else ""
            if word.endswith("/"):
                current = parent + word
                stack.append((indent, current))
            else:
                current = parent  # a file's line: its folder's entry
        entries.setdefault(current, set()).update(names_in(line))
    return entries


def sources(root):
    for top in ROOTS:
        for d, dirs, files in os.walk(os.path.join(root, top)):
            dirs.sort()
            if top == "bench" and d != os.path.join(root, top):
                continue
            for f in sorted(files):
                if f.endswith((".c", ".h")):
                    yield os.path.relpath(os.path.join(d, f), root)


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..")
    with open(os.path.join(root, "doc", "hacking.md")) as f:
        doc = f.read()
    entries = read_map(doc)
    missing = []
    for path in sources(root):
        folder, name = os.path.split(path)
        if path in doc or name in entries.get(folder + "/", ()):
            continue
        missing.append(path)
    if missing:
        print("check_map: %d source files have no place in doc/hacking.md's map "
              "(name each in its folder's entry, with a few words on it):" % len(missing))
        for path in missing:
            print("  " + path)
        return 1
    print("check_map: every source file is in the map")
    return 0


if __name__ == "__main__":
    sys.exit(main())
