/* Drives one long-lived store from stdin, for shell tests of the store. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cfg.h"
#include "fp.h"
#include "store.h"

/*
 * Commands, one per line; one answer line each:
 *   migrate          -> "migrate OK N" | "migrate ERR <error>"
 *   version          -> "version N"    | "version ERR <error>"
 *   claim KEY [BODY] -> "claim NEW|DONE|MISMATCH|BUSY|TOMBSTONE|AGAIN" | "claim ERR <error>"
 *   complete BODY    -> "complete OK"  | "complete ERR <error>"   (last claim)
 *   quit
 */
static const char *const state_names[] = {
	"NEW", "DONE", "MISMATCH", "BUSY", "TOMBSTONE", "AGAIN"
};

int
main(int argc, char **argv)
{
	struct cfg	 cfg;
	struct store	*st = NULL;
	struct idem_id	 id;
	struct answer	 a;
	struct claim	 c;
	char		 line[512], key[FP_KEY_MAX + 1], body[256];
	enum idem_err	 er;
	int		 n;

	if (argc != 2) {
		fprintf(stderr, "usage: store_probe MYSQL-OPTION-FILE\n");
		return 2;
	}
	memset(&cfg, 0, sizeof(cfg));
	cfg.mysql_defaults_file = argv[1];
	cfg.mysql_group = "idemgate";
	if (store_global_init() != IDEM_OK || store_new(&cfg, &st) != IDEM_OK)
		return 1;
	claim_init(&c);
	setvbuf(stdout, NULL, _IOLBF, 0);
	while (fgets(line, sizeof(line), stdin) != NULL) {
		line[strcspn(line, "\r\n")] = '\0';
		if (strcmp(line, "quit") == 0)
			break;
		if (strcmp(line, "migrate") == 0) {
			n = 0;
			er = store_migrate(st, &n);
			if (er == IDEM_OK)
				printf("migrate OK %d\n", n);
			else
				printf("migrate ERR %s\n", idem_strerror(er));
		} else if (strcmp(line, "version") == 0) {
			n = 0;
			er = store_schema_version(st, &n);
			if (er == IDEM_OK)
				printf("version %d\n", n);
			else
				printf("version ERR %s\n", idem_strerror(er));
		} else if (sscanf(line, "claim %255s %255s", key, body) >= 1) {
			if (sscanf(line, "claim %255s %255s", key, body) < 2)
				strcpy(body, "");
			memset(&id, 0, sizeof(id));
			fp_scope("none", "", id.scope);
			id.key = key;
			id.keylen = strlen(key);
			idem_id_name_lock(&id);
			fp_request(&(struct fp_req){ .method = "POST",
			    .path = "/probe", .query = "", .ctype = "",
			    .body = body, .bodylen = strlen(body) }, id.fp);
			id.route = "/probe";
			id.method = "POST";
			id.owner = "probe";
			id.ttl_ms = 3600000;
			id.lease_ms = 60000;
			er = store_claim(st, &id, &c);
			if (er == IDEM_OK)
				printf("claim %s\n", state_names[c.state]);
			else
				printf("claim ERR %s\n", idem_strerror(er));
		} else if (sscanf(line, "complete %255s", body) == 1) {
			answer_borrow(&a, 200, NULL, 0, body, strlen(body));
			er = store_complete(st, &c, &a, 3600000);
			if (er == IDEM_OK)
				printf("complete OK\n");
			else
				printf("complete ERR %s\n", idem_strerror(er));
		} else
			printf("? %s\n", line);
	}
	claim_reset(&c);
	store_free(st);
	store_global_end();
	return 0;
}
