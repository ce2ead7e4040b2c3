/* The HPACK block sizer's per-field loop in C: simulator.http._header_sizes.encode.
 *
 * Written by hand.  It is the C twin of HeaderBlockSizer._encode in
 * simulator/http/header_sizes.py, which defines the behaviour (the choices of hpack's
 * encoder, RFC 7541); the Python method stays the reference, and the tests compare the
 * two block by block.  Why C: a page load sizes every request and response block, and
 * the Python loop over a 20,000-resource page's 600,000 fields was the largest single
 * item of the model's own share of its profile.
 *
 *   encode(headers, plain_fields, miss, exact, names, entries, first, inserted, used, limit
 *          [, h2_facts, normalized_fields, normalize, blind_names]) -> (bytes, first, inserted, used)
 *
 * The table's state is the Python object's own: ``exact`` ((name, value) of a live entry ->
 * newest insertion number), ``names`` (name of a live entry -> newest insertion number),
 * ``entries`` (a deque of the live entries' facts, oldest first) are updated in place; the
 * three numbers are returned.  A
 * field's table-independent facts (the 7-tuple ``_remember`` makes) are looked up in
 * ``plain_fields`` for a plain 2-tuple; a (bytes, bytes) one not met before has them made
 * here as ``_remember`` makes them (once ``configure`` has given hpack's static table and
 * Huffman code lengths) and entered there; for any other field ``miss(field)`` (Python)
 * gives them.  With ``h2_facts``, ``normalized_fields`` and ``normalize``, each field of
 * ``headers`` is first replaced by the fields h2 normalises it to (a tuple, looked up in
 * ``normalized_fields`` for a plain tuple, else ``normalize(field)``'s): the block of
 * ``h2_normalized(headers)`` without making that list (HeaderBlockSizer._encode_h2); the
 * facts of a plain tuple's fields are remembered in ``h2_facts`` (one lookup a field).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#define DYNAMIC_FIRST_INDEX 62 /* RFC 7541 section 2.3.3: after the 61 static entries */

static PyObject *str_append, *str_popleft, *str_clear;

/* configure()'s: hpack's static table (name -> (first index, {value: index})), each byte's
 * Huffman code length in bits, and the size at which the facts memo is emptied. */
static PyObject *static_table;
static unsigned char code_bits[256];
static Py_ssize_t fields_max;

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

/* The encoder's table as encode() works on it: the dicts and deque of the Python object,
 * its three numbers in C while a block is sized. */
typedef struct {
    PyObject *plain_fields, *miss, *exact, *names, *entries;
    long long first, inserted, used, limit, total;
    PyObject *append, *popleft; /* entries' methods, bound at their first use in a block */
} Table;

/* entries.<name>, bound once a block (a new reference kept in *slot). */
static PyObject *
bound(Table *t, PyObject **slot, PyObject *name)
{
    if (*slot == NULL)
        *slot = PyObject_GetAttr(t->entries, name);
    return *slot;
}

/* Bytes of ``data`` Huffman-coded (RFC 7541 section 5.2): its codes' bits, padded to a byte. */
static long long
huffman_bytes(PyObject *data)
{
    const unsigned char *p = (const unsigned char *)PyBytes_AS_STRING(data);
    long long bits = 0;
    for (Py_ssize_t i = 0, n = PyBytes_GET_SIZE(data); i < n; i++)
        bits += code_bits[p[i]];
    return (bits + 7) >> 3;
}

/* _remember(plain_fields, header, name, value, False) for a (bytes, bytes) field: its facts
 * (a new reference), entered in plain_fields. */
