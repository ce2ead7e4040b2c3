/* The replay's header clean-up loop in C: simulator.stacks._headers.clean_split.
 *
 * Written by hand.  It is the C twin of simulator/stacks/replay.py's ``_clean_split`` (the
 * per-field clean-up of ``_clean`` and the split into pseudo-header and regular fields that
 * ``request_headers_for`` and ``response_headers_for`` make), which defines the behaviour;
 * the Python loop stays the reference, and tests/test_page_size_cost.py holds the two to each other.
 * Why C: a page load asks for every resource's request and response lists, and these loops
 * over a 20,000-resource page's 560,000 fields were a tenth of the model's run.
 *
 *   clean_split(headers, cache, clean_field, cache_max, connection_specific) -> (pseudo, regular) or None
 *
 * ``headers`` a tuple of fields; each field's clean form is looked up in ``cache`` (field ->
 * the cleaned (name, value), or None: left out), else made (here for a (bytes, bytes) field,
 * as ``clean_field`` does with ``connection_specific``'s names; by ``clean_field(*field)``,
 * Python, for another) and entered there (the cache emptied first when it holds ``cache_max``).  The
 * cleaned fields go to ``pseudo`` (a name starting with ":") or ``regular`` (any other name
 * but content-length), in order.  None for what the Python loop reads instead: a field that
 * cannot be a key (not hashable), or a cleaned name that is not bytes.
 *
 *   request_headers(headers, cache, clean_field, cache_max, connection_specific, authority, body_bytes)
 *   response_headers(headers, cache, clean_field, cache_max, connection_specific, body_bytes)
 *
 * The rest of ``request_headers_for`` and ``response_headers_for`` after the split, fused with
 * it (the lists built here, no Python frame per list): the same results, or None for what the
 * Python code does instead (a body that is not an int, a pseudo field not a pair, a status not bytes).
 * ``authority`` is the origin's default :authority, worked out by the caller.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

/* bytes.strip()'s whitespace (Py_ISSPACE on a byte): space, tab, LF, VT, FF, CR. */
static int
is_space(unsigned char c)
{
    return c == ' ' || (c >= '\t' && c <= '\r');
}

/* _clean_field(name, value) for bytes: the name stripped and lower-cased, the value stripped
 * and without CR, LF and NUL; None for an empty or connection-specific name.  A new reference:
 * a field with nothing to clean is given back itself (equal to what _clean_field builds), so a
 * page's already clean fields are not copied. */
static PyObject *
clean_bytes_field(PyObject *field, PyObject *connection_specific)
{
    PyObject *name = PyTuple_GET_ITEM(field, 0), *value = PyTuple_GET_ITEM(field, 1);
    const unsigned char *n = (const unsigned char *)PyBytes_AS_STRING(name);
    Py_ssize_t a = 0, b = PyBytes_GET_SIZE(name);
    while (a < b && is_space(n[a]))
        a++;
    while (b > a && is_space(n[b - 1]))
        b--;
    int lower = a == 0 && b == PyBytes_GET_SIZE(name);
    for (Py_ssize_t i = a; i < b && lower; i++)
        lower = !(n[i] >= 'A' && n[i] <= 'Z');
    PyObject *clean_name;
    if (lower) /* nothing to strip or lower: the name itself (an equal bytes object, not a copy) */
        clean_name = Py_NewRef(name);
    else {
        clean_name = PyBytes_FromStringAndSize(NULL, b - a);
        if (clean_name == NULL)
            return NULL;
        char *lowered = PyBytes_AS_STRING(clean_name);
        for (Py_ssize_t i = a; i < b; i++)
            lowered[i - a] = (char)Py_TOLOWER(n[i]);
    }
    int specific = b == a ? 1 : PySet_Contains(connection_specific, clean_name);
    if (specific != 0) {
        Py_DECREF(clean_name);
        return specific < 0 ? NULL : Py_NewRef(Py_None);
    }
    const unsigned char *v = (const unsigned char *)PyBytes_AS_STRING(value);
    Py_ssize_t c = 0, d = PyBytes_GET_SIZE(value), kept = 0;
    while (c < d && is_space(v[c]))
        c++;
    while (d > c && is_space(v[d - 1]))
        d--;
    for (Py_ssize_t i = c; i < d; i++)
        kept += v[i] != '\r' && v[i] != '\n' && v[i] != '\0';
    if (kept == PyBytes_GET_SIZE(value)) { /* nothing to take out of the value either */
        if (clean_name == name) {
            Py_DECREF(clean_name);
            return Py_NewRef(field); /* a field already clean: itself, not an equal copy */
        }
        PyObject *cleaned = PyTuple_Pack(2, clean_name, value);
        Py_DECREF(clean_name);
        return cleaned;
    }
    PyObject *clean_value = PyBytes_FromStringAndSize(NULL, kept);
    if (clean_value == NULL) {
        Py_DECREF(clean_name);
        return NULL;
    }
    char *out = PyBytes_AS_STRING(clean_value);
    for (Py_ssize_t i = c; i < d; i++)
        if (v[i] != '\r' && v[i] != '\n' && v[i] != '\0')
            *out++ = (char)v[i];
    PyObject *cleaned = PyTuple_Pack(2, clean_name, clean_value);
    Py_DECREF(clean_name);
    Py_DECREF(clean_value);
    return cleaned;
}

