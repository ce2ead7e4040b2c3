/* The HPACK block sizer's per-field loop in C: simulator.http._header_sizes.encode.
 *
 * Written by hand.  It is the C twin of HeaderBlockSizer._encode in
 * simulator/http/header_sizes.py, which defines the behaviour (the choices of hpack's
 * encoder, RFC 7541); the Python method stays the reference, and the tests compare the
 * two block by block.  Why C: a page load sizes every request and response block, and
 * the Python loop over a 20,000-resource page's 600,000 fields was the largest single
 * item of the model's own share of its profile.
 *
 *   encode(headers, plain_fields, miss, exact, names, entries, first, inserted, used, limit)
 *       -> (bytes, first, inserted, used)
 *
 * The table's state is the Python object's own: ``exact`` ((name, value) -> newest
 * insertion number), ``names`` (name -> newest insertion number), ``entries`` (a deque of
 * entry sizes, oldest first) are updated in place; the three numbers are returned.  A
 * field's table-independent facts (the 7-tuple ``_remember`` makes) are looked up in
 * ``plain_fields`` for a plain 2-tuple; for any other field, or a plain one not met
 * before, ``miss(field)`` (Python) gives them.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#define DYNAMIC_FIRST_INDEX 62 /* RFC 7541 section 2.3.3: after the 61 static entries */

static PyObject *str_append, *str_popleft, *str_clear;

/* Bytes of ``value`` as an HPACK integer with a ``prefix_bits`` prefix (RFC 7541 section 5.1). */
static long long
integer_len(long long value, int prefix_bits)
{
    long long top = (1LL << prefix_bits) - 1;
    if (value < top)
        return 1;
    value -= top;
    long long n = 2;
    while (value >= 128) {
        value >>= 7;
        n++;
    }
    return n;
}

/* A dict's value as a C integer; -2 with an exception set when it is not one. */
static int
as_ll(PyObject *obj, long long *out)
{
    long long v = PyLong_AsLongLong(obj);
    if (v == -1 && PyErr_Occurred())
        return -1;
    *out = v;
    return 0;
}

