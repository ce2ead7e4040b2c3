/* A common HAR entry read into its Exchange in C: simulator.traces._harheaders.exchange.
 *
 * Written by hand; included by _harheaders.c (it calls that file's fields() and split()).
 * It is the C twin of simulator/traces/har.py's ``_exchange``, which defines the behaviour
 * and stays the reference: tests/test_har_entry.py holds the two to each other, entry by
 * entry, on real producers' HARs, synthetic pages and mutated entries.  Why C: after the
 * JSON and the header loop, the interpreter's own steps over an entry's fields (sizes,
 * timings, initiator, pseudo-header fields, the Exchange's 20 arguments) were the largest
 * part of a 20,000-entry import.
 *
 *   configure_exchange(memo, name_of, field_of, authorities, exchange_class, join, origin,
 *       priority, http_version, chrome_types, wpt_fields, netlocs, parse_time,
 *       join_with_authority, folded_version, priorities, max_body, max_time_ms,
 *       max_value_bytes, status_line_bytes)
 *   exchange(entry, where, path) -> (Exchange, status, transfer size or None), or None
 *   entry(entry, where, path) -> (start time, Exchange, status, transfer size or None), or
 *       None: _EntryReader's _check, then exchange() (see read_entry)
 *
 * Only the common entry is read here: the request's and response's header objects as
 * fields() reads them, all four request pseudo-header fields given, an integer status of
 * 1..999 that is no redirect, every size a JSON integer of -1 up to the limit, no
 * _objectSize or coded-size case to fall back on, a Chrome _resourceType, an _initiator
 * object (or none), timings of plain numbers in range and none of WebPageTest's own.  Any
 * other entry, and any exception in a Python helper called here, gives None: the caller
 * then reads the entry with ``_exchange``, which gives every answer and refusal.  So this
 * never refuses anything itself, and what it gives is what ``_exchange`` gives. */

static struct {
    PyObject *memo, *name_of, *field_of, *authorities, *exchange_class, *join, *origin, *priority, *http_version,
        *chrome_types, *wpt_fields, *netlocs, *parse_time, *join_with_authority, *folded_version, *priorities;
    long long max_body, max_value_bytes, status_line_bytes;
    double max_time_ms;
} ex;

static PyObject *s_request, *s_url, *s_response, *s_no_request_headers, *s_headers, *s_status, *s_body_size,
    *s_content, *s_size, *s_compression, *s_transfer_size, *s_headers_size, *s_post_data, *s_text, *s_initiator,
    *s_initiator_type, *s_initiator_detail, *s_type, *s_stack, *s_resource_type, *s_timings, *s_connection,
    *s_socket, *s_render_blocking, *s_pageref, *s_from_cache, *s_started, *s_strip, *s_lower, *s_priority,
    *s_protocol, *s_http_version, *s_http, *s_https, *s_slashes, *s_other, *s_from_resource_type,
    *s_initiator_url, *s_body_size_from, *s_transfer_from, *s_content_size_from, *b_host, *b_status_name,
    *b_method, *b_scheme, *b_authority, *b_path, *exchange_kwnames;

/* d[key] borrowed, NULL when missing (an exact dict of str keys: no exception). */
static PyObject *
item(PyObject *d, PyObject *key)
{
    PyObject *v = PyDict_GetItemWithError(d, key);
    if (v == NULL)
        PyErr_Clear();
    return v;
}

/* A size as wire_and_decoded_sizes reads it without size_field: missing, null or a JSON
 * integer of -1 (*out = -1: None) up to ``limit``; 0 for anything else. */
static int
plain_size(PyObject *v, long long limit, long long *out)
{
    if (v == NULL || v == Py_None) {
        *out = -1;
        return 1;
    }
    if (!PyLong_CheckExact(v))
        return 0;
    int overflow = 0;
    long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
    if (overflow || (x == -1 && PyErr_Occurred())) {
        PyErr_Clear();
        return 0;
    }
    if (x < -1 || x > limit)
        return 0;
    *out = x;
    return 1;
}

/* Whether ``v`` is a plain number _timings keeps as it is: an int or float of magnitude up
 * to the limit (NaN is not; bool is neither). */
