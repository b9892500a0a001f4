/* Internals shared by the lib/store*.c files (not for callers). */
#ifndef IDEM_STORE_INT_H
#define IDEM_STORE_INT_H

#include "store.h"

/* Closes the connection and every prepared statement on it. */
void store_disconnect(struct store *st);

/* Records errnum/text as the last error (text for logs only). */
void store_set_error(struct store *st, unsigned errnum, const char *text);

/* Last MySQL error number (0 after a success of store_exec). */
unsigned store_errno(const struct store *st);

/* 1 if errnum means the connection is unusable and must be reopened. */
int store_conn_lost(unsigned errnum);

/* Counts successful connects; a change means locks were lost. */
unsigned long store_generation(const struct store *st);

/* Prepared statements executed so far (for tests of the hot path). */
uint64_t store_round_trips(const struct store *st);

#endif
