"""known.py - a Python program whose allocations wsprof must attribute.

usage: python3 known.py EXPECT_JSON BASE

Each part allocates bytearrays of known sizes (bytearray(n) is one malloc
of n + 1 bytes) from a known function; the line of each allocation carries
a marker comment "#@NAME" that tests/python/test_python.c looks up, so the
expected line is read from this file, not written twice. BASE makes the
sizes unique to this run: BASE + k for part k (k < 100), BASE + 1000 + i
for the i-th exec'd function, and the forked child's BASE + 2000, whose
pid goes to EXPECT_JSON.
"""
import ctypes
import json
import os
import sys
import threading

BASE = int(sys.argv[2])
keep = []


def plain(n):
    return bytearray(n)  #@plain


class Holder:
    def method(self, n):
        return bytearray(n)  #@method


def generator(n):
    yield bytearray(n)  #@generator


def deep(depth, n):
    if depth == 0:
        return bytearray(n)  #@deep
    return deep(depth - 1, n)


def on_thread(n):
    # ctypes releases the GIL around the foreign call: malloc runs without it.
    libc = ctypes.CDLL(None)
    libc.malloc.restype = ctypes.c_void_p
    keep.append(libc.malloc(n))  #@on_thread


def small_objects():
    objs = []
    for i in range(20000):
        objs.append((i, str(i)))  #@small_objects
    return objs


def child(n):
    return bytearray(n)  #@child


keep.append(plain(BASE + 0 - 1))  #@module_plain
keep.append(Holder().method(BASE + 1 - 1))
keep.extend(generator(BASE + 2 - 1))
keep.append(deep(300, BASE + 3 - 1))
t = threading.Thread(target=on_thread, args=(BASE + 4,))
t.start()
t.join()
keep.append(small_objects())

# Functions made and dropped one after another: a code object may take a
# dead one's address, and must still be named after itself.
for i in range(40):
    ns = {}
    exec("def made_%d(n):\n    return bytearray(n)\n" % i, ns)
    keep.append(ns["made_%d" % i](BASE + 1000 + i - 1))
    del ns

pid = os.fork()
if pid == 0:
    child(BASE + 2000 - 1)
    os._exit(0)
os.waitpid(pid, 0)
with open(sys.argv[1], "w") as f:
    json.dump({"child_pid": pid}, f)
print("known.py done")
