/* Reading upstream records: STDOUT to sink, STDERR to log, to END_REQUEST. */
#include <stdint.h>
#include <string.h>

#include "errlog.h"
#include "log.h"
#include "upstream_rd.h"

/* STDERR content: logged as a CGI's stderr is (lib/run/errlog.h). */
static void
rd_err(const struct upstream_req *r, struct upstream_rd *rd, const char *p,
    size_t n)
{
	rd->el.tag = upstream_tag(r);
	errlog_add(&rd->el, p, n);
}

void
upstream_rd_flush(const struct upstream_req *r, struct upstream_rd *rd)
{
	rd->el.tag = upstream_tag(r);
	errlog_end(&rd->el);
}

/* Checks a complete record header and sets up reading its content. */
static enum idem_err
rd_header(const struct upstream_req *r, struct upstream_rd *rd)
{
	struct fcgi_hdr	 h;
	int		 id;

	fcgi_hdr_decode(rd->hdr, &h);
	id = h.id;
	/* Past here the app may have run: a broken exchange is
	 * IDEM_EBROKEN, never "nothing happened". */
	if (h.version != FCGI_VERSION_1) {
		log_err("%s: bad FastCGI version %d", upstream_tag(r),
		    h.version);
		return IDEM_EBROKEN;
	}
	rd->type = h.type;
	rd->content_left = h.clen;
	rd->pad_left = h.plen;
	rd->skip = 0;
	rd->end_have = 0;
	switch (rd->type) {
	case FCGI_STDOUT:
	case FCGI_STDERR:
	case FCGI_END_REQUEST:
		if (id != UPSTREAM_REQ_ID) {
			log_err("%s: record for request %d", upstream_tag(r),
			    id);
			return IDEM_EBROKEN;
		}
		if (rd->type == FCGI_END_REQUEST &&
		    rd->content_left < FCGI_BODY_LEN) {
			log_err("%s: short END_REQUEST", upstream_tag(r));
			return IDEM_EBROKEN;
		}
		break;
	case FCGI_BEGIN_REQUEST:
	case FCGI_ABORT_REQUEST:
	case FCGI_PARAMS:
	case FCGI_STDIN:
	case FCGI_DATA:
	case FCGI_GET_VALUES:
		/* Only a web server sends these. */
		log_err("%s: unexpected record type %d", upstream_tag(r),
		    rd->type);
		return IDEM_EBROKEN;
	default:
		/* GET_VALUES_RESULT, UNKNOWN_TYPE or a future type:
		 * nothing we asked for, so it is skipped. */
		log_debug("%s: skipping record type %d", upstream_tag(r),
		    rd->type);
		rd->skip = 1;
		break;
	}
	return IDEM_OK;
}

/* Ends the current record once its content and padding are consumed. */
static enum idem_err
rd_record_end(const struct upstream_req *r, struct upstream_rd *rd)
{
	uint32_t	 app_status;
	int		 ps;

	rd->hdr_have = 0;
	if (rd->type != FCGI_END_REQUEST || rd->skip)
		return IDEM_OK;
	fcgi_end_decode(rd->end, &app_status, &ps);
	rd->app_status = (int)app_status;
	rd->done = 1;
	if (ps != FCGI_REQUEST_COMPLETE && rd->spoke) {
		/* It answered, so it ran: a refusal now is a broken run. */
		log_err("%s: request refused (protocolStatus %d) after the "
		    "app answered", upstream_tag(r), ps);
		return IDEM_EBROKEN;
	}
	if (ps != FCGI_REQUEST_COMPLETE) {
		log_err("%s: request refused (protocolStatus %d)",
		    upstream_tag(r), ps);
		rd->refused = 1;
		return IDEM_EHANDLER;
	}
	return IDEM_OK;
}

enum idem_err
upstream_rd_feed(const struct upstream_req *r, struct upstream_rd *rd,
    const char *p, size_t n)
{
	size_t		 k;
	enum idem_err	 er;

	while (n > 0 && !rd->done) {
		if (rd->hdr_have < FCGI_HDR_LEN) {
			k = FCGI_HDR_LEN - rd->hdr_have;
			if (k > n)
				k = n;
			memcpy(rd->hdr + rd->hdr_have, p, k);
			rd->hdr_have += k;
			p += k;
			n -= k;
			if (rd->hdr_have < FCGI_HDR_LEN)
				break;
			if ((er = rd_header(r, rd)) != IDEM_OK)
				return er;
		} else if (rd->content_left > 0) {
			k = rd->content_left < n ? rd->content_left : n;
			if (rd->skip)
				;
			else if (rd->type == FCGI_STDOUT) {
				rd->spoke = 1;
				er = r->ex.out(r->ex.arg, p, k);
				if (er != IDEM_OK)
					return er;
			} else if (rd->type == FCGI_STDERR)
				rd_err(r, rd, p, k);
			else if (rd->type == FCGI_END_REQUEST) {
				size_t m = sizeof(rd->end) - rd->end_have;

				if (m > k)
					m = k;
				memcpy(rd->end + rd->end_have, p, m);
				rd->end_have += m;
			}
			rd->content_left -= k;
			p += k;
			n -= k;
		} else if (rd->pad_left > 0) {
			k = rd->pad_left < n ? rd->pad_left : n;
			rd->pad_left -= k;
			p += k;
			n -= k;
		}
		if (rd->hdr_have == FCGI_HDR_LEN && rd->content_left == 0 &&
		    rd->pad_left == 0 &&
		    (er = rd_record_end(r, rd)) != IDEM_OK)
			return er;
	}
	return IDEM_OK;
}