static int
plain_time(PyObject *v)
{
    double x;
    if (PyFloat_CheckExact(v))
        x = PyFloat_AS_DOUBLE(v);
    else if (PyLong_CheckExact(v)) {
        int overflow = 0;
        long long n = PyLong_AsLongLongAndOverflow(v, &overflow);
        if (overflow || (n == -1 && PyErr_Occurred())) {
            PyErr_Clear();
            return 0;
        }
        if (n > (1LL << 52) || n < -(1LL << 52)) /* far past the limit; below, exact as a double */
            return 0;
        x = (double)n;
    }
    else
        return 0;
    return x >= -ex.max_time_ms && x <= ex.max_time_ms;
}

/* A fields() answer's list when the section is within the value limit (check_field_section
 * passes at once), with its text bytes; NULL (no exception) for anything else. */
static PyObject *
plain_fields(PyObject *raw, Py_ssize_t *text_bytes)
{
    if (raw == NULL || !PyList_CheckExact(raw))
        return NULL;
    PyObject *argv[4] = {raw, ex.memo, ex.name_of, ex.field_of};
    PyObject *found = fields(NULL, argv, 4);
    if (found == NULL || found == Py_None || !PyTuple_Check(found) || PyTuple_GET_SIZE(found) != 3) {
        PyErr_Clear();
        Py_XDECREF(found);
        return NULL;
    }
    Py_ssize_t section = PyLong_AsSsize_t(PyTuple_GET_ITEM(found, 1));
    PyObject *list = PyTuple_GET_ITEM(found, 0);
    if (section < 0 || section > ex.max_value_bytes || !PyList_CheckExact(list)) {
        PyErr_Clear();
        Py_DECREF(found);
        return NULL;
    }
    *text_bytes = PyLong_AsSsize_t(PyTuple_GET_ITEM(found, 2));
    Py_INCREF(list);
    Py_DECREF(found);
    return list;
}

/* split(fields, host)'s (pseudo, regular) as a new reference, or NULL (no exception). */
static PyObject *
split_of(PyObject *list, PyObject *host)
{
    PyObject *argv[2] = {list, host};
    PyObject *sp = split(NULL, argv, 2);
    if (sp == NULL || sp == Py_None) {
        PyErr_Clear();
        Py_XDECREF(sp);
        return NULL;
    }
    return sp;
}

static int
bytes_is(PyObject *b, PyObject *name)
{
    return PyBytes_GET_SIZE(b) == PyBytes_GET_SIZE(name) &&
           memcmp(PyBytes_AS_STRING(b), PyBytes_AS_STRING(name), (size_t)PyBytes_GET_SIZE(b)) == 0;
}

/* A tuple of ``head`` (or nothing) then the items of two lists. */
static PyObject *
joined(PyObject *head, PyObject *a, PyObject *b)
{
    Py_ssize_t k = head != NULL, na = a ? PyList_GET_SIZE(a) : 0, nb = PyList_GET_SIZE(b);
    PyObject *t = PyTuple_New(k + na + nb);
    if (t == NULL)
        return NULL;
    if (head != NULL)
        PyTuple_SET_ITEM(t, 0, Py_NewRef(head));
    for (Py_ssize_t i = 0; i < na; i++)
        PyTuple_SET_ITEM(t, k + i, Py_NewRef(PyList_GET_ITEM(a, i)));
    for (Py_ssize_t i = 0; i < nb; i++)
        PyTuple_SET_ITEM(t, k + na + i, Py_NewRef(PyList_GET_ITEM(b, i)));
    return t;
}

/* A Python helper's answer; NULL (no exception) when it raised. */
static PyObject *
helper(PyObject *fn, PyObject *const *argv, size_t n)
{
    PyObject *r = PyObject_Vectorcall(fn, argv, n, NULL);
    if (r == NULL)
        PyErr_Clear();
    return r;
}

/* _PLAIN_URL's match of an ASCII ``url`` (harheaders.scheme_and_netloc's pattern): a scheme,
 * "://", an authority of no "/?#[]", control or space, then nothing or one of "/?#" and no
 * control or space; 1 with the scheme's and authority's spans, else 0. */
