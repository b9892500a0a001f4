/*
 * Runs a program where close_range(2) is refused, as on a kernel before 5.9
 * or under a seccomp profile that predates it (older container runtimes):
 *   no_close_range PROGRAM [ARG...]
 * A seccomp filter, inherited by every process the program starts, answers
 * close_range with EPERM.  Exits 99 if the filter cannot be set or does not
 * refuse the call, so a test never passes on a machine where it is not in
 * force.
 */
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#if defined(__x86_64__)
#define NCR_ARCH	AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define NCR_ARCH	AUDIT_ARCH_AARCH64
#endif

#ifndef __NR_close_range
#define __NR_close_range 436
#endif

int
main(int argc, char **argv)
{
#ifdef NCR_ARCH
	struct sock_filter	 f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
		    offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, NCR_ARCH, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
		    offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_close_range, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO |
		    (EPERM & SECCOMP_RET_DATA)),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog	 prog = {
		.len = sizeof(f) / sizeof(f[0]),
		.filter = f,
	};

	if (argc < 2) {
		fprintf(stderr, "usage: no_close_range PROGRAM [ARG...]\n");
		return 2;
	}
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
	    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0) {
		fprintf(stderr, "no_close_range: seccomp: %s\n",
		    strerror(errno));
		return 99;
	}
	/* fd 1000 is not open: the range is empty, so only the filter can
	 * make the call fail. */
	if (syscall(__NR_close_range, 1000U, 1001U, 0U) != -1 ||
	    errno != EPERM) {
		fprintf(stderr, "no_close_range: close_range not refused\n");
		return 99;
	}
	execvp(argv[1], argv + 1);
	fprintf(stderr, "no_close_range: %s: %s\n", argv[1], strerror(errno));
	return 127;
#else
	(void)argc;
	(void)argv;
	fprintf(stderr, "no_close_range: no seccomp filter for this "
	    "architecture\n");
	return 99;
#endif
}
