/*
 * static_probe - a statically linked program: no loader runs in it, so
 * nothing can preload into it. Prints one line and exits with status 7.
 *
 * usage: static_probe EXPECT   (EXPECT is ignored: nothing to count)
 */
#include <stdio.h>

int main(void)
{
	puts("static probe");
	return 7;
}