static int
plain_url(PyObject *url, Py_ssize_t *scheme_end, Py_ssize_t *netloc_start, Py_ssize_t *netloc_end)
{
    if (!PyUnicode_IS_COMPACT_ASCII(url))
        return 0;
    const unsigned char *p = PyUnicode_1BYTE_DATA(url);
    Py_ssize_t n = PyUnicode_GET_LENGTH(url), i = 0;
    if (n == 0 || !((p[0] | 0x20) >= 'a' && (p[0] | 0x20) <= 'z'))
        return 0;
    while (i < n && (((p[i] | 0x20) >= 'a' && (p[i] | 0x20) <= 'z') || (p[i] >= '0' && p[i] <= '9') || p[i] == '+' ||
                     p[i] == '.' || p[i] == '-'))
        i++;
    if (i + 3 > n || p[i] != ':' || p[i + 1] != '/' || p[i + 2] != '/')
        return 0;
    *scheme_end = i;
    i += 3;
    *netloc_start = i;
    while (i < n && p[i] != '/' && p[i] != '?' && p[i] != '#') {
        if (p[i] == '[' || p[i] == ']' || p[i] <= 0x20 || p[i] == 0x7f)
            return 0;
        i++;
    }
    *netloc_end = i;
    for (; i < n; i++)
        if (p[i] <= 0x20 || p[i] == 0x7f)
            return 0;
    return 1;
}

#define EX_ARGS 19

