/* A HAR entry's header objects read into fields in C: simulator.traces._harheaders.fields.
 *
 * Written by hand.  It is the C twin of the loop of simulator/traces/harheaders.py's
 * ``_fields`` over a list of header objects with string names and values, which defines the
 * behaviour (``_header_fields``: names lower-cased, connection-specific fields and names that
 * are no token left out, a value of several lines one field per line); the Python loop stays
 * the reference, and tests/test_har_stream.py holds the two to each other.  Why C: a
 * 20,000-entry HAR has 560,000 header objects, and reading each one's name and value and
 * looking the pair up cost the import a fifth of its time in the interpreter.
 *
 *   fields(raw_headers, memo, name_of, field_of) -> (list of (name, value) bytes pairs,
 *       their section bytes as limits.check_field_section counts them, the objects' text
 *       bytes as harfields.response_header_bytes counts them), or None
 *   split(fields, host) -> (pseudo, regular, host value), or None (see its comment: the loop of
 *       _request_headers and _response_headers over the fields)
 *   exchange(entry, where, path) -> har._exchange's answer for the common entry, or None (see
 *       _harentry.h, included below, and its configure_exchange)
 *   shape(piece) -> the check harjson makes of an entry's bytes before orjson reads them (see
 *       its comment; harjson._shape_python is the reference)
 *
 * ``memo`` maps a raw name (str) to a list [its wire name (bytes, or None: left out), a dict
 * of its values (str) -> the tuple of fields the pair gives]; ``name_of(raw_name)`` (Python)
 * gives a name's wire name, ``field_of(raw_name, value)`` the fields of a pair not met
 * before (``_header_fields``' answer, a pure function of the pair; for a value of ASCII with
 * nothing to clean, of a name other than ``te``, that answer is made here).  None when the list is not all objects with a string name and value: the caller reads it
 * the general way, which gives every refusal.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

#define MEMO_MAX (1 << 15) /* names, and a name's values, remembered at most (then forgotten, all at once) */

static PyObject *str_name, *str_value;

/* Whether ``value`` (a str) is ASCII with nothing _field would clean: no CR, LF or NUL, and
 * nothing str.strip() takes off either end (ASCII whitespace: tab to CR, 0x1c to 0x1f, space). */
static int
plain_value(PyObject *value)
{
    if (!PyUnicode_IS_ASCII(value))
        return 0;
    const Py_UCS1 *p = PyUnicode_1BYTE_DATA(value);
    Py_ssize_t n = PyUnicode_GET_LENGTH(value);
    if (n == 0)
        return 1;
    if (Py_UNICODE_ISSPACE(p[0]) || Py_UNICODE_ISSPACE(p[n - 1]))
        return 0;
    for (Py_ssize_t i = 0; i < n; i++)
        if (p[i] == '\r' || p[i] == '\n' || p[i] == '\0')
            return 0;
    return 1;
}

/* Whether ``k`` is the str ``text`` (``len`` ASCII characters). */
static int
key_is(PyObject *k, PyObject *interned, const char *text, Py_ssize_t len)
{
    return k == interned || (PyUnicode_CheckExact(k) && PyUnicode_IS_COMPACT_ASCII(k) && PyUnicode_GET_LENGTH(k) == len &&
                             memcmp(PyUnicode_1BYTE_DATA(k), text, (size_t)len) == 0);
}

/* A header object's name and value (borrowed): 1, or 0 when it lacks one, -1 with an exception.
 * An object of just those two members is walked (its keys are the JSON parser's objects, not
 * ours: a lookup would hash and compare them, twice); any other is looked up. */
static int
name_and_value(PyObject *h, PyObject **name, PyObject **value)
{
    *name = *value = NULL;
    if (PyDict_GET_SIZE(h) == 2) {
        Py_ssize_t pos = 0;
        PyObject *k, *v;
        while (PyDict_Next(h, &pos, &k, &v)) {
            if (key_is(k, str_name, "name", 4))
                *name = v;
            else if (key_is(k, str_value, "value", 5))
                *value = v;
        }
        if (*name != NULL && *value != NULL)
            return 1;
    }
    *name = PyDict_GetItemWithError(h, str_name);
    *value = *name == NULL ? NULL : PyDict_GetItemWithError(h, str_value);
    if (*value == NULL)
        return PyErr_Occurred() ? -1 : 0;
    return 1;
}

