/* Gateway-made answers: the one place internal errors become HTTP statuses. */
#include <stdio.h>

#include "problem.h"

static const struct {
	int		 status;
	const char	*slug;
	const char	*title;
	const char	*detail;
} problems[PROB__MAX] = {
	[PROB_MISSING_KEY] = { 400, "missing-key",
	    "Idempotency key required",
	    "This endpoint requires an Idempotency-Key header." },
	[PROB_BODY_MISMATCH] = { 400, "body-length-mismatch",
	    "Request body longer than announced",
	    "The request body is longer than its Content-Length says; it "
	    "was not processed." },
	[PROB_AMBIGUOUS_HEADER] = { 400, "ambiguous-header",
	    "Ambiguous request header",
	    "A header that identifies this request (the idempotency key, "
	    "its scope, or a header that is part of the request) arrived "
	    "more than once." },
	[PROB_INVALID_KEY] = { 400, "invalid-key",
	    "Invalid idempotency key",
	    "The idempotency key must be 1 to 255 visible ASCII characters, "
	    "a token or a quoted string, in the format this endpoint "
	    "documents." },
	[PROB_MISSING_SCOPE] = { 400, "missing-scope",
	    "Missing scope",
	    "The request lacks the credential that scopes its idempotency "
	    "key." },
	[PROB_NOT_FOUND] = { 404, "not-found",
	    "Not found",
	    "No resource is configured for this path." },
	[PROB_FORBIDDEN] = { 403, "forbidden",
	    "Forbidden",
	    "The requested script may not be run." },
	[PROB_METHOD_NOT_ALLOWED] = { 405, "method-not-allowed",
	    "Method not allowed",
	    "This resource answers GET and HEAD only." },
	[PROB_KEY_IN_PROGRESS] = { 409, "key-in-progress",
	    "Request in progress",
	    "A request with this idempotency key is still being processed; "
	    "retry later." },
	[PROB_NOT_STORED] = { 410, "response-not-stored",
	    "Response not stored",
	    "The first request with this idempotency key was processed, but "
	    "its answer could not be kept for replay (too large, or cut off "
	    "before it ended); it is not run again." },
	[PROB_BODY_TOO_LARGE] = { 413, "body-too-large",
	    "Request body too large",
	    "The request body is larger than this endpoint accepts." },
	[PROB_KEY_MISMATCH] = { 422, "key-mismatch",
	    "Idempotency key reused",
	    "This idempotency key was already used for a different "
	    "request." },
	[PROB_TOO_MANY_KEYS] = { 429, "too-many-keys",
	    "Too many new idempotency keys",
	    "This scope used more new idempotency keys in the last minute "
	    "than this endpoint allows; retry later." },
	[PROB_HEADERS_TOO_LARGE] = { 431, "headers-too-large",
	    "Request headers too large",
	    "The request headers are larger than this gateway accepts." },
	[PROB_INTERNAL] = { 500, "internal-error",
	    "Internal error",
	    "The gateway could not process the request." },
	[PROB_STORE_KEY_MISSING] = { 500, "store-key-missing",
	    "Stored response unreadable",
	    "This request already ran, but its stored response cannot be "
	    "decrypted with the keys this gateway has; it is not run "
	    "again." },
	[PROB_HASH_KEY_MISSING] = { 500, "store-key-missing",
	    "Idempotency store sealed",
	    "The idempotency store's keys are sealed under a key this "
	    "gateway does not have; no request is run until it has it." },
	[PROB_BAD_GATEWAY] = { 502, "bad-gateway",
	    "Bad gateway",
	    "The application failed to produce a valid response." },
	[PROB_STORE_UNAVAILABLE] = { 503, "store-unavailable",
	    "Service unavailable",
	    "The idempotency store is unavailable; retry later." },
	[PROB_OVERLOADED] = { 503, "gateway-overloaded",
	    "Service unavailable",
	    "The gateway holds as many unfinished requests as it may; "
	    "retry later." },
	[PROB_GATEWAY_TIMEOUT] = { 504, "gateway-timeout",
	    "Gateway timeout",
	    "The application did not answer in time." },
	[PROB_HANDLER_TIMEOUT] = { 504, "handler-timeout",
	    "Handler timeout",
	    "The application did not answer in time and is still running; "
	    "retry with the same key to get its answer." },
};

