/* The HPACK block sizer's per-field loop and its dynamic table in C:
 * simulator.http._header_sizes.Table.
 *
 * Written by hand.  It is the C twin of HeaderBlockSizer._encode in
 * simulator/http/header_sizes.py, which defines the behaviour (the choices of hpack's
 * encoder, RFC 7541); the Python method stays the reference, and the tests compare the
 * two block by block.  Why C: a page load sizes every request and response block, and
 * the Python loop over a 20,000-resource page's 600,000 fields was the largest single
 * item of the model's own share of its profile; the table is C-owned (a ring and two
 * open-addressing lookups, not the reference's dicts and deque) because keeping it in
 * Python objects cost about as much again in hashing, dict churn and deque calls.
 *
 *   Table(limit).encode(headers, plain_fields, miss[, h2_facts, normalized_fields, normalize,
 *                       blind_names]) -> bytes
 *
 * The table's state is the Table's own (``first``, ``inserted``, ``used``; ``state()`` gives
 * the entries and lookups in the reference's form).  A
 * field's table-independent facts (the 7-tuple ``_remember`` makes) are looked up in
 * ``plain_fields`` for a plain 2-tuple; a (bytes, bytes) one not met before has them made
 * here as ``_remember`` makes them (once ``configure`` has given hpack's static table and
 * Huffman code lengths) and entered there; for any other field ``miss(field)`` (Python)
 * gives them.  With ``h2_facts``, ``normalized_fields`` and ``normalize``, each field of
 * ``headers`` is first replaced by the fields h2 normalises it to (a tuple, looked up in
 * ``normalized_fields`` for a plain tuple, else ``normalize(field)``'s): the block of
 * ``h2_normalized(headers)`` without making that list (HeaderBlockSizer._encode_h2); the
 * facts of a plain tuple's fields are remembered in ``h2_facts`` (one lookup a field), read
 * into a C record (``Fields``: the numbers and hashes, no tuples to walk per block).  On that
 * path a (bytes, bytes) field's facts are made straight into the record, with no 7-tuple and
 * no entry in ``plain_fields`` or ``normalized_fields`` (h2_facts holds the answer: a page's
 * distinct fields, tens of thousands, are not held three times over).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

#define DYNAMIC_FIRST_INDEX 62 /* RFC 7541 section 2.3.3: after the 61 static entries */


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

/* The encoder's dynamic table (RFC 7541 section 2.3.2), owned here: its live entries in a
 * ring, oldest first, each entry's facts (a Field: its pair held, its numbers and hashes made
 * once); and two lookups, (name, value) -> the newest insertion number of a
 * live entry of that pair, name -> the same of that name, as open-addressing tables of
 * borrowed keys (each slot's key is the pair or name of the live entry its number names, so
 * it lives as long as the slot).  HeaderBlockSizer's Python state (dicts and a deque) is the
 * reference; Table.state() gives this one in that form for the tests. */
/* A field's facts in C: the numbers of the 7-tuple ``_remember`` makes (RFC 7541: the bytes of a
 * static full match, 0 for none; of a static name index, 0 for none; of the Huffman-coded value
 * and of the literal name with their lengths; the entry's size, section 4.1), never-indexed,
 * the (name, value) pair (a reference held) and its and its name's hashes. */
typedef struct {
    PyObject *pair; /* a reference held */
    PyObject *name; /* borrowed from pair */
    Py_hash_t pair_hash, name_hash;
    long long static_full, static_name, literal_value, literal_name, size;
    int sensitive;
} Field;

typedef struct {
    PyObject *key; /* NULL: an empty slot */
    Py_hash_t hash;
    long long number;
} Slot;

typedef struct {
    PyObject_HEAD
    Field *ring; /* entry number n at ring[n % cap] */
    long long cap;
    Slot *exact, *names;
    size_t mask; /* both lookups' size less one (a power of two, at least 1.5 cap) */
    long long first, inserted, used, limit;
} TableObject;

/* The slot of ``key`` in a lookup, or -1 when it has none; -2 with an exception. */
static Py_ssize_t
map_find(const TableObject *tb, const Slot *m, PyObject *key, Py_hash_t hash)
{
    size_t i = (size_t)hash & tb->mask;
    for (;;) {
        const Slot *s = &m[i];
        if (s->key == NULL)
            return -1;
        if (s->hash == hash) {
            if (s->key == key)
                return (Py_ssize_t)i;
            int eq = PyObject_RichCompareBool(s->key, key, Py_EQ);
            if (eq < 0)
                return -2;
            if (eq)
                return (Py_ssize_t)i;
        }
        i = (i + 1) & tb->mask;
    }
}