#define PAIRS_ON_STACK 48

static PyObject *
fields(PyObject *mod, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "fields() takes 4 arguments");
        return NULL;
    }
    PyObject *raw = args[0], *memo = args[1], *name_of = args[2], *field_of = args[3];
    if (!PyList_CheckExact(raw) || !PyDict_Check(memo)) {
        PyErr_SetString(PyExc_TypeError, "fields(): a list and a dict are needed");
        return NULL;
    }
    Py_ssize_t n = PyList_GET_SIZE(raw), held = 0;
    Py_ssize_t text_bytes = 0; /* the objects' names and values as "name: value\r\n" lines */
    /* Every object's name and value first (held: the callbacks below run Python), so that a
     * list the general way reads gives nothing here. */
    PyObject *on_stack[2 * PAIRS_ON_STACK], **pairs = on_stack, *result = NULL, *out = NULL;
    if (n > PAIRS_ON_STACK && (pairs = PyMem_Malloc(sizeof(PyObject *) * 2 * (size_t)n)) == NULL)
        return PyErr_NoMemory();
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *h = PyList_GET_ITEM(raw, i), *name, *value;
        if (!PyDict_CheckExact(h))
            goto none;
        int rc = name_and_value(h, &name, &value);
        if (rc < 0)
            goto done;
        if (rc == 0 || !PyUnicode_CheckExact(name) || !PyUnicode_CheckExact(value))
            goto none;
        pairs[2 * i] = Py_NewRef(name);
        pairs[2 * i + 1] = Py_NewRef(value);
        held = i + 1;
        text_bytes += PyUnicode_GET_LENGTH(name) + PyUnicode_GET_LENGTH(value) + 4;
    }
    out = PyList_New(0);
    if (out == NULL)
        goto done;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *name = pairs[2 * i], *value = pairs[2 * i + 1];
        PyObject *entry = PyDict_GetItemWithError(memo, name); /* borrowed */
        PyObject *done = NULL;                                 /* a new reference: the pair's fields */
        if (entry == NULL) {
            if (PyErr_Occurred())
                goto fail;
            PyObject *wire = PyObject_CallOneArg(name_of, name);
            if (wire == NULL)
                goto fail;
            PyObject *values = PyDict_New();
            entry = values == NULL ? NULL : PyList_New(2);
            if (entry == NULL) {
                Py_DECREF(wire);
                Py_XDECREF(values);
                goto fail;
            }
            PyList_SET_ITEM(entry, 0, wire);
            PyList_SET_ITEM(entry, 1, values);
            if (PyDict_GET_SIZE(memo) >= MEMO_MAX)
                PyDict_Clear(memo);
            int rc = PyDict_SetItem(memo, name, entry);
            Py_DECREF(entry); /* the memo holds it */
            if (rc < 0)
                goto fail;
        }
        PyObject *wire = PyList_GET_ITEM(entry, 0), *values = PyList_GET_ITEM(entry, 1);
        if (wire == Py_None) /* a name no stack sends: left out, whatever its value */
            continue;
        done = PyDict_GetItemWithError(values, value);
        if (done != NULL)
            Py_INCREF(done);
        else if (PyErr_Occurred())
            goto fail;
        else {
            if (PyBytes_CheckExact(wire) && plain_value(value) &&
                !(PyBytes_GET_SIZE(wire) == 2 && memcmp(PyBytes_AS_STRING(wire), "te", 2) == 0)) {
                /* the value's bytes as they are: field_of's answer, made here */
                PyObject *bytes = PyBytes_FromStringAndSize((const char *)PyUnicode_1BYTE_DATA(value),
                                                            PyUnicode_GET_LENGTH(value));
                PyObject *field = bytes == NULL ? NULL : PyTuple_Pack(2, wire, bytes);
                Py_XDECREF(bytes);
                done = field == NULL ? NULL : PyTuple_Pack(1, field);
                Py_XDECREF(field);
            }
            else {
                PyObject *argv[2] = {name, value};
                done = PyObject_Vectorcall(field_of, argv, 2, NULL);
            }
            if (done == NULL)
                goto fail;
            if (!PyTuple_Check(done)) {
                Py_DECREF(done);
                PyErr_SetString(PyExc_TypeError, "fields(): field_of() must give a tuple");
                goto fail;
            }
            if (PyDict_GET_SIZE(values) >= MEMO_MAX)
                PyDict_Clear(values);
            if (PyDict_SetItem(values, value, done) < 0) {
                Py_DECREF(done);
                goto fail;
            }
        }
        for (Py_ssize_t j = 0; j < PyTuple_GET_SIZE(done); j++) {
            if (PyList_Append(out, PyTuple_GET_ITEM(done, j)) < 0) {
                Py_DECREF(done);
                goto fail;
            }
        }
        Py_DECREF(done);
    }
    /* The fields' section bytes as limits.check_field_section counts them: 32 a field (RFC 7541 4.1). */
    Py_ssize_t section_bytes = 0;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(out); i++) {
        PyObject *f = PyList_GET_ITEM(out, i);
        if (!PyTuple_Check(f) || PyTuple_GET_SIZE(f) != 2) {
            PyErr_SetString(PyExc_TypeError, "fields(): a field is not a pair of bytes");
            goto fail;
        }
        PyObject *a = PyTuple_GET_ITEM(f, 0), *b = PyTuple_GET_ITEM(f, 1);
        Py_ssize_t la = PyBytes_CheckExact(a) ? PyBytes_GET_SIZE(a) : PyObject_Size(a);
        Py_ssize_t lb = la < 0 ? -1 : PyBytes_CheckExact(b) ? PyBytes_GET_SIZE(b) : PyObject_Size(b);
        if (lb < 0) {
            PyErr_SetString(PyExc_TypeError, "fields(): a field is not a pair of bytes");
            goto fail;
        }
        section_bytes += la + lb + 32;
    }
    result = Py_BuildValue("(Nnn)", out, section_bytes, text_bytes);
    out = NULL;
    goto done;
