/* A tiny unit-test helper: every CHECK prints one PASS or FAIL line. */
#ifndef IDEM_CHECK_H
#define IDEM_CHECK_H

#include <stdio.h>

static int check_failed;

#define CHECK(cond)                                                        \
	do {                                                               \
		if (cond)                                                  \
			printf("PASS: %s:%d: %s\n", __FILE__, __LINE__, #cond); \
		else {                                                     \
			printf("FAIL: %s:%d: %s\n", __FILE__, __LINE__, #cond); \
			check_failed++;                                    \
		}                                                          \
	} while (0)

/* Exit status for main(): non-zero if any CHECK failed. */
#define CHECK_DONE() (fflush(stdout), check_failed ? 1 : 0)

#endif
