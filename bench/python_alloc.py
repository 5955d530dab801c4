"""python_alloc.py - an allocation-heavy Python program, the workload of
bench/python_cost.sh.

usage: python3 python_alloc.py [SHAPE [SCALE]]   SHAPE: flat, deep, many, grow or all (default)

Every allocation it makes reaches malloc (objects over 512 bytes, which
pymalloc hands on), from Python frames of several shapes:
  flat  bytearrays of 600 B-64 KiB made and dropped from one function
  deep  the same at the bottom of a 40-frame Python call chain
  many  from 400 distinct functions (exec'd), each its own code object
  grow  lists and dicts grown element by element (realloc), then dropped
"""
import sys

SHAPE = sys.argv[1] if len(sys.argv) > 1 else "all"
SCALE = int(sys.argv[2]) if len(sys.argv) > 2 else 1
SIZES = [600, 1000, 4000, 16000, 65000]


def flat(n):
    keep = []
    for i in range(n):
        keep.append(bytearray(SIZES[i % 5]))
        if len(keep) > 64:
            del keep[:32]


def down(depth, n):
    if depth:
        return down(depth - 1, n)
    flat(n)


def many(n):
    fns = []
    for k in range(400):
        ns = {}
        exec("def f%d(n):\n    return [bytearray(%d) for _ in range(n)]\n" % (k, 600 + k), ns)
        fns.append(ns["f%d" % k])
    for i in range(n // 400):
        for f in fns:
            f(1)


def grow(n):
    for i in range(n // 200):
        xs, d = [], {}
        for j in range(200):
            xs.append(j)
            d[j] = xs
        del xs, d


shapes = {"flat": lambda: flat(200000 * SCALE), "deep": lambda: down(40, 200000 * SCALE),
          "many": lambda: many(200000 * SCALE), "grow": lambda: grow(4000000 * SCALE)}
for name, run in shapes.items():
    if SHAPE in (name, "all"):
        run()