static const char *problem_base;

void
problem_set_base(const char *base)
{
	problem_base = base;
}

int
problem_status(enum problem p)
{
	return problems[p].status;
}

const char *
problem_slug(enum problem p)
{
	return problems[p].slug;
}

enum problem
problem_from_err(enum idem_err er)
{
	switch (er) {
	case IDEM_ENOTFOUND:
		return PROB_NOT_FOUND;
	case IDEM_EFORBIDDEN:
		return PROB_FORBIDDEN;
	case IDEM_ETIMEOUT:
		return PROB_GATEWAY_TIMEOUT;
	case IDEM_ENOMEM:
		return PROB_INTERNAL;
	case IDEM_ELEASE:
		return PROB_STORE_UNAVAILABLE;
	default:
		return PROB_BAD_GATEWAY;
	}
}

const char *
problem_reason(int status)
{
	switch (status) {
	case 200: return "OK";
	case 201: return "Created";
	case 202: return "Accepted";
	case 203: return "Non-Authoritative Information";
	case 204: return "No Content";
	case 205: return "Reset Content";
	case 206: return "Partial Content";
	case 207: return "Multi-Status";
	case 208: return "Already Reported";
	case 226: return "IM Used";
	case 300: return "Multiple Choices";
	case 301: return "Moved Permanently";
	case 302: return "Found";
	case 303: return "See Other";
	case 304: return "Not Modified";
	case 305: return "Use Proxy";
	case 307: return "Temporary Redirect";
	case 308: return "Permanent Redirect";
	case 400: return "Bad Request";
	case 401: return "Unauthorized";
	case 402: return "Payment Required";
	case 403: return "Forbidden";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	case 406: return "Not Acceptable";
	case 407: return "Proxy Authentication Required";
	case 408: return "Request Timeout";
	case 409: return "Conflict";
	case 410: return "Gone";
	case 411: return "Length Required";
	case 412: return "Precondition Failed";
	case 413: return "Content Too Large";
	case 414: return "URI Too Long";
	case 415: return "Unsupported Media Type";
	case 416: return "Range Not Satisfiable";
	case 417: return "Expectation Failed";
	case 421: return "Misdirected Request";
	case 422: return "Unprocessable Content";
	case 423: return "Locked";
	case 424: return "Failed Dependency";
	case 425: return "Too Early";
	case 426: return "Upgrade Required";
	case 428: return "Precondition Required";
	case 429: return "Too Many Requests";
	case 431: return "Request Header Fields Too Large";
	case 451: return "Unavailable For Legal Reasons";
	case 500: return "Internal Server Error";
	case 501: return "Not Implemented";
	case 502: return "Bad Gateway";
	case 503: return "Service Unavailable";
	case 504: return "Gateway Timeout";
	case 505: return "HTTP Version Not Supported";
	case 506: return "Variant Also Negotiates";
	case 507: return "Insufficient Storage";
	case 508: return "Loop Detected";
	case 510: return "Not Extended";
	case 511: return "Network Authentication Required";
	default: return "";
	}
}

enum idem_err
problem_render(enum problem p, const char *detail, int retry_after,
    int original_status, struct buf *hdrs, struct buf *body)
{
	enum idem_err	 er;

	er = buf_addstr(hdrs, "Content-Type: application/problem+json\r\n"
	    "Cache-Control: no-store\r\n");
	if (er == IDEM_OK && retry_after > 0)
		er = buf_printf(hdrs, "Retry-After: %d\r\n", retry_after);
	if (er != IDEM_OK)
		return er;
	/* The texts are fixed ASCII without quotes or backslashes (a detail
	 * given names a header: a token), so no JSON escaping is needed. */
	er = buf_printf(body, "{\"type\":\"%s%s\","
	    "\"title\":\"%s\",\"status\":%d,\"detail\":\"%s\"",
	    problem_base != NULL ? problem_base : "urn:idemgate:problem:",
	    problems[p].slug, problems[p].title, problems[p].status,
	    detail != NULL ? detail : problems[p].detail);
	if (er == IDEM_OK && original_status > 0)
		er = buf_printf(body, ",\"original_status\":%d",
		    original_status);
	if (er == IDEM_OK)
		er = buf_addstr(body, "}\n");
	return er;
}
