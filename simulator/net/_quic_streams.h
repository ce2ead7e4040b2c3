/* SendStream and RecvStream (net/quic/stream.py) as C types, for the C twin's endpoints.
 * Written by hand; included by _quic.c after attr_long / set_long / fast_getattr.
 *
 * The same records as the reference's (RFC 9000 section 2: what a sender wrote and the peer
 * acknowledged, section 13.3: kept until acknowledged; what a receiver holds out of order), with
 * the same attribute names and methods, so the Python around them (opening a stream, a stream's
 * first write, the reference's paths the native endpoint still takes) reads and writes them as it
 * does stream.py's.  The core reads their fields in place instead of through an attribute lookup
 * and an int object per read and write; on any other object (stream.py's classes) it goes through
 * the attributes, as before.  buf, later and acked are read-only: always the bytearray, deque and
 * RangeSet the core's fast paths expect. */
#ifndef WORKBENCH_QUIC_STREAMS_H
#define WORKBENCH_QUIC_STREAMS_H

typedef struct {
    PyObject_HEAD
    PyObject *stream_id;
    PyObject *buf;              /* bytearray: the stream from buf_offset on, as far as packets read */
    PyObject *later;            /* deque of writes not yet read by a packet (bytes / memoryview) */
    PyObject *acked;            /* RangeSet of acknowledged byte ranges */
    long long buf_offset, later_bytes, fin_offset, acked_prefix;
    char fin, fin_acked;
    /* Writes a packet read whole (stream_data's usual case), kept by reference after buf
     * instead of copied into it: the stream's bytes from buf_offset on are buf's, then these
     * (pend[pend_head .. pend_head + pend_len), pend_bytes in all).  Copied into buf only when
     * something reads buf itself (its attribute, a retransmission, a split packet, an
     * acknowledgement ending inside one); most are acknowledged whole first and let go
     * uncopied (RFC 9000 section 13.3: acknowledged data is not sent again). */
    PyObject **pend;
    Py_ssize_t pend_head, pend_len, pend_cap;
    long long pend_bytes;
} SendStreamObject;

typedef struct {
    PyObject_HEAD
    PyObject *heap;             /* out-of-order (offset, data), a heapq list */
    long long delivered, fin_offset, heap_bytes;
    char finished;
} RecvStreamObject;

static PyTypeObject SendStreamType, RecvStreamType;

#define IS_SS(o) Py_IS_TYPE((o), &SendStreamType)
#define IS_RS(o) Py_IS_TYPE((o), &RecvStreamType)
#define SS(o) ((SendStreamObject *)(o))
#define RS(o) ((RecvStreamObject *)(o))
/* A field of a SendStream (SS_) or RecvStream (RS_): in place on the C type, else its attribute. */
#define SS_LONG(o, f, out) (IS_SS(o) ? (*(out) = SS(o)->f, 0) : attr_long((o), str_##f, (out)))
#define SS_SET(o, f, v) (IS_SS(o) ? (SS(o)->f = (v), 0) : set_long((o), str_##f, (v)))
#define SS_ADD(o, f, d) (IS_SS(o) ? (SS(o)->f += (d), 0) : add_long((o), str_##f, (d)))
#define SS_BOOL(o, f) (IS_SS(o) ? (int)SS(o)->f : attr_truthy((o), str_##f))
#define SS_SET_TRUE(o, f) (IS_SS(o) ? (SS(o)->f = 1, 0) : fast_setattr((o), str_##f, Py_True))
#define SS_OBJ(o, f) (IS_SS(o) && SS(o)->f != NULL ? Py_NewRef(SS(o)->f) : fast_getattr((o), str_##f))
#define RS_LONG(o, f, out) (IS_RS(o) ? (*(out) = RS(o)->f, 0) : attr_long((o), str_##f, (out)))
#define RS_SET(o, f, v) (IS_RS(o) ? (RS(o)->f = (v), 0) : set_long((o), str_##f, (v)))
#define RS_ADD(o, f, d) (IS_RS(o) ? (RS(o)->f += (d), 0) : add_long((o), str_##f, (d)))
#define RS_BOOL(o, f) (IS_RS(o) ? (int)RS(o)->f : attr_truthy((o), str_##f))
#define RS_SET_TRUE(o, f) (IS_RS(o) ? (RS(o)->f = 1, 0) : fast_setattr((o), str_##f, Py_True))
#define RS_OBJ(o, f) (IS_RS(o) && RS(o)->f != NULL ? Py_NewRef(RS(o)->f) : fast_getattr((o), str_##f))