/* exchange()'s answer (a new reference: the 3-tuple, or None), or NULL with an exception. */
static PyObject *
read_exchange(PyObject *entry, PyObject *where, PyObject *path)
{
    PyObject *req = NULL, *resp = NULL, *scheme = NULL, *authority = NULL, *init_url = NULL, *rtype = NULL;
    PyObject *timings = NULL, *connection = NULL, *priority = NULL, *version = NULL, *origin = NULL;
    PyObject *values[EX_ARGS] = {NULL};
    PyObject *out = NULL, *list = NULL, *sp = NULL;
    Py_ssize_t text_bytes = 0;
    if (!PyDict_CheckExact(entry))
        Py_RETURN_NONE;
    PyObject *request = item(entry, s_request), *response = item(entry, s_response);
    if (request == NULL || !PyDict_CheckExact(request) || response == NULL || !PyDict_CheckExact(response) ||
        item(entry, s_no_request_headers) == Py_True)
        Py_RETURN_NONE;
    PyObject *url = item(request, s_url), *status_obj = item(response, s_status);
    if (url == NULL || !PyUnicode_CheckExact(url) || status_obj == NULL || !PyLong_CheckExact(status_obj))
        Py_RETURN_NONE;
    int overflow = 0;
    long status = PyLong_AsLongAndOverflow(status_obj, &overflow);
    if (overflow || status < 1 || status > 999 || (status >= 300 && status < 400)) { /* a redirect: _exchange's */
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    /* A body the HAR kept (content.text): a document's is read in Python (harfields.document_text). */
    PyObject *kept = item(response, s_content);
    kept = kept != NULL && PyDict_CheckExact(kept) ? item(kept, s_text) : NULL;
    if (kept != NULL && PyUnicode_Check(kept) && PyUnicode_GET_LENGTH(kept) > 0) {
        PyObject *declared = item(entry, s_resource_type);
        if (declared == NULL || !PyUnicode_Check(declared))
            Py_RETURN_NONE;
        PyObject *lowered = PyObject_CallMethodNoArgs(declared, s_lower);
        if (lowered == NULL)
            return NULL;
        int document = PyUnicode_CompareWithASCIIString(lowered, "document") == 0;
        Py_DECREF(lowered);
        if (document)
            Py_RETURN_NONE;
    }

    /* The request's fields (_request_headers_pseudo with all four pseudo-header fields given). */
    list = plain_fields(item(request, s_headers), &text_bytes);
    if (list == NULL || (sp = split_of(list, b_host)) == NULL)
        goto fallback;
    PyObject *pseudo = PyTuple_GET_ITEM(sp, 0), *given[4] = {NULL, NULL, NULL, NULL};
    PyObject *names[4] = {b_method, b_scheme, b_authority, b_path};
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(pseudo); i++) {
        PyObject *f = PyList_GET_ITEM(pseudo, i);
        for (int k = 0; k < 4; k++)
            if (bytes_is(PyTuple_GET_ITEM(f, 0), names[k]))
                given[k] = PyTuple_GET_ITEM(f, 1); /* the last of a name given twice */
    }
    if (!given[0] || !given[1] || !given[2] || !given[3] || !PyBytes_CheckExact(given[1]) ||
        !PyBytes_CheckExact(given[2]) || PyBytes_GET_SIZE(given[1]) == 0 || PyBytes_GET_SIZE(given[2]) == 0)
        goto fallback;
    req = joined(NULL, pseudo, PyTuple_GET_ITEM(sp, 1));
    scheme = PyUnicode_DecodeUTF8(PyBytes_AS_STRING(given[1]), PyBytes_GET_SIZE(given[1]), "surrogateescape");
    authority = PyUnicode_DecodeUTF8(PyBytes_AS_STRING(given[2]), PyBytes_GET_SIZE(given[2]), "surrogateescape");
    Py_CLEAR(sp);
    Py_CLEAR(list);
    if (req == NULL || scheme == NULL || authority == NULL)
        goto error;
    int known = PySet_Contains(ex.authorities, authority); /* else its check is _exchange's */
    if (known < 0)
        goto error;
    if (!known)
        goto fallback;

    /* The response's fields: ":status" first (the status as digits), the regular ones. */
    list = plain_fields(item(response, s_headers), &text_bytes);
    if (list == NULL || (sp = split_of(list, Py_None)) == NULL)
        goto fallback;
    PyObject *code = PyBytes_FromFormat("%ld", status);
    PyObject *status_field = code == NULL ? NULL : PyTuple_Pack(2, b_status_name, code);
    Py_XDECREF(code);
    if (status_field == NULL)
        goto error;
    resp = joined(status_field, NULL, PyTuple_GET_ITEM(sp, 1));
    Py_DECREF(status_field);
    Py_CLEAR(sp);
    Py_CLEAR(list);
    if (resp == NULL)
        goto error;

    /* harfields.wire_and_decoded_sizes, each size a JSON integer in range. */
    PyObject *content = item(response, s_content);
    if (content != NULL && !PyDict_CheckExact(content))
        content = NULL; /* read as {} */
    long long body, decoded, saved, transfer, headers_size, header_bytes;
    PyObject *transfer_obj = item(response, s_transfer_size);
    if (!plain_size(item(response, s_body_size), ex.max_body, &body) ||
        !plain_size(content ? item(content, s_size) : NULL, ex.max_body, &decoded) ||
        !plain_size(content ? item(content, s_compression) : NULL, ex.max_body, &saved) ||
        !plain_size(transfer_obj, ex.max_body, &transfer) ||
        !plain_size(item(response, s_headers_size), ex.max_body, &headers_size))
        goto fallback;
    if (saved < 0)
        saved = 0;
    if (headers_size > 0 || transfer < 0)
        header_bytes = headers_size; /* -1: None, compared with no transfer below */
    else
        header_bytes = ex.status_line_bytes + text_bytes;
    int no_body = status < 200 || status == 204 || status == 304 || decoded == 0 ||
                  (transfer >= 0 && transfer <= header_bytes);
    long long wire;
    PyObject *source;
    if (body >= 0 && decoded >= 0 && body == decoded && body > 0 && transfer >= 0 && 0 < transfer && transfer < body)
        goto fallback; /* maybe a coded body's decoded size: _content_coded's to say */
    else if (body >= 0 && (body > 0 || no_body))
        wire = body, source = s_body_size_from;
    else if (transfer > 0)
        wire = transfer - header_bytes > 0 ? transfer - header_bytes : 0, source = s_transfer_from;
    else if (decoded >= 0)
        wire = decoded - saved > 0 ? decoded - saved : 0, source = s_content_size_from;
    else
        goto fallback; /* _objectSize, or unknown */
    if (decoded < 0)
        decoded = wire + saved;

    /* The request's body: its bodySize, or (none, 0 or -1) an absent postData's 0 bytes. */
    long long req_body;
    if (!plain_size(item(request, s_body_size), ex.max_body, &req_body))
        goto fallback;
    if (req_body <= 0) {
        PyObject *post = item(request, s_post_data);
        if (post != NULL && PyDict_CheckExact(post)) {
            PyObject *text = item(post, s_text);
            if (text != NULL && PyObject_IsTrue(text) != 0) { /* a posted text: _exchange's */
                PyErr_Clear();
                goto fallback;
            }
        }
        req_body = 0;
    }

    /* harfields.initiator for Chrome's object (or none), then its URL joined (_join). */
    PyObject *init_type = Py_None;
    if (item(entry, s_initiator_type) != NULL || item(entry, s_initiator_detail) != NULL)
        goto fallback;
    PyObject *init = item(entry, s_initiator);
    if (init != NULL && PyUnicode_Check(init))
        goto fallback;
    if (init != NULL && PyDict_CheckExact(init)) {
        PyObject *t = item(init, s_type), *u = item(init, s_url), *stack = item(init, s_stack);
        if (t != NULL && PyUnicode_CheckExact(t))
            init_type = t;
        if (u != NULL && !PyUnicode_CheckExact(u))
            u = NULL;
        if (u != NULL && PyUnicode_GET_LENGTH(u) == 0)
            u = NULL;
        if (u == NULL && stack != NULL && PyDict_Check(stack))
            goto fallback; /* a URL in the call stack */
        if (u != NULL) {
            /* _join: a reference with an authority, on a plain http(s) URL, is
             * _join_with_authority's (memoized) with the URL's scheme as _join reads it */
            Py_ssize_t se, ns, ne;
            int slashes = (int)PyUnicode_Find(u, s_slashes, 0, PyUnicode_GET_LENGTH(u), 1) >= 0;
            if (slashes && plain_url(url, &se, &ns, &ne) && (se == 4 || se == 5)) {
                const unsigned char *c = PyUnicode_1BYTE_DATA(url);
                int http = (c[0] | 0x20) == 'h' && (c[1] | 0x20) == 't' && (c[2] | 0x20) == 't' && (c[3] | 0x20) == 'p' &&
                           (se == 4 || (c[4] | 0x20) == 's');
                if (http) {
                    PyObject *argv[2] = {u, se == 4 ? s_http : s_https};
                    init_url = helper(ex.join_with_authority, argv, 2);
                    if (init_url == Py_None)
                        Py_CLEAR(init_url);
                }
            }
            if (init_url == NULL) {
                PyObject *argv[5] = {url, u, s_initiator_url, where, path};
                if ((init_url = helper(ex.join, argv, 5)) == NULL)
                    goto fallback;
            }
        }
    }

    /* harfields.resource_type from Chrome's _resourceType. */
    PyObject *given_type = item(entry, s_resource_type);
    if (given_type == NULL || !PyUnicode_CheckExact(given_type))
        goto fallback;
    PyObject *stripped = PyObject_CallMethodNoArgs(given_type, s_strip);
    if (stripped == NULL)
        goto error;
    if (PyUnicode_GET_LENGTH(stripped) == 0) {
        Py_DECREF(stripped);
        goto fallback;
    }
    PyObject *lowered = PyObject_CallMethodNoArgs(stripped, s_lower);
    Py_DECREF(stripped);
    if (lowered == NULL)
        goto error;
    rtype = PyDict_GetItemWithError(ex.chrome_types, lowered);
    Py_DECREF(lowered);
    if (rtype == NULL && PyErr_Occurred())
        goto error;
    rtype = Py_NewRef(rtype != NULL ? rtype : s_other);

    /* _timings' plain case (a copy), no WebPageTest fields (wpt_timings then gives it back). */
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(ex.wpt_fields); i++)
        if (item(entry, PyTuple_GET_ITEM(ex.wpt_fields, i)) != NULL)
            goto fallback;
    PyObject *raw_timings = item(entry, s_timings);
    if (raw_timings != NULL && raw_timings != Py_None) {
        if (!PyDict_CheckExact(raw_timings))
            goto fallback;
        Py_ssize_t pos = 0;
        PyObject *k, *v;
        while (PyDict_Next(raw_timings, &pos, &k, &v))
            if (!plain_time(v))
                goto fallback;
        if ((timings = PyDict_Copy(raw_timings)) == NULL)
            goto error;
    }

    /* The connection (connection, else _socket; str() of it), priority, version, origin. */
    PyObject *conn = item(entry, s_connection);
    if (conn == NULL || conn == Py_None || (PyUnicode_CheckExact(conn) && PyUnicode_GET_LENGTH(conn) == 0))
        conn = item(entry, s_socket);
    if (conn != NULL && conn != Py_None && !(PyUnicode_CheckExact(conn) && PyUnicode_GET_LENGTH(conn) == 0)) {
        if (!PyUnicode_CheckExact(conn) && !PyLong_CheckExact(conn))
            goto fallback; /* str() of another kind: _exchange's */
        if ((connection = PyObject_Str(conn)) == NULL)
            goto error;
    }
    PyObject *argv1[1] = {entry}, *argv3[3] = {entry, response, request}, *argv2[2] = {scheme, authority};
    /* harfields.priority: a non-blank _priority alone decides, so its answer is kept by it */
    PyObject *given_priority = item(entry, s_priority);
    if (given_priority != NULL && PyUnicode_CheckExact(given_priority)) {
        priority = PyDict_GetItemWithError(ex.priorities, given_priority);
        if (priority == NULL && PyErr_Occurred())
            goto error;
        Py_XINCREF(priority);
    }
    if (priority == NULL) {
        if ((priority = helper(ex.priority, argv1, 1)) == NULL)
            goto fallback;
        if (given_priority != NULL && PyUnicode_CheckExact(given_priority)) {
            PyObject *stripped_priority = PyObject_CallMethodNoArgs(given_priority, s_strip);
            if (stripped_priority == NULL)
                goto error;
            Py_ssize_t left = PyUnicode_GET_LENGTH(stripped_priority);
            Py_DECREF(stripped_priority);
            if (left > 0) {
                if (PyDict_GET_SIZE(ex.priorities) >= 1 << 12)
                    PyDict_Clear(ex.priorities);
                if (PyDict_SetItem(ex.priorities, given_priority, priority) < 0)
                    goto error;
            }
        }
    }
    /* harfields.http_version: without a _protocol string, the response's httpVersion first */
    PyObject *protocol = item(entry, s_protocol), *response_version = item(response, s_http_version);
    if ((protocol == NULL || !PyUnicode_Check(protocol)) && response_version != NULL &&
        PyUnicode_CheckExact(response_version)) {
        PyObject *argv[1] = {response_version};
        if ((version = helper(ex.folded_version, argv, 1)) == Py_None)
            Py_CLEAR(version);
    }
    if ((version == NULL && (version = helper(ex.http_version, argv3, 3)) == NULL) ||
        (origin = helper(ex.origin, argv2, 2)) == NULL)
        goto fallback;
    PyObject *blocking = item(entry, s_render_blocking), *page = item(entry, s_pageref);

    /* Exchange(index=-1, ...): the keywords of exchange_kwnames, in order. */
    PyObject *(numbers[4]) = {PyLong_FromLong(-1), PyLong_FromLongLong(req_body), PyLong_FromLongLong(wire),
                              decoded != wire ? PyLong_FromLongLong(decoded) : Py_NewRef(Py_None)};
    values[0] = numbers[0];
    values[1] = Py_NewRef(req);
    values[2] = Py_NewRef(resp);
    values[3] = numbers[1];
    values[4] = numbers[2];
    values[5] = Py_NewRef(origin);
    values[6] = Py_NewRef(connection ? connection : Py_None);
    values[7] = Py_NewRef(page != NULL && PyUnicode_CheckExact(page) ? page : Py_None);
    values[8] = Py_NewRef(priority);
    values[9] = Py_NewRef(rtype);
    values[10] = Py_NewRef(init_url ? init_url : Py_None);
    values[11] = Py_NewRef(init_type);
    values[12] = Py_NewRef(url);
    values[13] = Py_NewRef(timings ? timings : Py_None);
    values[14] = numbers[3];
    values[15] = Py_NewRef(version);
    values[16] = Py_NewRef(s_from_resource_type);
    values[17] = Py_NewRef(blocking != NULL && PyUnicode_CheckExact(blocking) ? blocking : Py_None);
    values[18] = Py_NewRef(source);
    for (int i = 0; i < EX_ARGS; i++)
        if (values[i] == NULL)
            goto error;
    PyObject *made = PyObject_Vectorcall(ex.exchange_class, values, 0, exchange_kwnames);
    if (made == NULL)
        goto error;
    out = PyTuple_Pack(3, made, status_obj, transfer >= 0 ? transfer_obj : Py_None);
    Py_DECREF(made);
    goto done;