static PyObject *
remember_plain(PyObject *plain_fields, PyObject *header)
{
    PyObject *name = PyTuple_GET_ITEM(header, 0), *value = PyTuple_GET_ITEM(header, 1);
    long long static_full = 0, static_name = 0;
    PyObject *in_static = PyDict_GetItemWithError(static_table, name);
    if (in_static == NULL && PyErr_Occurred())
        return NULL;
    if (in_static != NULL) {
        if (!PyTuple_Check(in_static) || PyTuple_GET_SIZE(in_static) != 2) {
            PyErr_SetString(PyExc_TypeError, "encode(): a static table entry is not a pair");
            return NULL;
        }
        long long first_index, index;
        if (as_ll(PyTuple_GET_ITEM(in_static, 0), &first_index) < 0)
            return NULL;
        PyObject *found = PyObject_GetItem(PyTuple_GET_ITEM(in_static, 1), value);
        if (found == NULL) {
            if (!PyErr_ExceptionMatches(PyExc_KeyError))
                return NULL;
            PyErr_Clear();
        }
        else {
            int rc = as_ll(found, &index);
            Py_DECREF(found);
            if (rc < 0)
                return NULL;
            static_full = integer_len(index, 7); /* RFC 7541 section 6.1 */
        }
        static_name = integer_len(first_index, 6); /* section 6.2.1 */
    }
    long long value_bytes = huffman_bytes(value), name_bytes = huffman_bytes(name);
    /* (static_full, (name, value), static_name, literal_value, literal_name, False, size),
     * made directly (Py_BuildValue parses its format each time: one field in eight is new) */
    PyObject *info = PyTuple_New(7), *pair = PyTuple_Pack(2, name, value);
    long long numbers[5] = {static_full, static_name, integer_len(value_bytes, 7) + value_bytes,
                            1 + integer_len(name_bytes, 7) + name_bytes,
                            32 + (long long)PyBytes_GET_SIZE(name) + (long long)PyBytes_GET_SIZE(value)};
    int at[5] = {0, 2, 3, 4, 6};
    if (info == NULL || pair == NULL) {
        Py_XDECREF(info);
        Py_XDECREF(pair);
        return NULL;
    }
    PyTuple_SET_ITEM(info, 1, pair);
    PyTuple_SET_ITEM(info, 5, Py_NewRef(Py_False));
    for (int i = 0; i < 5; i++) {
        PyObject *n = PyLong_FromLongLong(numbers[i]);
        if (n == NULL) {
            Py_DECREF(info);
            return NULL;
        }
        PyTuple_SET_ITEM(info, at[i], n);
    }
    if (PyDict_GET_SIZE(plain_fields) >= fields_max)
        PyDict_Clear(plain_fields);
    if (PyDict_SetItem(plain_fields, header, info) < 0) {
        Py_DECREF(info);
        return NULL;
    }
    return info;
}

/* The facts of one field (a new reference): looked up, made here, or miss()'s answer. */
static PyObject *
facts_of(Table *t, PyObject *header)
{
    if (PyTuple_CheckExact(header) && PyTuple_GET_SIZE(header) == 2) {
        PyObject *info = PyDict_GetItemWithError(t->plain_fields, header);
        if (info != NULL)
            return Py_NewRef(info);
        if (PyErr_Occurred())
            return NULL;
        if (static_table != NULL && PyBytes_CheckExact(PyTuple_GET_ITEM(header, 0)) &&
            PyBytes_CheckExact(PyTuple_GET_ITEM(header, 1)))
            return remember_plain(t->plain_fields, header);
    }
    return PyObject_CallOneArg(t->miss, header);
}

/* A (name, value) pair's lookups in ``exact`` with its hash made once: a tuple does not keep
 * its hash, and a field entered and later evicted is looked up, entered, looked up and
 * deleted (CPython's own calls with a known hash, where this interpreter has them). */
#if PY_VERSION_HEX < 0x030D0000
#define GET_KNOWN(d, key, hash) _PyDict_GetItem_KnownHash((d), (key), (hash))
#define SET_KNOWN(d, key, value, hash) _PyDict_SetItem_KnownHash((d), (key), (value), (hash))
#define DEL_KNOWN(d, key, hash) _PyDict_DelItem_KnownHash((d), (key), (hash))
#else
#define GET_KNOWN(d, key, hash) PyDict_GetItemWithError((d), (key))
#define SET_KNOWN(d, key, value, hash) PyDict_SetItem((d), (key), (value))
#define DEL_KNOWN(d, key, hash) PyDict_DelItem((d), (key))
#endif

/* del d[key] when d[key] == number (a newer number of the key stays). */
static int
drop_number(PyObject *d, PyObject *key, long long number)
{
    Py_hash_t hash = PyObject_Hash(key);
    if (hash == -1)
        return -1;
    PyObject *found = GET_KNOWN(d, key, hash);
    if (found == NULL)
        return PyErr_Occurred() ? -1 : 0;
    long long k;
    if (as_ll(found, &k) < 0)
        return -1;
    return k == number ? DEL_KNOWN(d, key, hash) : 0;
}

/* The oldest entry (its facts) leaves the table: its size from ``used``, its number (``first``)
 * from the lookups, which hold the live entries only. */