/* Defined in _quic.c below: the core's own stream steps, which the methods share. */
static int stream_written(PyObject *stream, long long *out);
static int stream_append(PyObject *stream, PyObject *data, Py_ssize_t n);
static PyObject *stream_data(PyObject *stream, long long offset, long long length);
static int buf_drop_front(PyObject *buf, Py_ssize_t drop, int done);
static int buf_append(PyObject *buf, const char *data, Py_ssize_t n);

/* A write read whole by a packet (exact bytes), kept after buf. */
static int
ss_pend_push(SendStreamObject *s, PyObject *chunk)
{
    if (s->pend_head + s->pend_len == s->pend_cap) {
        if (s->pend_head > 0) {
            memmove(s->pend, s->pend + s->pend_head, (size_t)s->pend_len * sizeof(PyObject *));
            s->pend_head = 0;
        }
        else {
            Py_ssize_t cap = s->pend_cap ? 2 * s->pend_cap : 16;
            PyObject **grown = PyMem_Realloc(s->pend, (size_t)cap * sizeof(PyObject *));
            if (grown == NULL) {
                PyErr_NoMemory();
                return -1;
            }
            s->pend = grown;
            s->pend_cap = cap;
        }
    }
    s->pend[s->pend_head + s->pend_len++] = Py_NewRef(chunk);
    s->pend_bytes += PyBytes_GET_SIZE(chunk);
    return 0;
}

/* The front pending write let go (its bytes copied on, or acknowledged). */
static void
ss_pend_pop(SendStreamObject *s)
{
    PyObject *chunk = s->pend[s->pend_head];
    s->pend_bytes -= PyBytes_GET_SIZE(chunk);
    s->pend_head++;
    if (--s->pend_len == 0)
        s->pend_head = 0;
    Py_DECREF(chunk);
}

/* The pending writes copied into buf, in order: buf holds the stream's bytes from buf_offset
 * on, as the reference's does. */
static int
ss_materialize(SendStreamObject *s)
{
    while (s->pend_len > 0) {
        PyObject *chunk = s->pend[s->pend_head];
        if (buf_append(s->buf, PyBytes_AS_STRING(chunk), PyBytes_GET_SIZE(chunk)) < 0)
            return -1;
        ss_pend_pop(s);
    }
    return 0;
}

static void
ss_pend_release(SendStreamObject *s)
{
    while (s->pend_len > 0)
        ss_pend_pop(s);
}

/* del buf[:drop] on the stream's held bytes (buf, then the pending writes): whole pending
 * writes let go uncopied, one an acknowledgement ends inside copied from there on. */
static int
ss_drop_front(SendStreamObject *s, long long drop, int done)
{
    Py_ssize_t held = PyByteArray_GET_SIZE(s->buf);
    if (drop <= held || s->pend_len == 0)
        return buf_drop_front(s->buf, (Py_ssize_t)drop, done);
    if (buf_drop_front(s->buf, held, done) < 0)
        return -1;
    long long rem = drop - held;
    while (s->pend_len > 0 && PyBytes_GET_SIZE(s->pend[s->pend_head]) <= rem) {
        rem -= PyBytes_GET_SIZE(s->pend[s->pend_head]);
        ss_pend_pop(s);
    }
    if (rem > 0 && s->pend_len > 0) {
        PyObject *chunk = s->pend[s->pend_head];
        if (buf_append(s->buf, PyBytes_AS_STRING(chunk) + rem, PyBytes_GET_SIZE(chunk) - (Py_ssize_t)rem) < 0)
            return -1;
        ss_pend_pop(s);
    }
    return 0;
}

static PyObject *rangeset_class;   /* net.quic.rangeset.RangeSet, imported at the first SendStream */