fallback:
    out = Py_NewRef(Py_None);
    goto done;
error:
    out = NULL;
done:
    for (int i = 0; i < EX_ARGS; i++)
        Py_XDECREF(values[i]);
    Py_XDECREF(list);
    Py_XDECREF(sp);
    Py_XDECREF(req);
    Py_XDECREF(resp);
    Py_XDECREF(scheme);
    Py_XDECREF(authority);
    Py_XDECREF(init_url);
    Py_XDECREF(rtype);
    Py_XDECREF(timings);
    Py_XDECREF(connection);
    Py_XDECREF(priority);
    Py_XDECREF(version);
    Py_XDECREF(origin);
    return out;
}

static int
configured(Py_ssize_t nargs, Py_ssize_t want, const char *what)
{
    if (nargs != want) {
        PyErr_Format(PyExc_TypeError, "%s takes %zd arguments", what, want);
        return 0;
    }
    if (ex.exchange_class == NULL) {
        PyErr_Format(PyExc_RuntimeError, "%s: configure_exchange() first", what);
        return 0;
    }
    return 1;
}

static PyObject *
exchange(PyObject *mod, PyObject *const *args, Py_ssize_t nargs)
{
    if (!configured(nargs, 3, "exchange(entry, where, path)"))
        return NULL;
    return read_exchange(args[0], args[1], args[2]);
}