/* The five arguments every function here starts with, checked; 0, or -1 with an error set. */
static int
check_args(PyObject *const *args, Py_ssize_t nargs, Py_ssize_t want, const char *fname, Py_ssize_t *cache_max)
{
    if (nargs != want) {
        PyErr_Format(PyExc_TypeError, "%s() takes %zd arguments", fname, want);
        return -1;
    }
    if (!PyAnySet_Check(args[4])) {
        PyErr_Format(PyExc_TypeError, "%s(): connection_specific must be a set", fname);
        return -1;
    }
    *cache_max = PyLong_AsSsize_t(args[3]);
    if (*cache_max == -1 && PyErr_Occurred())
        return -1;
    if (!PyTuple_CheckExact(args[0]) || !PyDict_Check(args[1])) {
        PyErr_Format(PyExc_TypeError, "%s(): a tuple and a dict are needed", fname);
        return -1;
    }
    return 0;
}

/* ``_clean_split``'s loop into two new lists: 1 done, 0 for the Python loop (nothing made), -1 an error. */
static int
split(PyObject *headers, PyObject *cache, PyObject *clean_field, Py_ssize_t cache_max, PyObject *connection_specific,
      PyObject **pseudo_out, PyObject **regular_out)
{
    PyObject *pseudo = PyList_New(0), *regular = PyList_New(0);
    if (pseudo == NULL || regular == NULL)
        goto fail;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(headers); i++) {
        PyObject *field = PyTuple_GET_ITEM(headers, i);
        PyObject *cleaned = PyDict_GetItemWithError(cache, field); /* borrowed */
        if (cleaned != NULL)
            Py_INCREF(cleaned);
        else if (PyErr_Occurred()) {
            if (!PyErr_ExceptionMatches(PyExc_TypeError))
                goto fail;
            PyErr_Clear(); /* not hashable: the Python loop's */
            goto python;
        }
        else {
            if (PyTuple_CheckExact(field) && PyTuple_GET_SIZE(field) == 2 &&
                PyBytes_CheckExact(PyTuple_GET_ITEM(field, 0)) && PyBytes_CheckExact(PyTuple_GET_ITEM(field, 1)))
                cleaned = clean_bytes_field(field, connection_specific);
            else {
                PyObject *parts = PySequence_Tuple(field);
                if (parts == NULL)
                    goto fail;
                cleaned = PyObject_Call(clean_field, parts, NULL);
                Py_DECREF(parts);
            }
            if (cleaned == NULL)
                goto fail;
            if (PyDict_GET_SIZE(cache) >= cache_max)
                PyDict_Clear(cache);
            if (PyDict_SetItem(cache, field, cleaned) < 0) {
                Py_DECREF(cleaned);
                goto fail;
            }
        }
        if (cleaned == Py_None) { /* left out */
            Py_DECREF(cleaned);
            continue;
        }
        PyObject *name = PyTuple_Check(cleaned) && PyTuple_GET_SIZE(cleaned) >= 1 ? PyTuple_GET_ITEM(cleaned, 0) : NULL;
        if (name == NULL || !PyBytes_CheckExact(name)) {
            Py_DECREF(cleaned);
            goto python;
        }
        const char *s = PyBytes_AS_STRING(name);
        Py_ssize_t n = PyBytes_GET_SIZE(name);
        int rc = 0;
        if (n >= 1 && s[0] == ':')
            rc = PyList_Append(pseudo, cleaned);
        else if (!(n == 14 && memcmp(s, "content-length", 14) == 0))
            rc = PyList_Append(regular, cleaned);
        Py_DECREF(cleaned);
        if (rc < 0)
            goto fail;
    }
    *pseudo_out = pseudo;
    *regular_out = regular;
    return 1;
