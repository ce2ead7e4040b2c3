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
 * and without CR, LF and NUL; None for an empty or connection-specific name.  A new reference. */
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
    PyObject *clean_name = PyBytes_FromStringAndSize(NULL, b - a);
    if (clean_name == NULL)
        return NULL;
    char *out = PyBytes_AS_STRING(clean_name);
    for (Py_ssize_t i = a; i < b; i++)
        out[i - a] = (char)Py_TOLOWER(n[i]);
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
    PyObject *clean_value = PyBytes_FromStringAndSize(NULL, kept);
    if (clean_value == NULL) {
        Py_DECREF(clean_name);
        return NULL;
    }
    out = PyBytes_AS_STRING(clean_value);
    for (Py_ssize_t i = c; i < d; i++)
        if (v[i] != '\r' && v[i] != '\n' && v[i] != '\0')
            *out++ = (char)v[i];
    PyObject *cleaned = PyTuple_Pack(2, clean_name, clean_value);
    Py_DECREF(clean_name);
    Py_DECREF(clean_value);
    return cleaned;
}

static PyObject *
clean_split(PyObject *mod, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 5) {
        PyErr_SetString(PyExc_TypeError, "clean_split() takes 5 arguments");
        return NULL;
    }
    PyObject *headers = args[0], *cache = args[1], *clean_field = args[2], *connection_specific = args[4];
    if (!PyAnySet_Check(connection_specific)) {
        PyErr_SetString(PyExc_TypeError, "clean_split(): connection_specific must be a set");
        return NULL;
    }
    Py_ssize_t cache_max = PyLong_AsSsize_t(args[3]);
    if (cache_max == -1 && PyErr_Occurred())
        return NULL;
    if (!PyTuple_CheckExact(headers) || !PyDict_Check(cache)) {
        PyErr_SetString(PyExc_TypeError, "clean_split(): a tuple and a dict are needed");
        return NULL;
    }
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
    return Py_BuildValue("(NN)", pseudo, regular);
python:
    Py_DECREF(pseudo);
    Py_DECREF(regular);
    Py_RETURN_NONE;
fail:
    Py_XDECREF(pseudo);
    Py_XDECREF(regular);
    return NULL;
}

static PyMethodDef module_methods[] = {
    {"clean_split", (PyCFunction)(void (*)(void))clean_split, METH_FASTCALL,
     "clean_split(headers, cache, clean_field, cache_max, connection_specific) -> (pseudo, regular) or None:\n"
     "replay._clean_split's"
     "loop (see the module docstring)."},
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
    PyObject *m = PyModule_Create(&module_def);
    if (m != NULL && PyModule_AddStringConstant(m, "IMPLEMENTATION", "c") < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