/* m[key] = number, the slot's key now ``key`` (the newer entry's own). */
static int
map_set(TableObject *tb, Slot *m, PyObject *key, Py_hash_t hash, long long number)
{
    Py_ssize_t i = map_find(tb, m, key, hash);
    if (i == -2)
        return -1;
    if (i < 0) {
        size_t j = (size_t)hash & tb->mask;
        while (m[j].key != NULL)
            j = (j + 1) & tb->mask;
        i = (Py_ssize_t)j;
        m[i].hash = hash;
    }
    m[i].key = key;
    m[i].number = number;
    return 0;
}

/* del m[key] when m[key] == number (a newer number of the key stays); the slots after it
 * shifted back (linear probing's deletion, no tombstones). */
static int
map_drop(TableObject *tb, Slot *m, PyObject *key, Py_hash_t hash, long long number)
{
    Py_ssize_t found = map_find(tb, m, key, hash);
    if (found == -2)
        return -1;
    if (found < 0 || m[found].number != number)
        return 0;
    size_t i = (size_t)found, j = i, mask = tb->mask;
    for (;;) {
        j = (j + 1) & mask;
        if (m[j].key == NULL)
            break;
        size_t home = (size_t)m[j].hash & mask;
        if (((j - home) & mask) >= ((j - i) & mask)) { /* i lies between its home and j: it moves up */
            m[i] = m[j];
            i = j;
        }
    }
    m[i].key = NULL;
    return 0;
}

/* Every entry out (a field larger than the table, RFC 7541 section 4.4; or the table's end). */
static void
table_empty(TableObject *tb)
{
    for (long long n = tb->first; n < tb->inserted; n++)
        Py_CLEAR(tb->ring[n % tb->cap].pair);
    for (size_t i = 0; i <= tb->mask; i++)
        tb->exact[i].key = tb->names[i].key = NULL;
    tb->used = 0;
    tb->first = tb->inserted;
}

static PyObject *
Table_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    long long limit;
    static char *kwlist[] = {"limit", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "L", kwlist, &limit))
        return NULL;
    if (limit < 0 || limit > (1LL << 30)) {
        PyErr_SetString(PyExc_ValueError, "Table(): the limit must be 0 to 2**30 bytes");
        return NULL;
    }
    TableObject *tb = (TableObject *)type->tp_alloc(type, 0);
    if (tb == NULL)
        return NULL;
    tb->cap = limit / 32 + 1; /* every entry is at least 32 bytes (section 4.1): the live ones fit */
    size_t size = 8;
    while (size < (size_t)tb->cap + (size_t)tb->cap / 2) /* at most two thirds full */
        size <<= 1;
    tb->mask = size - 1;
    tb->limit = limit;
    tb->ring = PyMem_Calloc((size_t)tb->cap, sizeof(Field));
    tb->exact = PyMem_Calloc(size, sizeof(Slot));
    tb->names = PyMem_Calloc(size, sizeof(Slot));
    if (tb->ring == NULL || tb->exact == NULL || tb->names == NULL) {
        Py_DECREF(tb);
        return PyErr_NoMemory();
    }
    return (PyObject *)tb;
}

