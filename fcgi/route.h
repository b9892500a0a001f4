/* Which route serves a request: its normalised path, for scripts the file. */
#ifndef IDEM_ROUTE_H
#define IDEM_ROUTE_H

#include "cfg.h"

struct request;

/*
 * Picks r's route and sets r->route (NULL: no route).  Routes match
 * r->path, already normalised (path_normalize), so every spelling of a
 * path reaches the same route.  When that route runs scripts, the script
 * is resolved here (r->script, or r->script_err) and a longer script route
 * whose own path names the same file (DOCUMENT_ROOT + its prefix, symlinks
 * followed) wins: "[route /cgi-bin/pay.cgi]" protects pay.cgi under any
 * spelling the web server maps to that file.
 */
void route_pick(const struct cfg *cfg, struct request *r);

#endif
