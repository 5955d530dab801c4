/*
 * recording.c - the one switch that says whether allocations are recorded
 * now: a span of the program (WSPROF_START=paused, wsprof_start() and
 * wsprof_stop(), the toggle signal), or an attach (attach.c).
 *
 * While off, the hooks pass allocations straight through (no unwinding)
 * and drop annotations; frees, unmaps and the old side of a realloc are
 * recorded as while on, so what was allocated while on leaves the live set
 * (doc/trace-format.md, RECORDING). Each change is a RECORDING record
 * written through the normal event path, on the thread that made it.
 *
 * Reentrancy and signals: everything but wsp_recording_toggle_from_signal
 * is called with the guard held. That one is async-signal-safe: it flips
 * the switch and raises a flag, and the record is written by whoever comes
 * next with the guard held and no lock (the next recorded event, the
 * writer's flush, the end of the trace), stamped at that moment.
 */

#include "core.h"
#include "format.h"

_Atomic bool wsp_recording = true;
_Atomic bool wsp_recording_signalled;
/* The state the trace's last RECORDING record says (on when there is none). */
static _Atomic bool written_on = true;

void wsp_recording_mark(bool on, unsigned cause)
{
	atomic_store(&wsp_recording_signalled, false);
	atomic_store(&written_on, on);
	atomic_store(&wsp_recording, on);
	wsp_record_recording(on, cause);
}

/* Write the record saying `on` unless the trace already says so. */
static bool note(bool on, unsigned cause)
{
	if (atomic_exchange(&written_on, on) == on)
		return false;
	wsp_record_recording(on, cause);
	return true;
}

bool wsp_recording_set(bool on, unsigned cause)
{
	wsp_recording_catch_up();
	if (!on)
		atomic_store(&wsp_recording, false); /* nothing allocated after the record */
	bool changed = note(on, cause);
	if (on)
		atomic_store(&wsp_recording, true); /* nothing allocated before it */
	return changed;
}

void wsp_recording_toggle_from_signal(void)
{
	bool on = !atomic_load(&wsp_recording);
	atomic_store(&wsp_recording, on);
	atomic_store(&wsp_recording_signalled, true);
}

void wsp_recording_catch_up(void)
{
	if (atomic_exchange(&wsp_recording_signalled, false))
		note(atomic_load(&wsp_recording), WSPROF_REC_SIGNAL);
}
