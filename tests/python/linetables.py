"""linetables.py - CPython's own answer for every instruction's line.

usage: python3 linetables.py

For each code object of some of the interpreter's own modules (functions,
nested ones, classes, comprehensions), prints one line: its first line,
its co_linetable in hex, then PyCode_Addr2Line (called through ctypes, the
interpreter's own C function) of each instruction in order, -1 where an
instruction has no line. tests/python/test_python.c decodes the same
tables with wsprof_pycode_line and compares.
"""
import ctypes
import importlib

addr2line = ctypes.pythonapi.PyCode_Addr2Line
addr2line.argtypes = [ctypes.py_object, ctypes.c_int]
addr2line.restype = ctypes.c_int

MODULES = ["argparse", "asyncio.base_events", "collections", "dataclasses", "email.message", "inspect",
           "json.decoder", "pathlib", "re._parser", "textwrap", "threading", "typing", "unittest.case"]


def codes(code):
    yield code
    for c in code.co_consts:
        if hasattr(c, "co_linetable"):
            yield from codes(c)


def module_code(name):
    spec = importlib.util.find_spec(name)
    return compile(spec.loader.get_source(name), spec.origin, "exec")


import importlib.util  # noqa: E402

for name in MODULES:
    for c in codes(module_code(name)):
        lines = [addr2line(c, 2 * i) for i in range(len(c.co_code) // 2)]
        print(c.co_firstlineno, c.co_linetable.hex() or "-", " ".join(map(str, lines)))