none:
    result = Py_NewRef(Py_None);
    goto done;
fail:
    Py_CLEAR(out);
done:
    for (Py_ssize_t i = 0; i < 2 * held; i++)
        Py_DECREF(pairs[i]);
    if (pairs != on_stack)
        PyMem_Free(pairs);
    Py_XDECREF(out);
    return result;
}

/* split(fields, host): the loop of harheaders' _request_headers (host b"host") and
 * _response_headers (host None) over a list of (name, value) fields with bytes names: the
 * pseudo-header fields (a name starting with ":") and the others in order, the fields named
 * ``host`` left out of the others, the first one's value given apart; (pseudo, regular,
 * host value or None), or None for a list of another shape (the Python loop reads it). */
static PyObject *
split(PyObject *mod, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2 || !PyList_CheckExact(args[0]) || (args[1] != Py_None && !PyBytes_CheckExact(args[1]))) {
        PyErr_SetString(PyExc_TypeError, "split(fields, host): a list and bytes or None are needed");
        return NULL;
    }
    PyObject *fields = args[0], *host = args[1] == Py_None ? NULL : args[1];
    Py_ssize_t n = PyList_GET_SIZE(fields);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *f = PyList_GET_ITEM(fields, i);
        if (!PyTuple_CheckExact(f) || PyTuple_GET_SIZE(f) != 2 || !PyBytes_CheckExact(PyTuple_GET_ITEM(f, 0)))
            Py_RETURN_NONE;
    }
    PyObject *pseudo = PyList_New(0), *regular = PyList_New(0), *host_value = Py_None;
    if (pseudo == NULL || regular == NULL)
        goto fail;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *f = PyList_GET_ITEM(fields, i), *name = PyTuple_GET_ITEM(f, 0);
        int rc = 0;
        if (PyBytes_GET_SIZE(name) >= 1 && PyBytes_AS_STRING(name)[0] == ':')
            rc = PyList_Append(pseudo, f);
        else if (host == NULL || PyBytes_GET_SIZE(name) != PyBytes_GET_SIZE(host) ||
                 memcmp(PyBytes_AS_STRING(name), PyBytes_AS_STRING(host), (size_t)PyBytes_GET_SIZE(host)) != 0)
            rc = PyList_Append(regular, f);
        else if (host_value == Py_None)
            host_value = PyTuple_GET_ITEM(f, 1);
        if (rc < 0)
            goto fail;
    }
    return Py_BuildValue("(NNO)", pseudo, regular, host_value);