static void
Table_dealloc(TableObject *tb)
{
    if (tb->ring != NULL)
        for (long long n = tb->first; n < tb->inserted; n++)
            Py_CLEAR(tb->ring[n % tb->cap].pair);
    PyMem_Free(tb->ring);
    PyMem_Free(tb->exact);
    PyMem_Free(tb->names);
    Py_TYPE(tb)->tp_free((PyObject *)tb);
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

/* The static table's part of a (bytes, bytes) field's facts, never-indexed or not: the bytes of
 * a full match (RFC 7541 section 6.1; 0: none) and of the name's index with a 6-bit prefix
 * (section 6.2.1; 0: none). */
static int
plain_numbers(PyObject *name, PyObject *value, long long *static_full, long long *static_name)
{
    *static_full = *static_name = 0;
    PyObject *in_static = PyDict_GetItemWithError(static_table, name);
    if (in_static == NULL && PyErr_Occurred())
        return -1;
    if (in_static != NULL) {
        if (!PyTuple_Check(in_static) || PyTuple_GET_SIZE(in_static) != 2) {
            PyErr_SetString(PyExc_TypeError, "encode(): a static table entry is not a pair");
            return -1;
        }
        long long first_index, index;
        if (as_ll(PyTuple_GET_ITEM(in_static, 0), &first_index) < 0)
            return -1;
        PyObject *found = PyObject_GetItem(PyTuple_GET_ITEM(in_static, 1), value);
        if (found == NULL) {
            if (!PyErr_ExceptionMatches(PyExc_KeyError))
                return -1;
            PyErr_Clear();
        }
        else {
            int rc = as_ll(found, &index);
            Py_DECREF(found);
            if (rc < 0)
                return -1;
            *static_full = integer_len(index, 7); /* RFC 7541 section 6.1 */
        }
        *static_name = integer_len(first_index, 6); /* section 6.2.1 */
    }
    return 0;
}

/* _remember(plain_fields, header, name, value, False) for a (bytes, bytes) field: its facts
 * (a new reference), entered in plain_fields. */
static PyObject *
remember_plain(PyObject *plain_fields, PyObject *header)
{
    PyObject *name = PyTuple_GET_ITEM(header, 0), *value = PyTuple_GET_ITEM(header, 1);
    long long static_full = 0, static_name = 0;
    if (plain_numbers(name, value, &static_full, &static_name) < 0)
        return NULL;
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
facts_of(PyObject *plain_fields, PyObject *miss, PyObject *header)
{
    if (PyTuple_CheckExact(header) && PyTuple_GET_SIZE(header) == 2) {
        PyObject *info = PyDict_GetItemWithError(plain_fields, header);
        if (info != NULL)
            return Py_NewRef(info);
        if (PyErr_Occurred())
            return NULL;
        if (static_table != NULL && PyBytes_CheckExact(PyTuple_GET_ITEM(header, 0)) &&
            PyBytes_CheckExact(PyTuple_GET_ITEM(header, 1)))
            return remember_plain(plain_fields, header);
    }
    return PyObject_CallOneArg(miss, header);
}

/* ``info`` (a field's facts, a 7-tuple) read into *f (its pair held: the caller drops it); -1
 * with an exception when malformed. */
static int
read_field(PyObject *info, Field *f)
{
    if (!PyTuple_Check(info) || PyTuple_GET_SIZE(info) != 7) {
        PyErr_SetString(PyExc_TypeError, "encode(): a field's facts are not a 7-tuple");
        return -1;
    }
    /* static_full, pair, static_name, literal_value, literal_name, sensitive, size */
    PyObject *pair = PyTuple_GET_ITEM(info, 1);
    if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) < 1) {
        PyErr_SetString(PyExc_TypeError, "encode(): a field's pair is not a tuple");
        return -1;
    }
    if (as_ll(PyTuple_GET_ITEM(info, 0), &f->static_full) < 0 || as_ll(PyTuple_GET_ITEM(info, 2), &f->static_name) < 0 ||
        as_ll(PyTuple_GET_ITEM(info, 3), &f->literal_value) < 0 || as_ll(PyTuple_GET_ITEM(info, 4), &f->literal_name) < 0 ||
        as_ll(PyTuple_GET_ITEM(info, 6), &f->size) < 0)
        return -1;
    f->sensitive = PyObject_IsTrue(PyTuple_GET_ITEM(info, 5));
    if (f->sensitive < 0)
        return -1;
    f->pair_hash = PyObject_Hash(pair);
    if (f->pair_hash == -1)
        return -1;
    f->name_hash = PyObject_Hash(PyTuple_GET_ITEM(pair, 0));
    if (f->name_hash == -1)
        return -1;
    f->pair = Py_NewRef(pair);
    f->name = PyTuple_GET_ITEM(pair, 0);
    return 0;
}

/* _remember's facts of a plain (bytes, bytes) ``field`` (not never-indexed) made straight into
 * *f, the field itself its pair (held): no 7-tuple, nothing entered in plain_fields (h2's path:
 * h2_facts keeps the answer). */
