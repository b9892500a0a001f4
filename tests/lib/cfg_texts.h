/* Unit-test helpers for the configuration parser: a text parsed as "t.conf", refused with one exact message, or accepted. */
#ifndef IDEM_TEST_CFG_TEXTS_H
#define IDEM_TEST_CFG_TEXTS_H

#include <stdio.h>
#include <string.h>

#include "cfg.h"

/* The last parse's error (each test file has its own). */
static char	 err[1024];

static inline struct cfg *
parse(const char *text)
{
	struct cfg	*c = NULL;

	err[0] = '\0';
	if (cfg_parse(text, strlen(text), "t.conf", &c, err, sizeof(err)) !=
	    IDEM_OK)
		return NULL;
	return c;
}

/* 1 if text is refused with an error that equals want exactly. */
static inline int
refused(const char *text, const char *want)
{
	struct cfg	*c = NULL;
	enum idem_err	 er;

	strcpy(err, "unset");
	er = cfg_parse(text, strlen(text), "t.conf", &c, err, sizeof(err));
	if (er == IDEM_OK) {
		cfg_free(c);
		printf("# accepted: %s\n", text);
		return 0;
	}
	if (c != NULL || er != IDEM_ECONFIG || strcmp(err, want) != 0) {
		printf("# got %d '%s', want '%s'\n", er, err, want);
		return 0;
	}
	return 1;
}

/* 1 if text parses; frees the result. */
static inline int
accepted(const char *text)
{
	struct cfg	*c = parse(text);

	if (c == NULL) {
		printf("# refused: %s\n", err);
		return 0;
	}
	cfg_free(c);
	return 1;
}

#define RT	"[route /x]\nhandler = cgi:/bin/true\n"

#endif