python:
    Py_DECREF(pseudo);
    Py_DECREF(regular);
    return 0;
fail:
    Py_XDECREF(pseudo);
    Py_XDECREF(regular);
    return -1;
}

static PyObject *
clean_split(PyObject *mod, PyObject *const *args, Py_ssize_t nargs)
{
    Py_ssize_t cache_max;
    if (check_args(args, nargs, 5, "clean_split", &cache_max) < 0)
        return NULL;
    PyObject *pseudo, *regular;
    int done = split(args[0], args[1], args[2], cache_max, args[4], &pseudo, &regular);
    if (done < 0)
        return NULL;
    if (done == 0)
        Py_RETURN_NONE;
    return Py_BuildValue("(NN)", pseudo, regular);
}

/* Names the lists are built with, made once (module init). */
static PyObject *k_method, *k_scheme, *k_authority, *k_path, *k_status, *k_content_length;
static PyObject *v_get, *v_https, *v_slash, *v_200;

static int
same_name(PyObject *name, PyObject *want)
{
    return name == want || (PyBytes_GET_SIZE(name) == PyBytes_GET_SIZE(want) &&
                            memcmp(PyBytes_AS_STRING(name), PyBytes_AS_STRING(want), PyBytes_GET_SIZE(want)) == 0);
}

/* ``str(body).encode()`` appended as content-length; 0, or -1 with an error set. */
static int
append_length(PyObject *regular, long long body)
{
    char text[32];
    int n = snprintf(text, sizeof text, "%lld", body);
    PyObject *value = PyBytes_FromStringAndSize(text, n);
    if (value == NULL)
        return -1;
    PyObject *field = PyTuple_Pack(2, k_content_length, value);
    Py_DECREF(value);
    if (field == NULL)
        return -1;
    int rc = PyList_Append(regular, field);
    Py_DECREF(field);
    return rc;
}

/* The pseudo fields and the regular list as one tuple: ``(*pseudo, *regular)``.  Steals nothing. */
static PyObject *
joined(PyObject *const *pseudo, Py_ssize_t np, PyObject *regular)
{
    Py_ssize_t nr = PyList_GET_SIZE(regular);
    PyObject *out = PyTuple_New(np + nr);
    if (out == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < np; i++)
        PyTuple_SET_ITEM(out, i, Py_NewRef(pseudo[i]));
    for (Py_ssize_t i = 0; i < nr; i++)
        PyTuple_SET_ITEM(out, np + i, Py_NewRef(PyList_GET_ITEM(regular, i)));
    return out;
}

/* request_headers(headers, cache, clean_field, cache_max, connection_specific, authority, body_bytes)
 * -> the request list, or None: replay.request_headers_for after its _clean_split. */
