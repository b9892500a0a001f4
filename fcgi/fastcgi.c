/* FastCGI 1.0 on the wire: constants, record headers and name-value pairs. */
#include <string.h>

#include "fastcgi.h"

size_t
fcgi_hdr_encode(unsigned char h[FCGI_HDR_LEN], int type, uint16_t id,
    size_t clen)
{
	size_t	 pad = (8 - clen % 8) % 8;

	h[0] = FCGI_VERSION_1;
	h[1] = (unsigned char)type;
	h[2] = (unsigned char)(id >> 8);
	h[3] = (unsigned char)id;
	h[4] = (unsigned char)(clen >> 8);
	h[5] = (unsigned char)clen;
	h[6] = (unsigned char)pad;
	h[7] = 0;
	return pad;
}

void
fcgi_hdr_decode(const unsigned char h[FCGI_HDR_LEN], struct fcgi_hdr *out)
{
	out->version = h[0];
	out->type = h[1];
	out->id = (uint16_t)(h[2] << 8 | h[3]);
	out->clen = (size_t)h[4] << 8 | h[5];
	out->plen = h[6];
}

enum idem_err
fcgi_record(struct buf *out, int type, uint16_t id, const void *p, size_t n)
{
	static const unsigned char pad[8];
	unsigned char	 h[FCGI_HDR_LEN];
	size_t		 padn;
	enum idem_err	 er;

	if (n > FCGI_MAX_CONTENT)
		return IDEM_ETOOBIG;
	padn = fcgi_hdr_encode(h, type, id, n);
	if ((er = buf_add(out, h, sizeof(h))) != IDEM_OK ||
	    (er = buf_add(out, p, n)) != IDEM_OK)
		return er;
	return buf_add(out, pad, padn);
}

enum idem_err
fcgi_stream(struct buf *out, int type, uint16_t id, const void *vp, size_t n)
{
	const char	*p = vp;
	size_t		 k;
	enum idem_err	 er;

	while (n > 0) {
		k = n > FCGI_CHUNK_MAX ? FCGI_CHUNK_MAX : n;
		if ((er = fcgi_record(out, type, id, p, k)) != IDEM_OK)
			return er;
		p += k;
		n -= k;
	}
	return fcgi_record(out, type, id, NULL, 0);
}

enum idem_err
fcgi_begin(struct buf *out, uint16_t id, int role, int flags)
{
	unsigned char	 b[FCGI_BODY_LEN] = { (unsigned char)(role >> 8),
		(unsigned char)role, (unsigned char)flags };

	return fcgi_record(out, FCGI_BEGIN_REQUEST, id, b, sizeof(b));
}

void
fcgi_begin_decode(const unsigned char b[FCGI_BODY_LEN], int *role,
    int *flags)
{
	*role = b[0] << 8 | b[1];
	*flags = b[2];
}

enum idem_err
fcgi_end(struct buf *out, uint16_t id, uint32_t app_status, int ps)
{
	unsigned char	 b[FCGI_BODY_LEN] = {
		(unsigned char)(app_status >> 24),
		(unsigned char)(app_status >> 16),
		(unsigned char)(app_status >> 8), (unsigned char)app_status,
		(unsigned char)ps };

	return fcgi_record(out, FCGI_END_REQUEST, id, b, sizeof(b));
}

void
fcgi_end_decode(const unsigned char b[FCGI_BODY_LEN], uint32_t *app_status,
    int *ps)
{
	*app_status = (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 |
	    (uint32_t)b[2] << 8 | b[3];
	*ps = b[4];
}

enum idem_err
fcgi_unknown_type(struct buf *out, int type)
{
	unsigned char	 b[8] = { (unsigned char)type };

	return fcgi_record(out, FCGI_UNKNOWN_TYPE, 0, b, sizeof(b));
}

/* Appends a name or value length: 1 byte below 128, else 4 bytes. */
static enum idem_err
fcgi_len_append(struct buf *b, size_t len)
{
	unsigned char	 l[4];

	if (len < 128) {
		l[0] = (unsigned char)len;
		return buf_add(b, l, 1);
	}
	if (len > 0x7fffffff)
		return IDEM_ETOOBIG;
	l[0] = (unsigned char)(len >> 24 | 0x80);
	l[1] = (unsigned char)(len >> 16);
	l[2] = (unsigned char)(len >> 8);
	l[3] = (unsigned char)len;
	return buf_add(b, l, 4);
}

enum idem_err
fcgi_pair_append(struct buf *b, const void *name, size_t nl,
    const void *val, size_t vl)
{
	enum idem_err	 er;

	if ((er = fcgi_len_append(b, nl)) != IDEM_OK ||
	    (er = fcgi_len_append(b, vl)) != IDEM_OK ||
	    (er = buf_add(b, name, nl)) != IDEM_OK)
		return er;
	return buf_add(b, val, vl);
}

/* Reads a name or value length at p (1 or 4 bytes); 0 if past left. */
static size_t
fcgi_len_decode(const unsigned char *p, size_t left, size_t *len)
{
	if (left < 1)
		return 0;
	if ((p[0] & 0x80) == 0) {
		*len = p[0];
		return 1;
	}
	if (left < 4)
		return 0;
	*len = ((size_t)(p[0] & 0x7f) << 24) | ((size_t)p[1] << 16) |
	    ((size_t)p[2] << 8) | p[3];
	return 4;
}

enum idem_err
fcgi_pair_decode(const unsigned char *p, size_t n, size_t *off, size_t *nl,
    size_t *vl)
{
	size_t	 k, o = *off;

	if ((k = fcgi_len_decode(p + o, n - o, nl)) == 0)
		return IDEM_EINVAL;
	o += k;
	if ((k = fcgi_len_decode(p + o, n - o, vl)) == 0)
		return IDEM_EINVAL;
	o += k;
	if (*nl > n - o || *vl > n - o - *nl)
		return IDEM_EINVAL;
	*off = o;
	return IDEM_OK;
}