static int
evict(Table *t, PyObject *oldest)
{
    long long size;
    if (!PyTuple_Check(oldest) || PyTuple_GET_SIZE(oldest) != 7 || !PyTuple_Check(PyTuple_GET_ITEM(oldest, 1)) ||
        PyTuple_GET_SIZE(PyTuple_GET_ITEM(oldest, 1)) < 1) {
        PyErr_SetString(PyExc_TypeError, "encode(): a table entry is not a field's facts");
        return -1;
    }
    if (as_ll(PyTuple_GET_ITEM(oldest, 6), &size) < 0)
        return -1;
    t->used -= size;
    PyObject *pair = PyTuple_GET_ITEM(oldest, 1);
    if (drop_number(t->exact, pair, t->first) < 0 || drop_number(t->names, PyTuple_GET_ITEM(pair, 0), t->first) < 0)
        return -1;
    return 0;
}

/* One field of the block, of facts ``info`` (a new reference, consumed). */
static int
size_info(Table *t, PyObject *info)
{
    if (!PyTuple_Check(info) || PyTuple_GET_SIZE(info) != 7) {
        PyErr_SetString(PyExc_TypeError, "encode(): a field's facts are not a 7-tuple");
        goto fail;
    }
    /* static_full, pair, static_name, literal_value, literal_name, sensitive, size: each read
     * when the field's encoding needs it (most fields are indexed: the first two decide) */
    long long static_full, static_name, literal_value, literal_name, size;
    PyObject *pair = PyTuple_GET_ITEM(info, 1);
    if (as_ll(PyTuple_GET_ITEM(info, 0), &static_full) < 0)
        goto fail;
    if (static_full) {
        t->total += static_full; /* indexed field (static table) */
        Py_DECREF(info);
        return 0;
    }
    if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) < 1) {
        PyErr_SetString(PyExc_TypeError, "encode(): a field's pair is not a tuple");
        goto fail;
    }
    long long k;
    Py_hash_t pair_hash = PyObject_Hash(pair);
    if (pair_hash == -1)
        goto fail;
    PyObject *found = GET_KNOWN(t->exact, pair, pair_hash);
    if (found == NULL && PyErr_Occurred())
        goto fail;
    if (found != NULL) {
        if (as_ll(found, &k) < 0)
            goto fail;
        if (k >= t->first) { /* indexed field (dynamic table) */
            long long index = DYNAMIC_FIRST_INDEX + t->inserted - 1 - k;
            t->total += index < 127 ? 1 : integer_len(index, 7);
            Py_DECREF(info);
            return 0;
        }
    }
    if (as_ll(PyTuple_GET_ITEM(info, 2), &static_name) < 0 || as_ll(PyTuple_GET_ITEM(info, 3), &literal_value) < 0 ||
        as_ll(PyTuple_GET_ITEM(info, 4), &literal_name) < 0 || as_ll(PyTuple_GET_ITEM(info, 6), &size) < 0)
        goto fail;
    int sensitive = PyObject_IsTrue(PyTuple_GET_ITEM(info, 5));
    if (sensitive < 0)
        goto fail;
    PyObject *name = PyTuple_GET_ITEM(pair, 0);
    if (static_name) /* indexed name (static table) */
        t->total += static_name + literal_value;
    else {
        found = PyDict_GetItemWithError(t->names, name);
        if (found == NULL && PyErr_Occurred())
            goto fail;
        if (found != NULL && as_ll(found, &k) < 0)
            goto fail;
        if (found != NULL && k >= t->first) /* indexed name (dynamic table) */
            t->total += integer_len(DYNAMIC_FIRST_INDEX + t->inserted - 1 - k, sensitive ? 4 : 6) + literal_value;
        else /* literal name */
            t->total += literal_name + literal_value;
    }
    if (sensitive) {
        Py_DECREF(info);
        return 0;
    }
    /* Entered in the dynamic table (RFC 7541 section 4.4), the oldest evicted past its size. */
    if (size > t->limit) { /* larger than the table: it empties it (no number in the lookups is live) */
        PyObject *r = PyObject_CallMethodNoArgs(t->entries, str_clear);
        if (r == NULL)
            goto fail;
        Py_DECREF(r);
        PyDict_Clear(t->exact);
        PyDict_Clear(t->names);
        t->used = 0;
        t->first = t->inserted;
        Py_DECREF(info);
        return 0;
    }
    PyObject *number = PyLong_FromLongLong(t->inserted);
    if (number == NULL)
        goto fail;
    int rc = SET_KNOWN(t->exact, pair, number, pair_hash);
    if (rc == 0)
        rc = PyDict_SetItem(t->names, name, number);
    Py_DECREF(number);
    if (rc < 0)
        goto fail;
    t->inserted++;
    PyObject *append = bound(t, &t->append, str_append);
    PyObject *r = append == NULL ? NULL : PyObject_CallOneArg(append, info);
    if (r == NULL)
        goto fail;
    Py_DECREF(r);
    t->used += size;
    Py_DECREF(info);
    while (t->used > t->limit) {
        PyObject *popleft = bound(t, &t->popleft, str_popleft);
        PyObject *oldest = popleft == NULL ? NULL : PyObject_CallNoArgs(popleft);
        if (oldest == NULL)
            return -1;
        rc = evict(t, oldest);
        Py_DECREF(oldest);
        if (rc < 0)
            return -1;
        t->first++;
    }
    return 0;
