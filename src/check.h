/*
 * check.h - invariants as code: WSP_ASSERT(cond) and WSP_ASSERT_MSG(cond,
 * fmt, ...) check what must hold whatever the input (a program's books,
 * not a trace's bytes: bad input is handled, never asserted on).
 *
 * Live where WSP_CHECKED is 1: the checked build (config.h's WSP_CHECKS,
 * on in a sanitized build, meson option `checks`) and the fuzz target
 * (libFuzzer's FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION). A failing check
 * prints file:line, the condition and the message, and aborts, so ASan
 * and libFuzzer report it with a stack. Elsewhere the condition is
 * type-checked but never evaluated, and costs nothing. Header-only, no
 * allocation: src/, analyzer/ and the tests may use it (not preload/ hooks).
 */
#ifndef WSP_CHECK_H
#define WSP_CHECK_H

#include "config.h"

#include <stdio.h>
#include <stdlib.h>

#if WSP_CHECKS || defined(FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION)
#define WSP_CHECKED 1
#else
#define WSP_CHECKED 0
#endif

#define WSP_ASSERT(cond)                                                                           \
	do {                                                                                       \
		if (WSP_CHECKED && !(cond))                                                        \
			wsp_check_failed(__FILE__, __LINE__, #cond, NULL);                         \
	} while (0)

/* The message says what was found: WSP_ASSERT_MSG(a == b, "%llu != %llu", ...). */
#define WSP_ASSERT_MSG(cond, ...)                                                                  \
	do {                                                                                       \
		if (WSP_CHECKED && !(cond)) {                                                      \
			char wsp_check_msg_[256];                                                  \
			snprintf(wsp_check_msg_, sizeof wsp_check_msg_, __VA_ARGS__);              \
			wsp_check_failed(__FILE__, __LINE__, #cond, wsp_check_msg_);               \
		}                                                                                  \
	} while (0)

__attribute__((noreturn, cold)) static inline void wsp_check_failed(const char *file, int line, const char *cond,
								    const char *msg)
{
	fprintf(stderr, "%s:%d: check failed: %s%s%s\n", file, line, cond, msg ? ": " : "", msg ? msg : "");
	abort();
}

#endif