static PyObject *
encode(PyObject *mod, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 10) {
        PyErr_SetString(PyExc_TypeError, "encode() takes 10 arguments");
        return NULL;
    }
    PyObject *headers = args[0], *plain_fields = args[1], *miss = args[2];
    PyObject *exact = args[3], *names = args[4], *entries = args[5];
    long long first, inserted, used, limit;
    if (!PyDict_Check(plain_fields) || !PyDict_Check(exact) || !PyDict_Check(names)) {
        PyErr_SetString(PyExc_TypeError, "encode(): plain_fields, exact and names must be dicts");
        return NULL;
    }
    if (as_ll(args[6], &first) < 0 || as_ll(args[7], &inserted) < 0 || as_ll(args[8], &used) < 0 ||
        as_ll(args[9], &limit) < 0)
        return NULL;
    PyObject *iter = PyObject_GetIter(headers);
    if (iter == NULL)
        return NULL;
    long long total = 0;
    PyObject *header;
    while ((header = PyIter_Next(iter)) != NULL) {
        PyObject *info = NULL; /* a new reference */
        if (PyTuple_CheckExact(header) && PyTuple_GET_SIZE(header) == 2) {
            info = PyDict_GetItemWithError(plain_fields, header);
            if (info != NULL)
                Py_INCREF(info);
            else if (PyErr_Occurred())
                goto fail_header;
        }
        if (info == NULL) {
            info = PyObject_CallOneArg(miss, header);
            if (info == NULL)
                goto fail_header;
        }
        Py_DECREF(header);
        if (!PyTuple_Check(info) || PyTuple_GET_SIZE(info) != 7) {
            Py_DECREF(info);
            PyErr_SetString(PyExc_TypeError, "encode(): a field's facts are not a 7-tuple");
            goto fail;
        }
        /* static_full, pair, static_name, literal_value, literal_name, sensitive, size */
        long long static_full, static_name, literal_value, literal_name, size;
        PyObject *pair = PyTuple_GET_ITEM(info, 1);
        if (as_ll(PyTuple_GET_ITEM(info, 0), &static_full) < 0 || as_ll(PyTuple_GET_ITEM(info, 2), &static_name) < 0 ||
            as_ll(PyTuple_GET_ITEM(info, 3), &literal_value) < 0 ||
            as_ll(PyTuple_GET_ITEM(info, 4), &literal_name) < 0 || as_ll(PyTuple_GET_ITEM(info, 6), &size) < 0)
            goto fail_info;
        int sensitive = PyObject_IsTrue(PyTuple_GET_ITEM(info, 5));
        if (sensitive < 0)
            goto fail_info;
        if (static_full) {
            total += static_full; /* indexed field (static table) */
            Py_DECREF(info);
            continue;
        }
        if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) < 1) {
            PyErr_SetString(PyExc_TypeError, "encode(): a field's pair is not a tuple");
            goto fail_info;
        }
        long long k;
        PyObject *found = PyDict_GetItemWithError(exact, pair);
        if (found == NULL && PyErr_Occurred())
            goto fail_info;
        if (found != NULL) {
            if (as_ll(found, &k) < 0)
                goto fail_info;
            if (k >= first) { /* indexed field (dynamic table) */
                long long index = DYNAMIC_FIRST_INDEX + inserted - 1 - k;
                total += index < 127 ? 1 : integer_len(index, 7);
                Py_DECREF(info);
                continue;
            }
        }
        PyObject *name = PyTuple_GET_ITEM(pair, 0);
        if (static_name) /* indexed name (static table) */
            total += static_name + literal_value;
        else {
            found = PyDict_GetItemWithError(names, name);
            if (found == NULL && PyErr_Occurred())
                goto fail_info;
            if (found != NULL && as_ll(found, &k) < 0)
                goto fail_info;
            if (found != NULL && k >= first) /* indexed name (dynamic table) */
                total += integer_len(DYNAMIC_FIRST_INDEX + inserted - 1 - k, sensitive ? 4 : 6) + literal_value;
            else /* literal name */
                total += literal_name + literal_value;
        }
        if (sensitive) {
            Py_DECREF(info);
            continue;
        }
        /* Entered in the dynamic table (RFC 7541 section 4.4), the oldest evicted past its size. */
        if (size > limit) { /* larger than the table: it empties it */
            PyObject *r = PyObject_CallMethodNoArgs(entries, str_clear);
            if (r == NULL)
                goto fail_info;
            Py_DECREF(r);
            used = 0;
            first = inserted;
            Py_DECREF(info);
            continue;
        }
        PyObject *number = PyLong_FromLongLong(inserted);
        if (number == NULL)
            goto fail_info;
        int rc = PyDict_SetItem(exact, pair, number);
        if (rc == 0)
            rc = PyDict_SetItem(names, name, number);
        Py_DECREF(number);
        if (rc < 0)
            goto fail_info;
        inserted++;
        PyObject *r = PyObject_CallMethodOneArg(entries, str_append, PyTuple_GET_ITEM(info, 6));
        if (r == NULL)
            goto fail_info;
        Py_DECREF(r);
        used += size;
        Py_DECREF(info);
        while (used > limit) {
            PyObject *oldest = PyObject_CallMethodNoArgs(entries, str_popleft);
            if (oldest == NULL)
                goto fail;
            long long oldest_size;
            rc = as_ll(oldest, &oldest_size);
            Py_DECREF(oldest);
            if (rc < 0)
                goto fail;
            used -= oldest_size;
            first++;
        }
        continue;
    fail_info:
        Py_DECREF(info);
        goto fail;
    fail_header:
        Py_DECREF(header);
        goto fail;
    }
    Py_DECREF(iter);
    if (PyErr_Occurred())
        return NULL;
    return Py_BuildValue("(LLLL)", total, first, inserted, used);
fail:
    Py_DECREF(iter);
    return NULL;
}

static PyMethodDef module_methods[] = {
    {"encode", (PyCFunction)(void (*)(void))encode, METH_FASTCALL,
     "encode(headers, plain_fields, miss, exact, names, entries, first, inserted, used, limit)\n"
     "-> (bytes, first, inserted, used): HeaderBlockSizer._encode's loop (see the module docstring)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    "simulator.http._header_sizes",
    "HeaderBlockSizer._encode's per-field loop in C (the C twin of simulator/http/header_sizes.py's).",
    -1,
    module_methods,
};

PyMODINIT_FUNC
PyInit__header_sizes(void)
{
    str_append = PyUnicode_InternFromString("append");
    str_popleft = PyUnicode_InternFromString("popleft");
    str_clear = PyUnicode_InternFromString("clear");
    if (str_append == NULL || str_popleft == NULL || str_clear == NULL)
        return NULL;
    PyObject *m = PyModule_Create(&module_def);
    if (m != NULL && PyModule_AddStringConstant(m, "IMPLEMENTATION", "c") < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