static int
direct_field(PyObject *field, Field *f)
{
    PyObject *name = PyTuple_GET_ITEM(field, 0), *value = PyTuple_GET_ITEM(field, 1);
    if (plain_numbers(name, value, &f->static_full, &f->static_name) < 0)
        return -1;
    long long value_bytes = huffman_bytes(value), name_bytes = huffman_bytes(name);
    f->literal_value = integer_len(value_bytes, 7) + value_bytes; /* section 5.2 */
    f->literal_name = 1 + integer_len(name_bytes, 7) + name_bytes;
    f->size = 32 + (long long)PyBytes_GET_SIZE(name) + (long long)PyBytes_GET_SIZE(value); /* section 4.1 */
    f->sensitive = 0;
    f->pair_hash = PyObject_Hash(field);
    if (f->pair_hash == -1)
        return -1;
    f->name_hash = PyObject_Hash(name);
    if (f->name_hash == -1)
        return -1;
    f->pair = Py_NewRef(field);
    f->name = name;
    return 0;
}

/* Whether ``field`` is a plain (bytes, bytes) 2-tuple. */
static int
bytes_pair(PyObject *field)
{
    return PyTuple_CheckExact(field) && PyTuple_GET_SIZE(field) == 2 && PyBytes_CheckExact(PyTuple_GET_ITEM(field, 0)) &&
           PyBytes_CheckExact(PyTuple_GET_ITEM(field, 1));
}

/* A field's 7-tuple made again from its Field (Table.state()'s entries). */
static PyObject *
field_info(const Field *f)
{
    return Py_BuildValue("(LOLLLOL)", f->static_full, f->pair, f->static_name, f->literal_value, f->literal_name,
                         f->sensitive ? Py_True : Py_False, f->size);
}

/* The fields h2 normalises one field to, read (h2_facts's values): a block's field costs one
 * dict lookup and this record, not a walk through tuples and ints (the records of a page's
 * fields are many; each step through memory not in the cache is the cost). */
typedef struct {
    PyObject_VAR_HEAD
    Field fields[1];
} FieldsObject;

static void
Fields_dealloc(FieldsObject *self)
{
    for (Py_ssize_t i = 0; i < Py_SIZE(self); i++)
        Py_XDECREF(self->fields[i].pair);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyTypeObject FieldsType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "simulator.http._header_sizes.Fields",
    .tp_basicsize = offsetof(FieldsObject, fields),
    .tp_itemsize = sizeof(Field),
    .tp_dealloc = (destructor)Fields_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "The facts of the fields h2 normalises one field to, read into C (encode()'s memo).",
};

/* One field of the block: its bytes added to *total, the table updated as hpack's encoder
 * updates its own. */
static int
size_field(TableObject *tb, long long *total, const Field *f)
{
    if (f->static_full) {
        *total += f->static_full; /* indexed field (static table) */
        return 0;
    }
    Py_ssize_t at = map_find(tb, tb->exact, f->pair, f->pair_hash);
    if (at == -2)
        return -1;
    if (at >= 0 && tb->exact[at].number >= tb->first) { /* indexed field (dynamic table) */
        long long index = DYNAMIC_FIRST_INDEX + tb->inserted - 1 - tb->exact[at].number;
        *total += index < 127 ? 1 : integer_len(index, 7);
        return 0;
    }
    if (f->static_name) /* indexed name (static table) */
        *total += f->static_name + f->literal_value;
    else {
        at = map_find(tb, tb->names, f->name, f->name_hash);
        if (at == -2)
            return -1;
        if (at >= 0 && tb->names[at].number >= tb->first) /* indexed name (dynamic table) */
            *total += integer_len(DYNAMIC_FIRST_INDEX + tb->inserted - 1 - tb->names[at].number, f->sensitive ? 4 : 6) +
                      f->literal_value;
        else /* literal name */
            *total += f->literal_name + f->literal_value;
    }
    if (f->sensitive)
        return 0;
    /* Entered in the dynamic table (RFC 7541 section 4.4), the oldest evicted past its size. */
    if (f->size > tb->limit) { /* larger than the table: it empties it */
        table_empty(tb);
        return 0;
    }
    if (f->size < 32) { /* section 4.1: 32 bytes of overhead an entry; the ring counts on it */
        PyErr_SetString(PyExc_ValueError, "encode(): a field's entry size is under 32");
        return -1;
    }
    Field *e = &tb->ring[tb->inserted % tb->cap];
    if (map_set(tb, tb->exact, f->pair, f->pair_hash, tb->inserted) < 0 ||
        map_set(tb, tb->names, f->name, f->name_hash, tb->inserted) < 0)
        return -1;
    *e = *f;
    Py_INCREF(e->pair);
    tb->inserted++;
    tb->used += f->size;
    while (tb->used > tb->limit) {
        Field *oldest = &tb->ring[tb->first % tb->cap];
        tb->used -= oldest->size;
        /* Its number leaves the lookups (a newer one of its pair or name stays): they hold
         * the live entries only, a table's worth. */
        if (map_drop(tb, tb->exact, oldest->pair, oldest->pair_hash, tb->first) < 0 ||
            map_drop(tb, tb->names, oldest->name, oldest->name_hash, tb->first) < 0)
            return -1;
        Py_CLEAR(oldest->pair);
        tb->first++;
    }
    return 0;
}