static PyObject *
request_headers(PyObject *mod, PyObject *const *args, Py_ssize_t nargs)
{
    Py_ssize_t cache_max;
    if (check_args(args, nargs, 7, "request_headers", &cache_max) < 0)
        return NULL;
    PyObject *authority = args[5], *body = args[6];
    if (!PyLong_CheckExact(body))
        Py_RETURN_NONE; /* str() of another type: the Python code's */
    int overflow;
    long long body_bytes = PyLong_AsLongLongAndOverflow(body, &overflow);
    if (overflow)
        Py_RETURN_NONE;
    if (body_bytes == -1 && PyErr_Occurred())
        return NULL;
    PyObject *pseudo, *regular;
    int done = split(args[0], args[1], args[2], cache_max, args[4], &pseudo, &regular);
    if (done <= 0)
        return done < 0 ? NULL : Py_NewRef(Py_None);
    /* dict(pseudo).get: the last value of a name given twice (borrowed from the fields). */
    PyObject *method = NULL, *scheme = NULL, *auth = NULL, *path = NULL, *out = NULL;
    PyObject *made[4] = {NULL, NULL, NULL, NULL};
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(pseudo); i++) {
        PyObject *field = PyList_GET_ITEM(pseudo, i);
        if (PyTuple_GET_SIZE(field) != 2) { /* dict() would refuse it: the Python code's error */
            Py_DECREF(pseudo);
            Py_DECREF(regular);
            Py_RETURN_NONE;
        }
        PyObject *name = PyTuple_GET_ITEM(field, 0), *value = PyTuple_GET_ITEM(field, 1);
        if (same_name(name, k_method))
            method = value;
        else if (same_name(name, k_scheme))
            scheme = value;
        else if (same_name(name, k_authority))
            auth = value;
        else if (same_name(name, k_path))
            path = value;
    }
    if (path != NULL) { /* ``get(b":path") or b"/"`` */
        int truth = PyObject_IsTrue(path);
        if (truth < 0)
            goto done;
        if (truth == 0)
            path = NULL;
    }
    if (body_bytes && append_length(regular, body_bytes) < 0)
        goto done;
    made[0] = PyTuple_Pack(2, k_method, method ? method : v_get);
    made[1] = PyTuple_Pack(2, k_scheme, scheme ? scheme : v_https);
    made[2] = PyTuple_Pack(2, k_authority, auth ? auth : authority);
    made[3] = PyTuple_Pack(2, k_path, path ? path : v_slash);
    if (made[0] && made[1] && made[2] && made[3])
        out = joined(made, 4, regular);
done:
    for (int i = 0; i < 4; i++)
        Py_XDECREF(made[i]);
    Py_DECREF(pseudo);
    Py_DECREF(regular);
    return out;
}

/* response_headers(headers, cache, clean_field, cache_max, connection_specific, body_bytes)
 * -> (the response list, body_bytes), or None: replay.response_headers_for after its _clean_split. */
