/* Text for the project's error enum. */
#include "err.h"

static const char *const texts[IDEM_ERR__MAX] = {
	[IDEM_OK] = "success",
	[IDEM_ENOMEM] = "out of memory",
	[IDEM_ETOOBIG] = "too large",
	[IDEM_EINVAL] = "invalid input",
	[IDEM_ESYS] = "system call failed",
	[IDEM_ECONFIG] = "invalid configuration",
	[IDEM_ESTORE] = "database unavailable",
	[IDEM_ENOTFOUND] = "not found",
	[IDEM_EFORBIDDEN] = "forbidden",
	[IDEM_ETIMEOUT] = "timed out",
	[IDEM_EHANDLER] = "handler failed",
	[IDEM_EIO] = "peer went away",
	[IDEM_EBUSY] = "lock held elsewhere",
	[IDEM_ESCHEMA] = "database schema not current",
	[IDEM_EAGAIN] = "incomplete input",
	[IDEM_ELEASE] = "lease lost",
	[IDEM_EBROKEN] = "run ended without a whole answer",
	[IDEM_ESEAL] = "sealed answer does not decrypt",
};

const char *
idem_strerror(enum idem_err er)
{
	if ((unsigned)er >= IDEM_ERR__MAX || texts[er] == 0)
		return "unknown error";
	return texts[er];
}