fail:
    Py_DECREF(info);
    return -1;
}

/* _normalized_field(header) for a (bytes, bytes) field whose name h2 normalises alike
 * whatever its value (``blind_names[name]`` True): ((name, value.strip()),), entered in
 * normalized_fields.  NULL without an exception when the name is not known so. */
static PyObject *
blind_normalized(PyObject *header, PyObject *blind_names, PyObject *normalized_fields)
{
    if (PyTuple_GET_SIZE(header) != 2)
        return NULL;
    PyObject *name = PyTuple_GET_ITEM(header, 0), *value = PyTuple_GET_ITEM(header, 1);
    if (!PyBytes_CheckExact(name) || !PyBytes_CheckExact(value))
        return NULL;
    PyObject *blind = PyDict_GetItemWithError(blind_names, name);
    if (blind != Py_True)
        return NULL;
    const unsigned char *v = (const unsigned char *)PyBytes_AS_STRING(value);
    Py_ssize_t a = 0, b = PyBytes_GET_SIZE(value);
    while (a < b && (v[a] == ' ' || (v[a] >= '\t' && v[a] <= '\r'))) /* bytes.strip()'s whitespace */
        a++;
    while (b > a && (v[b - 1] == ' ' || (v[b - 1] >= '\t' && v[b - 1] <= '\r')))
        b--;
    PyObject *field;
    if (a == 0 && b == PyBytes_GET_SIZE(value))
        field = Py_NewRef(header); /* nothing to strip: the field itself */
    else {
        PyObject *stripped = PyBytes_FromStringAndSize((const char *)v + a, b - a);
        field = stripped == NULL ? NULL : PyTuple_Pack(2, name, stripped);
        Py_XDECREF(stripped);
        if (field == NULL)
            return NULL;
    }
    PyObject *fields = PyTuple_Pack(1, field);
    Py_DECREF(field);
    if (fields == NULL)
        return NULL;
    if (PyDict_GET_SIZE(normalized_fields) >= fields_max)
        PyDict_Clear(normalized_fields);
    if (PyDict_SetItem(normalized_fields, header, fields) < 0) {
        Py_DECREF(fields);
        return NULL;
    }
    return fields;
}

/* The facts of the fields h2 makes of ``header`` (a new reference to a tuple of 7-tuples):
 * looked up in h2_facts, else made from the fields (looked up in normalized_fields, or
 * normalize()'s answer) and entered there. */
static PyObject *
h2_facts_of(Table *t, PyObject *header, PyObject *h2_facts, PyObject *normalized_fields, PyObject *normalize,
            PyObject *blind_names)
{
    int plain = PyTuple_CheckExact(header);
    if (plain) {
        PyObject *done = PyDict_GetItemWithError(h2_facts, header);
        if (done != NULL)
            return Py_NewRef(done);
        if (PyErr_Occurred())
            return NULL;
    }
    PyObject *fields = NULL;
    if (plain) {
        fields = PyDict_GetItemWithError(normalized_fields, header);
        if (fields != NULL)
            Py_INCREF(fields);
        else if (PyErr_Occurred())
            return NULL;
    }
    if (fields == NULL && plain && blind_names != NULL)
        fields = blind_normalized(header, blind_names, normalized_fields);
    if (fields == NULL) {
        if (PyErr_Occurred())
            return NULL;
        fields = PyObject_CallOneArg(normalize, header);
        if (fields == NULL)
            return NULL;
    }
    if (!PyTuple_Check(fields)) {
        Py_DECREF(fields);
        PyErr_SetString(PyExc_TypeError, "encode(): a field's normalisation is not a tuple");
        return NULL;
    }
    Py_ssize_t n = PyTuple_GET_SIZE(fields);
    PyObject *facts = PyTuple_New(n);
    if (facts == NULL) {
        Py_DECREF(fields);
        return NULL;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *info = facts_of(t, PyTuple_GET_ITEM(fields, i));
        if (info == NULL) {
            Py_DECREF(fields);
            Py_DECREF(facts);
            return NULL;
        }
        PyTuple_SET_ITEM(facts, i, info);
    }
    Py_DECREF(fields);
    if (plain) {
        if (PyDict_GET_SIZE(h2_facts) >= fields_max)
            PyDict_Clear(h2_facts);
        if (PyDict_SetItem(h2_facts, header, facts) < 0) {
            Py_DECREF(facts);
            return NULL;
        }
    }
    return facts;
}