static PyObject *
response_headers(PyObject *mod, PyObject *const *args, Py_ssize_t nargs)
{
    Py_ssize_t cache_max;
    if (check_args(args, nargs, 6, "response_headers", &cache_max) < 0)
        return NULL;
    PyObject *body = args[5];
    if (!PyLong_CheckExact(body))
        Py_RETURN_NONE;
    int overflow;
    long long body_bytes = PyLong_AsLongLongAndOverflow(body, &overflow);
    if (overflow)
        Py_RETURN_NONE;
    if (body_bytes == -1 && PyErr_Occurred())
        return NULL;
    PyObject *pseudo, *regular;
    int done = split(args[0], args[1], args[2], cache_max, args[4], &pseudo, &regular);
    if (done <= 0)
        return done < 0 ? NULL : Py_NewRef(Py_None);
    PyObject *status = NULL, *out = NULL, *first = NULL;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(pseudo) && status == NULL; i++) {
        PyObject *field = PyList_GET_ITEM(pseudo, i);
        if (PyTuple_GET_SIZE(field) != 2) { /* the Python code's unpacking */
            Py_DECREF(pseudo);
            Py_DECREF(regular);
            Py_RETURN_NONE;
        }
        if (same_name(PyTuple_GET_ITEM(field, 0), k_status))
            status = PyTuple_GET_ITEM(field, 1); /* the first */
    }
    if (status != NULL && !PyBytes_CheckExact(status)) {
        Py_DECREF(pseudo);
        Py_DECREF(regular);
        Py_RETURN_NONE;
    }
    /* Three ASCII digits, not 1xx (an interim or odd status cannot end an exchange). */
    const char *s = status ? PyBytes_AS_STRING(status) : NULL;
    if (status == NULL || PyBytes_GET_SIZE(status) != 3 || !(s[0] >= '0' && s[0] <= '9') ||
        !(s[1] >= '0' && s[1] <= '9') || !(s[2] >= '0' && s[2] <= '9') || s[0] == '1')
        status = v_200;
    s = PyBytes_AS_STRING(status);
    int no_body = memcmp(s, "204", 3) == 0 || memcmp(s, "304", 3) == 0;
    PyObject *body_out = no_body ? PyLong_FromLong(0) : Py_NewRef(body);
    if (body_out == NULL)
        goto done;
    if (!no_body && append_length(regular, body_bytes) < 0) {
        Py_DECREF(body_out);
        goto done;
    }
    first = PyTuple_Pack(2, k_status, status);
    PyObject *list = first ? joined(&first, 1, regular) : NULL;
    if (list == NULL) {
        Py_DECREF(body_out);
        goto done;
    }
    out = Py_BuildValue("(NN)", list, body_out);
done:
    Py_XDECREF(first);
    Py_DECREF(pseudo);
    Py_DECREF(regular);
    return out;
}

static PyMethodDef module_methods[] = {
    {"clean_split", (PyCFunction)(void (*)(void))clean_split, METH_FASTCALL,
     "clean_split(headers, cache, clean_field, cache_max, connection_specific) -> (pseudo, regular) or None:\n"
     "replay._clean_split's"
     "loop (see the module docstring)."},
    {"request_headers", (PyCFunction)(void (*)(void))request_headers, METH_FASTCALL,
     "request_headers(headers, cache, clean_field, cache_max, connection_specific, authority, body_bytes)\n"
     "-> the request list or None: replay.request_headers_for (see the module docstring)."},
    {"response_headers", (PyCFunction)(void (*)(void))response_headers, METH_FASTCALL,
     "response_headers(headers, cache, clean_field, cache_max, connection_specific, body_bytes)\n"
     "-> (the response list, body_bytes) or None: replay.response_headers_for (see the module docstring)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    "simulator.stacks._headers",
    "replay._clean_split's loop in C (the C twin of simulator/stacks/replay.py's).",
    -1,
    module_methods,
};

PyMODINIT_FUNC
PyInit__headers(void)
{
    k_method = PyBytes_FromString(":method");
    k_scheme = PyBytes_FromString(":scheme");
    k_authority = PyBytes_FromString(":authority");
    k_path = PyBytes_FromString(":path");
    k_status = PyBytes_FromString(":status");
    k_content_length = PyBytes_FromString("content-length");
    v_get = PyBytes_FromString("GET");
    v_https = PyBytes_FromString("https");
    v_slash = PyBytes_FromString("/");
    v_200 = PyBytes_FromString("200");
    if (!k_method || !k_scheme || !k_authority || !k_path || !k_status || !k_content_length || !v_get || !v_https ||
        !v_slash || !v_200)
        return NULL;
    PyObject *m = PyModule_Create(&module_def);
    if (m != NULL && PyModule_AddStringConstant(m, "IMPLEMENTATION", "c") < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
