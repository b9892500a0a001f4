/* Random numbers where no key is made from them: tokens, marks. */
#ifndef IDEM_RAND_H
#define IDEM_RAND_H

#include <stdint.h>

/*
 * A random 64-bit number, never 0: 8 bytes from the kernel's generator,
 * one system call (OpenSSL's RAND_bytes looks its generator up and checks
 * for a fork on every call), RAND_bytes where getrandom(2) is refused.
 * Aborts when neither answers: nothing would be safe.
 */
uint64_t rand_u64(void);

#endif
