/*
 * fakepython.c - a library that exports what a CPython 3.11 exports
 * (Py_Version and the symbols the recorder's walk needs) but whose code
 * type is not laid out as 3.11's: the recorder must find it, refuse it in
 * one line, and leave the program that loads it alone.
 */
#include <stdint.h>

#define EXPORT __attribute__((visibility("default")))

EXPORT const unsigned long Py_Version = 0x030b02f0;
EXPORT char _PyRuntime[4096];
/* Type objects (of type PyType_Type) whose tp_basicsize (at byte 32) is
 * no release 3.11's. */
EXPORT void *PyType_Type[64];
EXPORT void *PyCode_Type[64] = { [1] = PyType_Type, [4] = (void *)999 };
EXPORT void *PyUnicode_Type[64] = { [1] = PyType_Type, [4] = (void *)999 };
EXPORT void *PyBytes_Type[64] = { [1] = PyType_Type, [4] = (void *)33 };

EXPORT int Py_IsInitialized(void)
{
	return 1;
}

EXPORT void *PyGILState_GetThisThreadState(void)
{
	return 0;
}