fail:
    Py_XDECREF(pseudo);
    Py_XDECREF(regular);
    return NULL;
}

/* shape(piece): the check harjson's _decode_entry makes of an entry's bytes before orjson
 * reads them (its Python reference, harjson._shape_python, maps the bytes with
 * bytes.translate and searches the copy): -1 when the bytes hold a run of 19 or more ASCII
 * digits (maybe an integer past 64 bits, which orjson reads as a float), else how many of
 * them are "[" or "{" (a bound on the nesting), without the copy: a 50 MB HAR is mapped
 * and searched a byte at a time there, where here one byte in 19 is looked at for the digits
 * and memchr counts the brackets. */
static PyObject *
shape(PyObject *mod, PyObject *arg)
{
    if (!PyBytes_CheckExact(arg)) {
        PyErr_SetString(PyExc_TypeError, "shape(piece): bytes are needed");
        return NULL;
    }
    const char *p = PyBytes_AS_STRING(arg);
    Py_ssize_t n = PyBytes_GET_SIZE(arg), opens = 0;
    /* Any 19 bytes in a row hold one whose index is 18 modulo 19: a run of 19 digits holds
     * one of those, so only they are looked at, and a digit there is measured its run. */
    for (Py_ssize_t i = 18; i < n; i += 19) {
        if (p[i] < '0' || p[i] > '9')
            continue;
        Py_ssize_t lo = i, hi = i;
        while (lo > 0 && p[lo - 1] >= '0' && p[lo - 1] <= '9')
            lo--;
        while (hi + 1 < n && p[hi + 1] >= '0' && p[hi + 1] <= '9')
            hi++;
        if (hi - lo + 1 >= 19)
            return PyLong_FromLong(-1);
    }
    for (const char *q = p, *end = p + n; (q = memchr(q, '{', (size_t)(end - q))) != NULL; q++)
        opens++;
    for (const char *q = p, *end = p + n; (q = memchr(q, '[', (size_t)(end - q))) != NULL; q++)
        opens++;
    return PyLong_FromSsize_t(opens);
}

#include "_harentry.h"

static PyMethodDef module_methods[] = {
    {"exchange", (PyCFunction)(void (*)(void))exchange, METH_FASTCALL,
     "exchange(entry, where, path) -> (Exchange, status, transfer size) or None: har._exchange for\n"
     "the common entry (see _harentry.h)."},
    {"entry", (PyCFunction)(void (*)(void))read_entry, METH_FASTCALL,
     "entry(entry, where, path) -> (start time, Exchange, status, transfer size) or None: _EntryReader's\n"
     "_check and har._exchange for the common entry (see _harentry.h)."},
    {"configure_exchange", configure_exchange, METH_VARARGS,
     "configure_exchange(...): the memos, helpers and limits exchange() reads (see _harentry.h)."},
    {"shape", (PyCFunction)shape, METH_O,
     "shape(piece) -> -1 when the bytes hold a run of 19 or more digits, else their count of\n"
     "'[' and '{' (harjson._shape_python's answer)."},
    {"split", (PyCFunction)(void (*)(void))split, METH_FASTCALL,
     "split(fields, host) -> (pseudo, regular, host value) or None: the loop of _request_headers and\n"
     "_response_headers (see split's comment)."},
    {"fields", (PyCFunction)(void (*)(void))fields, METH_FASTCALL,
     "fields(raw_headers, memo, name_of, field_of) -> (fields, section bytes, text bytes) or None:\n"
     "_fields' loop (see the module docstring)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    "simulator.traces._harheaders",
    "The loop of harheaders._fields over header objects in C (the C twin of simulator/traces/harheaders.py's).",
    -1,
    module_methods,
};

PyMODINIT_FUNC
PyInit__harheaders(void)
{
    str_name = PyUnicode_InternFromString("name");
    str_value = PyUnicode_InternFromString("value");
    if (str_name == NULL || str_value == NULL || exchange_init() < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module_def);
    if (m != NULL && PyModule_AddStringConstant(m, "IMPLEMENTATION", "c") < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