static int
SendStream_init(SendStreamObject *s, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"stream_id", NULL};
    PyObject *sid;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O:SendStream", kwlist, &sid))
        return -1;
    if (rangeset_class == NULL) {
        PyObject *mod = PyImport_ImportModule("simulator.net.quic.rangeset");
        if (mod == NULL)
            return -1;
        rangeset_class = PyObject_GetAttrString(mod, "RangeSet");
        Py_DECREF(mod);
        if (rangeset_class == NULL)
            return -1;
    }
    PyObject *buf = PyByteArray_FromStringAndSize(NULL, 0);
    PyObject *later = buf == NULL ? NULL : PyObject_CallNoArgs(deque_type);
    PyObject *acked = later == NULL ? NULL : PyObject_CallNoArgs(rangeset_class);
    if (acked == NULL) {
        Py_XDECREF(buf);
        Py_XDECREF(later);
        return -1;
    }
    Py_XSETREF(s->stream_id, Py_NewRef(sid));
    Py_XSETREF(s->buf, buf);
    Py_XSETREF(s->later, later);
    Py_XSETREF(s->acked, acked);
    ss_pend_release(s);
    s->buf_offset = s->later_bytes = s->acked_prefix = 0;
    s->fin_offset = -1;
    s->fin = s->fin_acked = 0;
    return 0;
}

static int
SendStream_traverse(SendStreamObject *s, visitproc visit, void *arg)
{
    Py_VISIT(s->stream_id);
    Py_VISIT(s->buf);
    Py_VISIT(s->later);
    Py_VISIT(s->acked);
    for (Py_ssize_t i = 0; i < s->pend_len; i++)
        Py_VISIT(s->pend[s->pend_head + i]);
    return 0;
}

static int
SendStream_clear(SendStreamObject *s)
{
    Py_CLEAR(s->stream_id);
    Py_CLEAR(s->buf);
    Py_CLEAR(s->later);
    Py_CLEAR(s->acked);
    ss_pend_release(s);
    return 0;
}

static void
SendStream_dealloc(SendStreamObject *s)
{
    PyObject_GC_UnTrack(s);
    SendStream_clear(s);
    PyMem_Free(s->pend);
    Py_TYPE(s)->tp_free((PyObject *)s);
}

/* The methods need the fields the core's fast paths read: a SendStream made by tp_new alone
 * (its __init__ not run) has none. */
static int
send_stream_ready(SendStreamObject *s)
{
    if (s->buf == NULL || s->later == NULL || s->acked == NULL) {
        PyErr_SetString(PyExc_AttributeError, "SendStream.__init__ was not run");
        return -1;
    }
    return 0;
}

static PyObject *
SendStream_get_written(SendStreamObject *s, void *closure)
{
    long long n;
    if (send_stream_ready(s) < 0 || stream_written((PyObject *)s, &n) < 0)
        return NULL;
    return PyLong_FromLongLong(n);
}

static PyObject *
SendStream_append(SendStreamObject *s, PyObject *data)
{
    if (send_stream_ready(s) < 0)
        return NULL;
    int truthy = PyObject_IsTrue(data);          /* `if data:` as the reference */
    if (truthy < 0)
        return NULL;
    if (truthy) {
        Py_ssize_t n = PyObject_Length(data);
        if (n < 0 || stream_append((PyObject *)s, data, n) < 0)
            return NULL;
    }
    Py_RETURN_NONE;
}

static PyObject *
SendStream_data(SendStreamObject *s, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "data(offset, length)");
        return NULL;
    }
    long long offset = PyLong_AsLongLong(args[0]), length = PyLong_AsLongLong(args[1]);
    if (PyErr_Occurred() || send_stream_ready(s) < 0)
        return NULL;
    return stream_data((PyObject *)s, offset, length);
}

static PyObject *
SendStream_drop_acked(SendStreamObject *s, PyObject *unused)
{
    if (send_stream_ready(s) < 0)
        return NULL;
    long long drop = s->acked_prefix - s->buf_offset;
    if (drop > 0) {
        if (ss_drop_front(s, drop, s->fin && s->acked_prefix >= s->fin_offset) < 0)
            return NULL;
        s->buf_offset = s->acked_prefix;
    }
    Py_RETURN_NONE;
}

static PyMethodDef SendStream_methods[] = {
    {"append", (PyCFunction)SendStream_append, METH_O, "A write of data (immutable), kept by reference."},
    {"data", (PyCFunction)(void (*)(void))SendStream_data, METH_FASTCALL,
     "length bytes of the stream from offset (not yet acknowledged)."},
    {"drop_acked", (PyCFunction)SendStream_drop_acked, METH_NOARGS, "Let go of the acknowledged prefix."},
    {NULL},
};