/* entry(entry, where, path): _EntryReader.add's reading of one entry, _check then _exchange,
 * for the common entry: (start time, Exchange, status, transfer size or None), or None (the
 * Python methods' to read: a cached or non-network entry, a URL of another shape or an
 * authority not yet checked, and whatever exchange() hands back). */
static PyObject *
read_entry(PyObject *mod, PyObject *const *args, Py_ssize_t nargs)
{
    if (!configured(nargs, 3, "entry(entry, where, path)"))
        return NULL;
    PyObject *entry = args[0], *where = args[1], *path = args[2];
    if (!PyDict_CheckExact(entry) || item(entry, s_from_cache) != NULL)
        Py_RETURN_NONE;
    PyObject *request = item(entry, s_request), *url = request && PyDict_CheckExact(request) ? item(request, s_url) : NULL;
    Py_ssize_t scheme_end, netloc_start, netloc_end;
    if (url == NULL || !PyUnicode_CheckExact(url) || !plain_url(url, &scheme_end, &netloc_start, &netloc_end) ||
        netloc_end == netloc_start)
        Py_RETURN_NONE;
    const unsigned char *p = PyUnicode_1BYTE_DATA(url);
    int http = scheme_end == 4 && (p[0] | 0x20) == 'h' && (p[1] | 0x20) == 't' && (p[2] | 0x20) == 't' &&
               (p[3] | 0x20) == 'p';
    int https = scheme_end == 5 && (p[0] | 0x20) == 'h' && (p[1] | 0x20) == 't' && (p[2] | 0x20) == 't' &&
                (p[3] | 0x20) == 'p' && (p[4] | 0x20) == 's';
    if (!http && !https) /* another scheme: maybe one that never reaches the network */
        Py_RETURN_NONE;
    PyObject *netloc = PyUnicode_Substring(url, netloc_start, netloc_end);
    if (netloc == NULL)
        return NULL;
    int passed = PySet_Contains(ex.netlocs, netloc); /* else limits.check_netloc's */
    Py_DECREF(netloc);
    if (passed <= 0) {
        if (passed < 0)
            return NULL;
        Py_RETURN_NONE;
    }
    PyObject *started = item(entry, s_started), *t;
    if (started == NULL || started == Py_None)
        t = Py_NewRef(Py_None);
    else {
        PyObject *argv[3] = {started, where, path};
        if ((t = helper(ex.parse_time, argv, 3)) == NULL)
            Py_RETURN_NONE;
    }
    PyObject *found = read_exchange(entry, where, path);
    if (found == NULL || found == Py_None) {
        Py_DECREF(t);
        return found;
    }
    PyObject *out = PyTuple_Pack(4, t, PyTuple_GET_ITEM(found, 0), PyTuple_GET_ITEM(found, 1), PyTuple_GET_ITEM(found, 2));
    Py_DECREF(t);
    Py_DECREF(found);
    return out;
}

