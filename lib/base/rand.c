/* Random numbers where no key is made from them (rand.h). */
#include <sys/random.h>

#include <errno.h>
#include <stdlib.h>

#include <openssl/rand.h>

#include "rand.h"

uint64_t
rand_u64(void)
{
	uint64_t	 v = 0;
	ssize_t		 k;

	while (v == 0) {
		k = getrandom(&v, sizeof(v), 0);
		if (k == (ssize_t)sizeof(v) || (k == -1 && errno == EINTR))
			continue;
		if (RAND_bytes((unsigned char *)&v, sizeof(v)) != 1)
			abort();
	}
	return v;
}