/* buf: the stream's bytes from buf_offset on, as far as packets read (the pending writes
 * copied in first). */
static PyObject *
SendStream_get_buf(SendStreamObject *s, void *closure)
{
    if (send_stream_ready(s) < 0 || ss_materialize(s) < 0)
        return NULL;
    return Py_NewRef(s->buf);
}

static PyGetSetDef SendStream_getset[] = {
    {"written", (getter)SendStream_get_written, NULL, "Bytes written on the stream so far.", NULL},
    {"buf", (getter)SendStream_get_buf, NULL, "The stream's bytes from buf_offset on, as far as packets read.", NULL},
    {NULL},
};

static PyMemberDef SendStream_members[] = {
    {"stream_id", T_OBJECT_EX, offsetof(SendStreamObject, stream_id), 0, NULL},
    {"buf_offset", T_LONGLONG, offsetof(SendStreamObject, buf_offset), 0, NULL},
    {"later", T_OBJECT_EX, offsetof(SendStreamObject, later), READONLY, NULL},
    {"later_bytes", T_LONGLONG, offsetof(SendStreamObject, later_bytes), 0, NULL},
    {"fin", T_BOOL, offsetof(SendStreamObject, fin), 0, NULL},
    {"fin_offset", T_LONGLONG, offsetof(SendStreamObject, fin_offset), 0, NULL},
    {"acked", T_OBJECT_EX, offsetof(SendStreamObject, acked), READONLY, NULL},
    {"acked_prefix", T_LONGLONG, offsetof(SendStreamObject, acked_prefix), 0, NULL},
    {"fin_acked", T_BOOL, offsetof(SendStreamObject, fin_acked), 0, NULL},
    {NULL},
};

static PyTypeObject SendStreamType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "simulator.net._quic.SendStream",
    .tp_doc = "net.quic.stream.SendStream with its fields in C (the C twin's streams).",
    .tp_basicsize = sizeof(SendStreamObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)SendStream_init,
    .tp_traverse = (traverseproc)SendStream_traverse,
    .tp_clear = (inquiry)SendStream_clear,
    .tp_dealloc = (destructor)SendStream_dealloc,
    .tp_methods = SendStream_methods,
    .tp_members = SendStream_members,
    .tp_getset = SendStream_getset,
};

static int
RecvStream_init(RecvStreamObject *s, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwds, ":RecvStream", kwlist))
        return -1;
    PyObject *heap = PyList_New(0);
    if (heap == NULL)
        return -1;
    Py_XSETREF(s->heap, heap);
    s->delivered = s->heap_bytes = 0;
    s->fin_offset = -1;
    s->finished = 0;
    return 0;
}

static int
RecvStream_traverse(RecvStreamObject *s, visitproc visit, void *arg)
{
    Py_VISIT(s->heap);
    return 0;
}

static int
RecvStream_clear(RecvStreamObject *s)
{
    Py_CLEAR(s->heap);
    return 0;
}

static void
RecvStream_dealloc(RecvStreamObject *s)
{
    PyObject_GC_UnTrack(s);
    RecvStream_clear(s);
    Py_TYPE(s)->tp_free((PyObject *)s);
}

static PyMemberDef RecvStream_members[] = {
    {"delivered", T_LONGLONG, offsetof(RecvStreamObject, delivered), 0, NULL},
    {"fin_offset", T_LONGLONG, offsetof(RecvStreamObject, fin_offset), 0, NULL},
    {"heap", T_OBJECT_EX, offsetof(RecvStreamObject, heap), READONLY, NULL},
    {"heap_bytes", T_LONGLONG, offsetof(RecvStreamObject, heap_bytes), 0, NULL},
    {"finished", T_BOOL, offsetof(RecvStreamObject, finished), 0, NULL},
    {NULL},
};

static PyTypeObject RecvStreamType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "simulator.net._quic.RecvStream",
    .tp_doc = "net.quic.stream.RecvStream with its fields in C (the C twin's streams).",
    .tp_basicsize = sizeof(RecvStreamObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)RecvStream_init,
    .tp_traverse = (traverseproc)RecvStream_traverse,
    .tp_clear = (inquiry)RecvStream_clear,
    .tp_dealloc = (destructor)RecvStream_dealloc,
    .tp_members = RecvStream_members,
};

#endif
