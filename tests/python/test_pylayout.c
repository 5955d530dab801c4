/*
 * test_pylayout.c - preload/python/pylayout.h against the CPython headers
 * it was built with (meson builds it once per version found: Debian's
 * /usr/include/python3.11, pyenv's): every offset the recorder reads is
 * that version's own offsetof, and for 3.13 the part of _Py_DebugOffsets
 * it reads is where that struct has it.
 */
#define Py_BUILD_CORE 1
#include <Python.h>
#include <internal/pycore_code.h>
#include <internal/pycore_frame.h>
#if PY_MINOR_VERSION >= 13
#include <internal/pycore_runtime.h>
#endif

#include "pylayout.h"

#include <criterion/criterion.h>

#define SAME(field, value) cr_expect_eq((size_t)(field), (size_t)(value), "%s is %zu, pylayout.h says %zu", #value, \
					(size_t)(value), (size_t)(field))

#if PY_MINOR_VERSION < 13
/* What 3.11 and 3.12 share (3.13's come from _Py_DebugOffsets at run time). */
static void check_objects(const struct wsp_pylayout *l)
{
	SAME(l->co_flags, offsetof(PyCodeObject, co_flags));
	SAME(l->co_firstlineno, offsetof(PyCodeObject, co_firstlineno));
	SAME(l->co_filename, offsetof(PyCodeObject, co_filename));
	SAME(l->co_qualname, offsetof(PyCodeObject, co_qualname));
	SAME(l->co_linetable, offsetof(PyCodeObject, co_linetable));
	SAME(l->co_code_adaptive, offsetof(PyCodeObject, co_code_adaptive));
	SAME(l->str_state, offsetof(PyASCIIObject, state));
	SAME(l->str_hash, offsetof(PyASCIIObject, hash));
	SAME(l->str_length, offsetof(PyASCIIObject, length));
	SAME(l->ascii_size, sizeof(PyASCIIObject));
	SAME(l->compact_size, sizeof(PyCompactUnicodeObject));
	SAME(l->unicode_size, sizeof(PyUnicodeObject));
	SAME(l->bytes_size, offsetof(PyVarObject, ob_size));
	SAME(l->bytes_data, offsetof(PyBytesObject, ob_sval));
	SAME(l->fr_previous, offsetof(_PyInterpreterFrame, previous));
	SAME(l->fr_owner, offsetof(_PyInterpreterFrame, owner));
	/* The string state bits the recorder reads: compact (5) and ascii (6). */
	PyASCIIObject s = { 0 };
	s.state.compact = 1;
	cr_expect_eq(*(const uint32_t *)((const char *)&s + l->str_state), 1u << 5, "compact is bit 5");
	s.state.compact = 0;
	s.state.ascii = 1;
	cr_expect_eq(*(const uint32_t *)((const char *)&s + l->str_state), 1u << 6, "ascii is bit 6");
}
#endif

#if PY_MINOR_VERSION == 11 || PY_MINOR_VERSION == 12
/* 3.11 and 3.12 name these fields alike. */
static void check_frames(const struct wsp_pylayout *l)
{
	check_objects(l);
	SAME(l->ts_cframe, offsetof(PyThreadState, cframe));
	SAME(l->cframe_frame, offsetof(_PyCFrame, current_frame));
	SAME(l->cframe_previous, offsetof(_PyCFrame, previous));
	SAME(l->fr_code, offsetof(_PyInterpreterFrame, f_code));
	SAME(l->fr_instr, offsetof(_PyInterpreterFrame, prev_instr));
}
#endif

#if PY_MINOR_VERSION == 11
Test(pylayout, python_3_11)
{
	check_frames(&wsp_pylayout_311);
	SAME(wsp_pylayout_311.fr_is_entry, offsetof(_PyInterpreterFrame, is_entry));
}
#elif PY_MINOR_VERSION == 12
Test(pylayout, python_3_12)
{
	check_frames(&wsp_pylayout_312);
	cr_expect_eq(FRAME_OWNED_BY_CSTACK, WSP_PY_OWNED_BY_CSTACK);
}
#elif PY_MINOR_VERSION == 13
Test(pylayout, python_3_13_debug_offsets)
{
	SAME(WSP_PYDBG_VERSION, offsetof(_Py_DebugOffsets, version));
	SAME(WSP_PYDBG_FREE_THREADED, offsetof(_Py_DebugOffsets, free_threaded));
	SAME(WSP_PYDBG_TS_CURRENT_FRAME, offsetof(_Py_DebugOffsets, thread_state.current_frame));
	SAME(WSP_PYDBG_FR_PREVIOUS, offsetof(_Py_DebugOffsets, interpreter_frame.previous));
	SAME(WSP_PYDBG_FR_EXECUTABLE, offsetof(_Py_DebugOffsets, interpreter_frame.executable));
	SAME(WSP_PYDBG_FR_INSTR_PTR, offsetof(_Py_DebugOffsets, interpreter_frame.instr_ptr));
	SAME(WSP_PYDBG_FR_OWNER, offsetof(_Py_DebugOffsets, interpreter_frame.owner));
	SAME(WSP_PYDBG_CO_SIZE, offsetof(_Py_DebugOffsets, code_object.size));
	SAME(WSP_PYDBG_CO_FILENAME, offsetof(_Py_DebugOffsets, code_object.filename));
	SAME(WSP_PYDBG_CO_QUALNAME, offsetof(_Py_DebugOffsets, code_object.qualname));
	SAME(WSP_PYDBG_CO_LINETABLE, offsetof(_Py_DebugOffsets, code_object.linetable));
	SAME(WSP_PYDBG_CO_FIRSTLINENO, offsetof(_Py_DebugOffsets, code_object.firstlineno));
	SAME(WSP_PYDBG_CO_CODE_ADAPTIVE, offsetof(_Py_DebugOffsets, code_object.co_code_adaptive));
	SAME(WSP_PYDBG_BYTES_OB_SIZE, offsetof(_Py_DebugOffsets, bytes_object.ob_size));
	SAME(WSP_PYDBG_BYTES_OB_SVAL, offsetof(_Py_DebugOffsets, bytes_object.ob_sval));
	SAME(WSP_PYDBG_STR_SIZE, offsetof(_Py_DebugOffsets, unicode_object.size));
	SAME(WSP_PYDBG_STR_STATE, offsetof(_Py_DebugOffsets, unicode_object.state));
	SAME(WSP_PYDBG_STR_LENGTH, offsetof(_Py_DebugOffsets, unicode_object.length));
	SAME(WSP_PYDBG_STR_ASCII_SIZE, offsetof(_Py_DebugOffsets, unicode_object.asciiobject_size));
	SAME(WSP_PYDBG_END, sizeof(_Py_DebugOffsets));
	/* What the recorder takes as given beside them. */
	struct wsp_pylayout l = { .co_flags = 48, .str_hash = 24 };
	SAME(l.co_flags, offsetof(PyCodeObject, co_flags));
	SAME(l.str_hash, offsetof(PyASCIIObject, hash));
	SAME(offsetof(PyASCIIObject, state) + 24, sizeof(PyCompactUnicodeObject)); /* ascii_size + 16 */
	cr_expect_eq(FRAME_OWNED_BY_CSTACK, WSP_PY_OWNED_BY_CSTACK);
	cr_expect_eq(CO_NO_MONITORING_EVENTS, WSP_PY_CO_NO_MONITORING);
}
#else
Test(pylayout, python_newer_than_known)
{
	cr_skip_test("Python 3.%d: the recorder reads only 3.11 to 3.13", PY_MINOR_VERSION);
}
#endif