static PyObject *
configure_exchange(PyObject *mod, PyObject *args)
{
    PyObject *o[16];
    long long max_body, max_value_bytes, status_line_bytes;
    double max_time_ms;
    if (!PyArg_ParseTuple(args, "O!OOO!OOOOOO!O!O!OOOO!LdLL", &PyDict_Type, &o[0], &o[1], &o[2], &PySet_Type, &o[3],
                          &o[4], &o[5], &o[6], &o[7], &o[8], &PyDict_Type, &o[9], &PyTuple_Type, &o[10], &PySet_Type,
                          &o[11], &o[12], &o[13], &o[14], &PyDict_Type, &o[15], &max_body, &max_time_ms,
                          &max_value_bytes, &status_line_bytes))
        return NULL;
    PyObject **slots[16] = {&ex.memo,       &ex.name_of,   &ex.field_of,   &ex.authorities,         &ex.exchange_class,
                            &ex.join,       &ex.origin,    &ex.priority,   &ex.http_version,        &ex.chrome_types,
                            &ex.wpt_fields, &ex.netlocs,   &ex.parse_time, &ex.join_with_authority, &ex.folded_version,
                            &ex.priorities};
    for (int i = 0; i < 16; i++)
        Py_XSETREF(*slots[i], Py_NewRef(o[i]));
    ex.max_body = max_body;
    ex.max_time_ms = max_time_ms;
    ex.max_value_bytes = max_value_bytes;
    ex.status_line_bytes = status_line_bytes;
    Py_RETURN_NONE;
}

