/* The project's one error enum and its text. */
#ifndef IDEM_ERR_H
#define IDEM_ERR_H

enum idem_err {
	IDEM_OK = 0,
	IDEM_ENOMEM,	/* allocation failed */
	IDEM_ETOOBIG,	/* input past a configured or built-in maximum */
	IDEM_EINVAL,	/* malformed input (key, header, config value) */
	IDEM_ESYS,	/* a system call failed; errno is logged where it
			 * happened */
	IDEM_ECONFIG,	/* configuration invalid */
	IDEM_ESTORE,	/* MySQL unreachable or a statement failed */
	IDEM_ENOTFOUND,	/* no such key / file / row */
	IDEM_EFORBIDDEN, /* path outside script_root, not executable */
	IDEM_ETIMEOUT,	/* a deadline passed */
	IDEM_EHANDLER,	/* handler produced invalid output or could not run */
	IDEM_EIO,	/* the peer (client, upstream) went away mid-exchange */
	IDEM_EBUSY,	/* a lock is held by someone else */
	IDEM_ESCHEMA,	/* database schema missing or older than this build */
	IDEM_EAGAIN,	/* incomplete input: feed more bytes */
	IDEM_ELEASE,	/* the key's lease could not be kept: handler stopped */
	IDEM_EBROKEN,	/* a run we could not stop ended without a whole answer
			 * (upstream broke off, or ran past run_limit): its
			 * work may have happened */
	IDEM_ESEAL,	/* a sealed answer failed its tag: wrong key, or
			 * moved or altered in the store */
	IDEM_ERR__MAX
};

/* Returns a static, human-readable text for er; never NULL. */
const char *idem_strerror(enum idem_err er);

#endif
