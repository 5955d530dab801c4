/*
 * pylayout.h - where CPython keeps what a Python stack is made of, per
 * version: the thread state's current frame, a frame's code, caller and
 * instruction, a code object's names and line table, a string's bytes.
 *
 * 3.11 and 3.12 are written down here (tests/unit/test_pylayout.c checks
 * each value with offsetof against that version's own internal headers);
 * 3.13 and later publish their offsets in _Py_DebugOffsets at the start of
 * _PyRuntime, which python.c reads instead (WSP_PY_DEBUG_OFFSETS below is
 * the part of its 3.13 layout used). Plain data: included by the recorder
 * and by that test, which builds against Python's headers.
 */
#ifndef WSP_PYLAYOUT_H
#define WSP_PYLAYOUT_H

#include <stddef.h>
#include <stdint.h>

#define WSP_PY_NONE ((uint16_t)0xffff) /* a field this version does not have */

struct wsp_pylayout {
	unsigned minor;             /* 3.minor */
	/* PyThreadState -> the innermost frame: through a _PyCFrame (3.11,
	 * 3.12: ts_cframe, then cframe_frame in it), or directly (3.13+:
	 * ts_cframe WSP_PY_NONE, ts_frame). */
	uint16_t ts_cframe, cframe_frame, cframe_previous, ts_frame;
	/* _PyInterpreterFrame */
	uint16_t fr_code, fr_previous, fr_instr;
	uint16_t fr_is_entry;       /* 3.11: the frame a _PyCFrame began with */
	uint16_t fr_owner;          /* 3.12+: FRAME_OWNED_BY_CSTACK marks the shim of a C call into the interpreter */
	/* PyCodeObject */
	/* co_code_adaptive is also PyCode_Type.tp_basicsize, checked at start */
	uint16_t co_flags, co_firstlineno, co_filename, co_qualname, co_linetable, co_code_adaptive;
	/* str: the state bit-field, the cached hash, where a compact string's
	 * characters start (ASCII; other kinds) */
	uint16_t str_state, str_hash, str_length, ascii_size, compact_size;
	uint16_t unicode_size;      /* PyUnicode_Type.tp_basicsize, checked at start */
	/* bytes: length, contents */
	uint16_t bytes_size, bytes_data;
};

#define WSP_PY_OWNED_BY_CSTACK 3
#define WSP_PY_CO_NO_MONITORING 0x2000000 /* 3.13's _Py_InitCleanup shim */

static const struct wsp_pylayout wsp_pylayout_311 = {
	.minor = 11,
	.ts_cframe = 56, .cframe_frame = 8, .cframe_previous = 16, .ts_frame = WSP_PY_NONE,
	.fr_code = 32, .fr_previous = 48, .fr_instr = 56, .fr_is_entry = 68, .fr_owner = 69,
	.co_flags = 48, .co_firstlineno = 72, .co_filename = 112, .co_qualname = 128, .co_linetable = 136,
	.co_code_adaptive = 184,
	.str_state = 32, .str_hash = 24, .str_length = 16, .ascii_size = 48, .compact_size = 72, .unicode_size = 80,
	.bytes_size = 16, .bytes_data = 32,
};

static const struct wsp_pylayout wsp_pylayout_312 = {
	.minor = 12,
	.ts_cframe = 56, .cframe_frame = 0, .cframe_previous = 8, .ts_frame = WSP_PY_NONE,
	.fr_code = 0, .fr_previous = 8, .fr_instr = 56, .fr_is_entry = WSP_PY_NONE, .fr_owner = 70,
	.co_flags = 48, .co_firstlineno = 68, .co_filename = 112, .co_qualname = 128, .co_linetable = 136,
	.co_code_adaptive = 192,
	.str_state = 32, .str_hash = 24, .str_length = 16, .ascii_size = 40, .compact_size = 56, .unicode_size = 64,
	.bytes_size = 16, .bytes_data = 32,
};

/* The part of 3.13's _Py_DebugOffsets read (Include/internal/pycore_runtime.h):
 * each a byte offset into that struct, whose fields are uint64_t. */
enum wsp_py_debug_offset {
	WSP_PYDBG_VERSION = 8,
	WSP_PYDBG_FREE_THREADED = 16,
	WSP_PYDBG_TS_CURRENT_FRAME = 24 + 3 * 8 + 13 * 8 + 4 * 8,
	WSP_PYDBG_FR_PREVIOUS = 24 + 3 * 8 + 13 * 8 + 9 * 8 + 1 * 8,
	WSP_PYDBG_FR_EXECUTABLE = WSP_PYDBG_FR_PREVIOUS + 8,
	WSP_PYDBG_FR_INSTR_PTR = WSP_PYDBG_FR_PREVIOUS + 16,
	WSP_PYDBG_FR_OWNER = WSP_PYDBG_FR_PREVIOUS + 32,
	WSP_PYDBG_CO_SIZE = WSP_PYDBG_FR_PREVIOUS + 40,
	WSP_PYDBG_CO_FILENAME = WSP_PYDBG_CO_SIZE + 8,
	WSP_PYDBG_CO_QUALNAME = WSP_PYDBG_CO_SIZE + 24,
	WSP_PYDBG_CO_LINETABLE = WSP_PYDBG_CO_SIZE + 32,
	WSP_PYDBG_CO_FIRSTLINENO = WSP_PYDBG_CO_SIZE + 40,
	WSP_PYDBG_CO_CODE_ADAPTIVE = WSP_PYDBG_CO_SIZE + 72,
	WSP_PYDBG_BYTES_OB_SIZE = WSP_PYDBG_CO_SIZE + 80 + 16 + 32 + 24 + 24 + 24 + 16 + 24 + 8,
	WSP_PYDBG_BYTES_OB_SVAL = WSP_PYDBG_BYTES_OB_SIZE + 8,
	WSP_PYDBG_STR_SIZE = WSP_PYDBG_BYTES_OB_SVAL + 8,
	WSP_PYDBG_STR_STATE = WSP_PYDBG_STR_SIZE + 8,
	WSP_PYDBG_STR_LENGTH = WSP_PYDBG_STR_SIZE + 16,
	WSP_PYDBG_STR_ASCII_SIZE = WSP_PYDBG_STR_SIZE + 24,
	WSP_PYDBG_END = WSP_PYDBG_STR_SIZE + 32 + 16, /* the struct's size in 3.13 (with its gc part) */
};

#endif