/* _normalized_field(header) for a (bytes, bytes) field whose name h2 normalises alike
 * whatever its value (``blind_names[name]`` True): ((name, value.strip()),).  NULL without an
 * exception when the name is not known so. */
static PyObject *
blind_normalized(PyObject *header, PyObject *blind_names)
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
    return fields; /* not entered in normalized_fields: h2_facts keeps what is made of it */
}

/* The facts of the fields h2 makes of ``header`` (a new reference to a Fields record):
 * looked up in h2_facts, else made from the fields (looked up in normalized_fields, or
 * normalize()'s answer) and entered there. */
static PyObject *
h2_facts_of(PyObject *plain_fields, PyObject *miss, PyObject *header, PyObject *h2_facts, PyObject *normalized_fields, PyObject *normalize,
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
        fields = blind_normalized(header, blind_names);
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
    FieldsObject *facts = PyObject_NewVar(FieldsObject, &FieldsType, n);
    if (facts == NULL) {
        Py_DECREF(fields);
        return NULL;
    }
    for (Py_ssize_t i = 0; i < n; i++)
        facts->fields[i].pair = NULL; /* set by read_field or direct_field once a field is read */
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *field = PyTuple_GET_ITEM(fields, i);
        int rc;
        if (bytes_pair(field) && static_table != NULL)
            rc = direct_field(field, &facts->fields[i]);
        else {
            PyObject *info = facts_of(plain_fields, miss, field);
            rc = info == NULL ? -1 : read_field(info, &facts->fields[i]);
            Py_XDECREF(info);
        }
        if (rc < 0) {
            Py_DECREF(fields);
            Py_DECREF(facts);
            return NULL;
        }
    }
    Py_DECREF(fields);
    if (plain) {
        if (PyDict_GET_SIZE(h2_facts) >= fields_max)
            PyDict_Clear(h2_facts);
        if (PyDict_SetItem(h2_facts, header, (PyObject *)facts) < 0) {
            Py_DECREF(facts);
            return NULL;
        }
    }
    return (PyObject *)facts;
}

static PyObject *
Table_encode(TableObject *tb, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3 && nargs != 7) {
        PyErr_SetString(PyExc_TypeError, "encode() takes 3 or 7 arguments");
        return NULL;
    }
    PyObject *headers = args[0], *plain_fields = args[1], *miss = args[2];
    PyObject *h2_facts = nargs == 7 ? args[3] : NULL, *normalized_fields = nargs == 7 ? args[4] : NULL;
    PyObject *normalize = nargs == 7 ? args[5] : NULL, *blind_names = nargs == 7 ? args[6] : NULL;
    if (!PyDict_Check(plain_fields) ||
        (h2_facts != NULL && (!PyDict_Check(h2_facts) || !PyDict_Check(normalized_fields) || !PyDict_Check(blind_names)))) {
        PyErr_SetString(PyExc_TypeError, "encode(): plain_fields, h2_facts, normalized_fields and blind_names must be dicts");
        return NULL;
    }
    if (h2_facts != NULL && static_table == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "encode(): configure() first");
        return NULL;
    }
    long long total = 0;
    PyObject *iter = PyObject_GetIter(headers);
    if (iter == NULL)
        return NULL;
    PyObject *header;
    while ((header = PyIter_Next(iter)) != NULL) {
        int rc = 0;
        if (h2_facts == NULL) {
            PyObject *info = facts_of(plain_fields, miss, header);
            Field f;
            if (info == NULL || read_field(info, &f) < 0)
                rc = -1;
            else {
                rc = size_field(tb, &total, &f);
                Py_DECREF(f.pair); /* read_field's: the table holds its own */
            }
            Py_XDECREF(info);
        }
        else {
            PyObject *facts = h2_facts_of(plain_fields, miss, header, h2_facts, normalized_fields, normalize, blind_names);
            if (facts == NULL)
                rc = -1;
            else if (Py_TYPE(facts) != &FieldsType) {
                PyErr_SetString(PyExc_TypeError, "encode(): an h2_facts value is not a Fields record");
                rc = -1;
            }
            else {
                const FieldsObject *rec = (const FieldsObject *)facts;
                for (Py_ssize_t i = 0; i < Py_SIZE(rec) && rc == 0; i++)
                    rc = size_field(tb, &total, &rec->fields[i]);
            }
            Py_XDECREF(facts);
        }
        Py_DECREF(header);
        if (rc < 0)
            break;
    }
    Py_DECREF(iter);
    if (PyErr_Occurred())
        return NULL;
    return PyLong_FromLongLong(total);
}

