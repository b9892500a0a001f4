/* The store's hashing key, and rows hashed before it (lib/ident/hkey.h). */
#ifndef IDEM_STORE_HKEY_H
#define IDEM_STORE_HKEY_H

#include <stddef.h>
#include <stdint.h>

#include "err.h"
#include "hkey.h"
#include "store.h"

/*
 * Resolves hk (once; a no-op when it is resolved) against idem_hash_key
 * and the config's secret_key_file:
 * - no key file, no row: HKEY_PLAIN (as before keyed hashes);
 * - a key file, no row: makes the store's hashing key (random, wrapped
 *   under the current key; the first process to make one wins), then
 *   as below;
 * - a key file and a row: HKEY_KEYED when the file holds the wrapping
 *   key id and it opens, else HKEY_REFUSED;
 * - a row but no key file: HKEY_REFUSED (plain hashes would miss every
 *   keyed row and run those keys again).
 * hk->why says why a refusal.  IDEM_ESTORE (hk left unknown) when the
 * store cannot be asked.
 */
enum idem_err store_hkey_resolve(struct store *st, struct hkey *hk);

/*
 * For a long-running process, every second or so: resolves an unknown
 * hk; refuses a plain one once the store has become keyed; for a keyed
 * one, reads whether rows hashed before the key (hashed = 0) remain
 * (hk->legacy).
 */
enum idem_err store_hkey_refresh(struct store *st, struct hkey *hk);

/*
 * Before a claim (store_claim): while rows hashed before the key remain,
 * the row of id's plain scope and key, if there is one, is converted to
 * id's keyed identity so that the claim finds it.  IDEM_OK (nothing
 * there, converted, or set aside for the keyed row of the key);
 * IDEM_EBUSY with c->state CLAIM_BUSY when its plain owner still runs
 * it; IDEM_ESEAL with c->state CLAIM_SEALED when its sealed answer does
 * not open here (never run again).
 */
enum idem_err store_hkey_adopt(struct store *st, const struct idem_id *id,
    struct claim *c);

/*
 * Converts row id (hashed = 0) to keyed hashes under hk: scope and
 * fingerprint keyed, a sealed answer opened and sealed again under the
 * current key for the new scope; a write guarded by the row as read.
 * IDEM_ENOTFOUND: gone, converted already, or set aside now (hashed =
 * 2: a keyed row of the same key exists and answers); IDEM_EBUSY: in
 * progress, its owner may be alive; IDEM_EAGAIN: changed meanwhile;
 * IDEM_ESEAL: its sealed answer does not open here (kid, when not NULL,
 * gets its key id).
 */
enum idem_err store_hkey_convert(struct store *st, const struct hkey *hk,
    uint64_t id, char *kid, size_t kidlen);

/* Up to limit ids of rows hashed before the key, past *last, into ids.
 * OUT: *n, *last the highest id read. */
enum idem_err store_hkey_old_ids(struct store *st, int64_t limit,
    uint64_t *last, uint64_t *ids, size_t *n);

/* Wraps the hashing key again under the current key when another one
 * wraps it (*done 1), guarded by the row as read. */
enum idem_err store_hkey_rewrap(struct store *st, const struct hkey *hk,
    int *done);

/* The key id that wraps the store's hashing key.  IDEM_ENOTFOUND: the
 * store has none (not keyed). */
enum idem_err store_hkey_kid(struct store *st, char *kid, size_t kidlen);

/* *keyed: whether rows of idem_keys are keyed (hashed = 1); with no
 * hashing key, that key was lost and no gateway may hash (store_hkey_
 * resolve refuses). */
enum idem_err store_hkey_keyed_rows(struct store *st, int *keyed);

#endif