static PyObject *
encode(PyObject *mod, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 10 && nargs != 14) {
        PyErr_SetString(PyExc_TypeError, "encode() takes 10 or 14 arguments");
        return NULL;
    }
    Table t = {args[1], args[2], args[3], args[4], args[5], 0, 0, 0, 0, 0, NULL, NULL};
    PyObject *headers = args[0];
    PyObject *h2_facts = nargs == 14 ? args[10] : NULL, *normalized_fields = nargs == 14 ? args[11] : NULL;
    PyObject *normalize = nargs == 14 ? args[12] : NULL, *blind_names = nargs == 14 ? args[13] : NULL;
    if (!PyDict_Check(t.plain_fields) || !PyDict_Check(t.exact) || !PyDict_Check(t.names) ||
        (h2_facts != NULL && (!PyDict_Check(h2_facts) || !PyDict_Check(normalized_fields) || !PyDict_Check(blind_names)))) {
        PyErr_SetString(PyExc_TypeError, "encode(): plain_fields, exact, names, h2_facts and normalized_fields must be dicts");
        return NULL;
    }
    if (h2_facts != NULL && static_table == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "encode(): configure() first");
        return NULL;
    }
    if (as_ll(args[6], &t.first) < 0 || as_ll(args[7], &t.inserted) < 0 || as_ll(args[8], &t.used) < 0 ||
        as_ll(args[9], &t.limit) < 0)
        return NULL;
    PyObject *iter = PyObject_GetIter(headers);
    if (iter == NULL)
        return NULL;
    PyObject *header;
    while ((header = PyIter_Next(iter)) != NULL) {
        int rc = 0;
        if (h2_facts == NULL) {
            PyObject *info = facts_of(&t, header);
            rc = info == NULL ? -1 : size_info(&t, info);
        }
        else {
            PyObject *facts = h2_facts_of(&t, header, h2_facts, normalized_fields, normalize, blind_names);
            if (facts == NULL)
                rc = -1;
            else {
                for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(facts) && rc == 0; i++)
                    rc = size_info(&t, Py_NewRef(PyTuple_GET_ITEM(facts, i)));
                Py_DECREF(facts);
            }
        }
        Py_DECREF(header);
        if (rc < 0)
            break;
    }
    Py_DECREF(iter);
    Py_XDECREF(t.append);
    Py_XDECREF(t.popleft);
    if (PyErr_Occurred())
        return NULL;
    PyObject *total = PyLong_FromLongLong(t.total), *first = PyLong_FromLongLong(t.first);
    PyObject *inserted = PyLong_FromLongLong(t.inserted), *used = PyLong_FromLongLong(t.used);
    PyObject *out = total && first && inserted && used ? PyTuple_Pack(4, total, first, inserted, used) : NULL;
    Py_XDECREF(total);
    Py_XDECREF(first);
    Py_XDECREF(inserted);
    Py_XDECREF(used);
    return out;
}

static PyObject *
configure(PyObject *mod, PyObject *args)
{
    PyObject *table, *bits;
    Py_ssize_t max;
    if (!PyArg_ParseTuple(args, "O!O!n", &PyDict_Type, &table, &PyBytes_Type, &bits, &max))
        return NULL;
    if (PyBytes_GET_SIZE(bits) != 256 || max < 1) {
        PyErr_SetString(PyExc_ValueError, "configure(): 256 code lengths and a positive size are needed");
        return NULL;
    }
    memcpy(code_bits, PyBytes_AS_STRING(bits), 256);
    Py_XSETREF(static_table, Py_NewRef(table));
    fields_max = max;
    Py_RETURN_NONE;
}

static PyMethodDef module_methods[] = {
    {"configure", configure, METH_VARARGS,
     "configure(static_table, code_bits, fields_max): hpack's static table, each byte's Huffman code\n"
     "length, the facts memo's size limit; after it encode() makes a (bytes, bytes) field's facts itself."},
    {"encode", (PyCFunction)(void (*)(void))encode, METH_FASTCALL,
     "encode(headers, plain_fields, miss, exact, names, entries, first, inserted, used, limit\n"
     "[, h2_facts, normalized_fields, normalize, blind_names]) -> (bytes, first, inserted, used):\n"
     "HeaderBlockSizer's loop"
     "(see the module docstring)."},
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