/* The table in HeaderBlockSizer's Python form: (entries' facts oldest first, {pair: number},
 * {name: number}), for the tests against the reference. */
static PyObject *
Table_state(TableObject *tb, PyObject *unused)
{
    PyObject *entries = PyList_New(0), *exact = PyDict_New(), *names = PyDict_New();
    if (entries == NULL || exact == NULL || names == NULL)
        goto fail;
    for (long long n = tb->first; n < tb->inserted; n++) {
        PyObject *info = field_info(&tb->ring[n % tb->cap]);
        int rc = info == NULL ? -1 : PyList_Append(entries, info);
        Py_XDECREF(info);
        if (rc < 0)
            goto fail;
    }
    for (size_t i = 0; i <= tb->mask; i++) {
        Slot *pairs[2] = {&tb->exact[i], &tb->names[i]};
        PyObject *dicts[2] = {exact, names};
        for (int d = 0; d < 2; d++) {
            if (pairs[d]->key == NULL)
                continue;
            PyObject *number = PyLong_FromLongLong(pairs[d]->number);
            int rc = number == NULL ? -1 : PyDict_SetItem(dicts[d], pairs[d]->key, number);
            Py_XDECREF(number);
            if (rc < 0)
                goto fail;
        }
    }
    PyObject *out = PyTuple_Pack(3, entries, exact, names);
    Py_DECREF(entries);
    Py_DECREF(exact);
    Py_DECREF(names);
    return out;
fail:
    Py_XDECREF(entries);
    Py_XDECREF(exact);
    Py_XDECREF(names);
    return NULL;
}

static PyMethodDef Table_methods[] = {
    {"encode", (PyCFunction)(void (*)(void))Table_encode, METH_FASTCALL,
     "encode(headers, plain_fields, miss[, h2_facts, normalized_fields, normalize, blind_names]) -> bytes:\n"
     "the block's size, the table updated (see the module docstring)."},
    {"state", (PyCFunction)Table_state, METH_NOARGS,
     "state() -> (entries' facts oldest first, {(name, value): number}, {name: number})."},
    {NULL, NULL, 0, NULL},
};

static PyMemberDef Table_members[] = {
    {"first", T_LONGLONG, offsetof(TableObject, first), READONLY, "the oldest live entry's insertion number"},
    {"inserted", T_LONGLONG, offsetof(TableObject, inserted), READONLY, "insertions so far"},
    {"used", T_LONGLONG, offsetof(TableObject, used), READONLY, "the live entries' size (RFC 7541 section 4.1)"},
    {"limit", T_LONGLONG, offsetof(TableObject, limit), READONLY, "the table's maximum size"},
    {NULL, 0, 0, 0, NULL},
};

static PyTypeObject TableType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "simulator.http._header_sizes.Table",
    .tp_basicsize = sizeof(TableObject),
    .tp_dealloc = (destructor)Table_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Table(limit): an HPACK encoder's dynamic table and its block sizing loop.",
    .tp_methods = Table_methods,
    .tp_members = Table_members,
    .tp_new = Table_new,
};

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
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    "simulator.http._header_sizes",
    "HeaderBlockSizer._encode's per-field loop and dynamic table in C (the C twin of simulator/http/header_sizes.py's).",
    -1,
    module_methods,
};

PyMODINIT_FUNC
PyInit__header_sizes(void)
{
    if (PyType_Ready(&TableType) < 0 || PyType_Ready(&FieldsType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module_def);
    if (m != NULL && (PyModule_AddStringConstant(m, "IMPLEMENTATION", "c") < 0 ||
                      PyModule_AddObjectRef(m, "Table", (PyObject *)&TableType) < 0)) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