/* The names exchange() reads and makes, once (0, or -1 with an exception). */
static int
exchange_init(void)
{
    struct {
        PyObject **slot;
        const char *text;
    } strs[] = {
        {&s_request, "request"},
        {&s_url, "url"},
        {&s_response, "response"},
        {&s_no_request_headers, "_noRequestHeaders"},
        {&s_headers, "headers"},
        {&s_status, "status"},
        {&s_body_size, "bodySize"},
        {&s_content, "content"},
        {&s_size, "size"},
        {&s_compression, "compression"},
        {&s_transfer_size, "_transferSize"},
        {&s_headers_size, "headersSize"},
        {&s_post_data, "postData"},
        {&s_text, "text"},
        {&s_initiator, "_initiator"},
        {&s_initiator_type, "_initiator_type"},
        {&s_initiator_detail, "_initiator_detail"},
        {&s_type, "type"},
        {&s_stack, "stack"},
        {&s_resource_type, "_resourceType"},
        {&s_timings, "timings"},
        {&s_connection, "connection"},
        {&s_socket, "_socket"},
        {&s_render_blocking, "_renderBlocking"},
        {&s_pageref, "pageref"},
        {&s_from_cache, "_fromCache"},
        {&s_started, "startedDateTime"},
        {&s_priority, "_priority"},
        {&s_protocol, "_protocol"},
        {&s_http_version, "httpVersion"},
        {&s_http, "http"},
        {&s_https, "https"},
        {&s_slashes, "//"},
        {&s_strip, "strip"},
        {&s_lower, "lower"},
        {&s_other, "other"},
        {&s_from_resource_type, "_resourceType"},
        {&s_initiator_url, "_initiator url"},
        {&s_body_size_from, "bodySize"},
        {&s_transfer_from, "_transferSize"},
        {&s_content_size_from, "content.size"},
    };
    for (size_t i = 0; i < sizeof strs / sizeof strs[0]; i++)
        if ((*strs[i].slot = PyUnicode_InternFromString(strs[i].text)) == NULL)
            return -1;
    struct {
        PyObject **slot;
        const char *text;
    } bytes[] = {{&b_host, "host"},           {&b_status_name, ":status"}, {&b_method, ":method"},
                 {&b_scheme, ":scheme"},      {&b_authority, ":authority"}, {&b_path, ":path"}};
    for (size_t i = 0; i < sizeof bytes / sizeof bytes[0]; i++)
        if ((*bytes[i].slot = PyBytes_FromString(bytes[i].text)) == NULL)
            return -1;
    /* Interned, as the __init__'s parameter names are: a keyword is then found by identity
     * (CPython compares the text of each parameter name with each keyword that is not). */
    static const char *kw[EX_ARGS] = {"index", "request_headers", "response_headers", "request_body_bytes",
                                      "response_body_bytes", "origin", "connection", "page", "priority",
                                      "resource_type", "initiator", "initiator_type", "url", "timings",
                                      "response_content_bytes", "http_version", "resource_type_from",
                                      "render_blocking", "body_bytes_from"};
    if ((exchange_kwnames = PyTuple_New(EX_ARGS)) == NULL)
        return -1;
    for (int i = 0; i < EX_ARGS; i++) {
        PyObject *name = PyUnicode_InternFromString(kw[i]);
        if (name == NULL)
            return -1;
        PyTuple_SET_ITEM(exchange_kwnames, i, name);
    }
    return exchange_kwnames == NULL ? -1 : 0;
}
