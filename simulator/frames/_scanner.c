/*
 * simulator.frames._scanner: HTTP/2 and HTTP/3 frame scanners, QUIC varints, HPACK/QPACK
 * prefixed integers and Huffman coding, in C.
 *
 * The scanners are streaming state machines: bytes are fed in arbitrary chunks, nothing
 * is copied or kept except a partial frame header (at most 9 bytes for HTTP/2, one
 * partial varint for HTTP/3), and each complete frame is reported as
 * (type, flags, stream id, payload offset, payload length) where offsets are absolute
 * positions in the stream (for a single buffer: indexes into it).  A byte is looked at
 * once: a frame header is decoded when its last byte arrives; payload bytes are skipped
 * over (only the Pad Length byte, and for a few small HTTP/3 frames the payload's
 * varints, are inspected).
 *
 * Results of one feed() go to a table inside the scanner object that is reused from
 * call to call and grows (geometrically) only when one chunk completes more frames
 * than any chunk before: no per-frame heap allocation.  ``allocations`` counts every
 * (re)allocation the scanner makes.
 *
 * feed_frames() hands back each frame a chunk completed with its payload as bytes, for a
 * receiver that keeps no buffer of its own (the HOL study's): then the scanner keeps the
 * bytes of its one incomplete frame (``carry``) until the chunk that completes it, and a
 * payload that lies in the chunk is copied once, straight out of it.
 *
 * For h2's receive path, H2Scanner.next_frame() hands out one frame at a time from h2's
 * receive buffer and builds the DATA and HEADERS frames itself as hyperframe-compatible objects
 * (see "hyperframe-compatible DATA frames" below and h2frames.py), so a download's frames
 * never go through hyperframe's Python parser or its whole-payload repr.
 *
 * Everything here has a pure-Python twin in scanner.py with the same API and the same
 * error behaviour (code, offset, reason); the tests compare them.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <limits.h>
#include <stdint.h>
#include <string.h>

#include "_huffman_table.h"

/* ------------------------------------------------------------------------------ */
/* Shared                                                                          */

static PyObject *FrameError;    /* simulator.frames._errors.FrameError */
static PyObject *HuffmanError;
static PyObject *IntegerError;

#define VARINT_MAX ((uint64_t)0x3FFFFFFFFFFFFFFFULL)

static PyObject *
raise_frame_error(const char *protocol, int code, uint64_t offset, const char *reason, Py_ssize_t count)
{
    PyObject *exc = PyObject_CallFunction(FrameError, "siKsn", protocol, code,
                                          (unsigned long long)offset, reason, count);
    if (exc != NULL) {
        PyErr_SetObject((PyObject *)Py_TYPE(exc), exc);
        Py_DECREF(exc);
    }
    return NULL;
}

static PyObject *
make_frame_error(const char *protocol, int code, uint64_t offset, const char *reason, Py_ssize_t count)
{
    return PyObject_CallFunction(FrameError, "siKsn", protocol, code,
                                 (unsigned long long)offset, reason, count);
}

/* feed_frames' carry: the bytes of the incomplete frame fed so far (they end at the offset
 * scanned before the chunk now fed). */
typedef struct {
    uint8_t *buf;
    Py_ssize_t len, cap;
} carry_buf;

/* The payload [off, off + len) as bytes; ``p`` holds the chunk, whose first byte is at
 * absolute offset ``base``, and the carry the bytes just before it. */
static PyObject *
carry_payload(const carry_buf *c, const uint8_t *p, uint64_t base, uint64_t off, uint64_t len)
{
    if (off >= base)  /* all in the chunk: one copy */
        return PyBytes_FromStringAndSize((const char *)p + (off - base), (Py_ssize_t)len);
    uint64_t in_carry = base - off;
    if (in_carry > (uint64_t)c->len || in_carry > len) {
        PyErr_SetString(PyExc_SystemError, "feed_frames: payload outside the kept bytes");
        return NULL;
    }
    PyObject *b = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)len);
    if (b == NULL)
        return NULL;
    memcpy(PyBytes_AS_STRING(b), c->buf + (c->len - (Py_ssize_t)in_carry), (size_t)in_carry);
    memcpy(PyBytes_AS_STRING(b) + in_carry, p, (size_t)(len - in_carry));
    return b;
}

/* After a chunk: keep its incomplete frame's bytes, the last ``keep`` of carry + chunk. */
static int
carry_keep(carry_buf *c, const uint8_t *p, Py_ssize_t n, uint64_t keep)
{
    if (keep > (uint64_t)(c->len + n)) {
        PyErr_SetString(PyExc_SystemError, "feed_frames: incomplete frame longer than the bytes fed");
        return -1;
    }
    Py_ssize_t k = (Py_ssize_t)keep;
    if (k > c->cap) {
        Py_ssize_t cap = c->cap ? c->cap : 64;
        while (cap < k) cap *= 2;
        uint8_t *grown = PyMem_Realloc(c->buf, (size_t)cap);
        if (grown == NULL) { PyErr_NoMemory(); return -1; }
        c->buf = grown;
        c->cap = cap;
    }
    if (k > n) {  /* the frame began before this chunk: the carry's tail, then the chunk */
        Py_ssize_t old = k - n;
        if (old != c->len)
            memmove(c->buf, c->buf + (c->len - old), (size_t)old);
        memcpy(c->buf + old, p, (size_t)n);
    }
    else if (k) {
        memcpy(c->buf, p + (n - k), (size_t)k);
    }
    c->len = k;
    return 0;
}

static int
carry_check(const carry_buf *c, uint64_t pending)
{
    if (pending != (uint64_t)c->len) {
        PyErr_SetString(PyExc_ValueError,
                        "feed_frames needs every byte of the incomplete frame: this scanner was fed by feed()");
        return -1;
    }
    return 0;
}

/* ------------------------------------------------------------------------------ */
/* HTTP/2 (RFC 9113 sections 3.4, 4 and 6)                                          */

enum {
    H2_DATA = 0x0, H2_HEADERS = 0x1, H2_PRIORITY = 0x2, H2_RST_STREAM = 0x3, H2_SETTINGS = 0x4,
    H2_PUSH_PROMISE = 0x5, H2_PING = 0x6, H2_GOAWAY = 0x7, H2_WINDOW_UPDATE = 0x8,
    H2_CONTINUATION = 0x9
};
enum { F_END_STREAM = 0x1, F_ACK = 0x1, F_END_HEADERS = 0x4, F_PADDED = 0x8, F_PRIORITY = 0x20 };
enum { PROTOCOL_ERROR = 0x1, FRAME_SIZE_ERROR = 0x6 };

static const uint8_t PREFACE[24] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

typedef struct {
    uint64_t pos;             /* absolute offset of the next byte to be fed */
    uint64_t fstart;          /* absolute offset of the current frame's header */
    uint64_t frames;          /* frames completed so far */
    uint32_t max_frame_size;
    uint32_t flen, remaining, fsid;
    uint32_t cont_sid;        /* header block open on this stream: CONTINUATION expected */
    uint8_t ftype, fflags;
    uint8_t validate;
    uint8_t preface_mode;     /* 0: none (or done), 1: expected, 2: auto (decided by first byte) */
    uint8_t preface_have;
    uint8_t in_payload;
    uint8_t hdr_have;
    uint8_t pad_check;        /* first payload byte is a Pad Length still to check */
    uint8_t hdr[9];
    /* error (sticky) */
    uint8_t failed;
    int err_code;
    uint64_t err_off;
    const char *err_reason;
} h2_state;

typedef struct {
    uint8_t *type, *flags;
    uint32_t *sid, *len;
    uint64_t *off;
    Py_ssize_t n, cap;
    int counting;              /* count only, store nothing */
    int growable;
    Py_ssize_t *allocations;
} h2_sink;

static void
h2_init(h2_state *st, uint32_t max_frame_size, int preface_mode, int validate)
{
    memset(st, 0, sizeof(*st));
    st->max_frame_size = max_frame_size;
    st->preface_mode = (uint8_t)preface_mode;
    st->validate = (uint8_t)(validate != 0);
}

static int
h2_fail(h2_state *st, int code, uint64_t off, const char *reason)
{
    st->failed = 1;
    st->err_code = code;
    st->err_off = off;
    st->err_reason = reason;
    return -1;
}

static int
h2_sink_grow(h2_sink *sk)
{
    Py_ssize_t cap = sk->cap ? sk->cap * 2 : 64;
    if (!sk->growable) {
        PyErr_SetString(PyExc_ValueError, "output arrays are too small");
        return -1;
    }
    if (cap > PY_SSIZE_T_MAX / 8) {
        PyErr_NoMemory();
        return -1;
    }
    void *a = PyMem_Realloc(sk->type, (size_t)cap);
    if (a) sk->type = a;
    void *b = PyMem_Realloc(sk->flags, (size_t)cap);
    if (b) sk->flags = b;
    void *c = PyMem_Realloc(sk->sid, (size_t)cap * 4);
    if (c) sk->sid = c;
    void *d = PyMem_Realloc(sk->len, (size_t)cap * 4);
    if (d) sk->len = d;
    void *e = PyMem_Realloc(sk->off, (size_t)cap * 8);
    if (e) sk->off = e;
    if (sk->allocations) *sk->allocations += 5;
    if (!a || !b || !c || !d || !e) {
        PyErr_NoMemory();
        return -1;
    }
    sk->cap = cap;
    return 0;
}

static inline int
h2_emit(h2_state *st, h2_sink *sk)
{
    if (!sk->counting) {
        if (sk->n >= sk->cap && h2_sink_grow(sk) < 0)
            return -1;
        Py_ssize_t k = sk->n;
        sk->type[k] = st->ftype;
        sk->flags[k] = st->fflags;
        sk->sid[k] = st->fsid;
        sk->off[k] = st->fstart + 9;
        sk->len[k] = st->flen;
    }
    sk->n++;
    st->frames++;
    return 0;
}

/* RFC 9113 section 4.2 (size), section 5.1.1 / 6.x (stream association, fixed lengths),
 * 6.2 and 6.10 (header block sequencing).  Returns -1 (and records the error) or 0. */
static int
h2_check_header(h2_state *st)
{
    const uint32_t len = st->flen, sid = st->fsid;
    const uint8_t t = st->ftype, fl = st->fflags;
    const uint64_t at = st->fstart;

    if (len > st->max_frame_size)
        return h2_fail(st, FRAME_SIZE_ERROR, at, "frame length exceeds SETTINGS_MAX_FRAME_SIZE");
    if (st->cont_sid) {
        if (t != H2_CONTINUATION || sid != st->cont_sid)
            return h2_fail(st, PROTOCOL_ERROR, at,
                           "header block interrupted: CONTINUATION on the same stream expected");
    }
    switch (t) {
    case H2_DATA:
        if (sid == 0) return h2_fail(st, PROTOCOL_ERROR, at, "DATA frame on stream 0");
        if ((fl & F_PADDED) && len < 1)
            return h2_fail(st, FRAME_SIZE_ERROR, at, "padded frame too short for its Pad Length");
        break;
    case H2_HEADERS:
        if (sid == 0) return h2_fail(st, PROTOCOL_ERROR, at, "HEADERS frame on stream 0");
        if (len < (uint32_t)(((fl & F_PADDED) ? 1 : 0) + ((fl & F_PRIORITY) ? 5 : 0)))
            return h2_fail(st, FRAME_SIZE_ERROR, at, "HEADERS frame too short for its Pad Length and priority fields");
        break;
    case H2_PRIORITY:
        if (sid == 0) return h2_fail(st, PROTOCOL_ERROR, at, "PRIORITY frame on stream 0");
        if (len != 5) return h2_fail(st, FRAME_SIZE_ERROR, at, "PRIORITY frame length is not 5");
        break;
    case H2_RST_STREAM:
        if (sid == 0) return h2_fail(st, PROTOCOL_ERROR, at, "RST_STREAM frame on stream 0");
        if (len != 4) return h2_fail(st, FRAME_SIZE_ERROR, at, "RST_STREAM frame length is not 4");
        break;
    case H2_SETTINGS:
        if (sid != 0) return h2_fail(st, PROTOCOL_ERROR, at, "SETTINGS frame not on stream 0");
        if ((fl & F_ACK) && len != 0)
            return h2_fail(st, FRAME_SIZE_ERROR, at, "SETTINGS ACK frame with a payload");
        if (len % 6 != 0)
            return h2_fail(st, FRAME_SIZE_ERROR, at, "SETTINGS frame length is not a multiple of 6");
        break;
    case H2_PUSH_PROMISE:
        if (sid == 0) return h2_fail(st, PROTOCOL_ERROR, at, "PUSH_PROMISE frame on stream 0");
        if (len < (uint32_t)(((fl & F_PADDED) ? 1 : 0) + 4))
            return h2_fail(st, FRAME_SIZE_ERROR, at, "PUSH_PROMISE frame too short for its Promised Stream ID");
        break;
    case H2_PING:
        if (sid != 0) return h2_fail(st, PROTOCOL_ERROR, at, "PING frame not on stream 0");
        if (len != 8) return h2_fail(st, FRAME_SIZE_ERROR, at, "PING frame length is not 8");
        break;
    case H2_GOAWAY:
        if (sid != 0) return h2_fail(st, PROTOCOL_ERROR, at, "GOAWAY frame not on stream 0");
        if (len < 8) return h2_fail(st, FRAME_SIZE_ERROR, at, "GOAWAY frame shorter than 8");
        break;
    case H2_WINDOW_UPDATE:
        if (len != 4) return h2_fail(st, FRAME_SIZE_ERROR, at, "WINDOW_UPDATE frame length is not 4");
        break;
    case H2_CONTINUATION:
        if (sid == 0) return h2_fail(st, PROTOCOL_ERROR, at, "CONTINUATION frame on stream 0");
        if (!st->cont_sid)
            return h2_fail(st, PROTOCOL_ERROR, at, "CONTINUATION frame without an open header block");
        break;
    default:
        break;                  /* unknown types are ignored (section 4.1) */
    }
    /* Header block bookkeeping (sections 6.2, 6.6, 6.10). */
    if (t == H2_HEADERS || t == H2_PUSH_PROMISE || t == H2_CONTINUATION)
        st->cont_sid = (fl & F_END_HEADERS) ? 0 : sid;
    st->pad_check = (fl & F_PADDED) && (t == H2_DATA || t == H2_HEADERS || t == H2_PUSH_PROMISE);
    return 0;
}

static int
h2_check_padding(h2_state *st, uint8_t pad)
{
    uint32_t need = 1u + pad;
    if (st->ftype == H2_HEADERS && (st->fflags & F_PRIORITY)) need += 5;
    if (st->ftype == H2_PUSH_PROMISE) need += 4;
    if (need > st->flen)
        return h2_fail(st, PROTOCOL_ERROR, st->fstart, "padding exceeds the frame payload");
    return 0;
}

/* Scan p[0:n].  Returns 0 (all consumed into the state), -1 (protocol error recorded in
 * st), -2 (Python exception set). */
static int
h2_run(h2_state *st, const uint8_t *p, Py_ssize_t n, h2_sink *sk)
{
    const uint64_t base = st->pos;
    Py_ssize_t i = 0;

    if (st->failed)
        return -1;

    while (st->preface_mode && i < n) {
        if (st->preface_mode == 2) {
            if (p[i] != PREFACE[0]) {
                st->preface_mode = 0;
                break;
            }
            st->preface_mode = 1;
        }
        if (p[i] != PREFACE[st->preface_have]) {
            st->pos = base + (uint64_t)i;
            return h2_fail(st, PROTOCOL_ERROR, base + (uint64_t)i, "invalid client connection preface");
        }
        i++;
        if (++st->preface_have == 24)
            st->preface_mode = 0;
    }

    while (i < n) {
        if (!st->in_payload) {
            const uint8_t *h;
            if (st->hdr_have == 0 && n - i >= 9) {
                h = p + i;
                st->fstart = base + (uint64_t)i;
                i += 9;
            }
            else {
                Py_ssize_t take = 9 - st->hdr_have;
                if (st->hdr_have == 0)
                    st->fstart = base + (uint64_t)i;
                if (take > n - i)
                    take = n - i;
                memcpy(st->hdr + st->hdr_have, p + i, (size_t)take);
                st->hdr_have += (uint8_t)take;
                i += take;
                if (st->hdr_have < 9)
                    break;
                h = st->hdr;
            }
            st->hdr_have = 0;
            st->flen = ((uint32_t)h[0] << 16) | ((uint32_t)h[1] << 8) | (uint32_t)h[2];
            st->ftype = h[3];
            st->fflags = h[4];
            st->fsid = ((uint32_t)(h[5] & 0x7F) << 24) | ((uint32_t)h[6] << 16) |
                       ((uint32_t)h[7] << 8) | (uint32_t)h[8];
            if (st->validate) {
                if (h2_check_header(st) < 0) {
                    st->pos = st->fstart;
                    return -1;
                }
            }
            if (st->flen == 0) {
                if (h2_emit(st, sk) < 0) goto pyerror;
                continue;
            }
            st->remaining = st->flen;
            st->in_payload = 1;
        }
        if (i >= n)
            break;
        if (st->pad_check) {
            st->pad_check = 0;
            if (h2_check_padding(st, p[i]) < 0) {
                st->pos = st->fstart;
                return -1;
            }
        }
        if ((uint64_t)(n - i) < (uint64_t)st->remaining) {
            st->remaining -= (uint32_t)(n - i);
            i = n;
            break;
        }
        i += (Py_ssize_t)st->remaining;
        st->remaining = 0;
        st->in_payload = 0;
        if (h2_emit(st, sk) < 0) goto pyerror;
    }
    st->pos = base + (uint64_t)n;
    return 0;

pyerror:
    /* The frame just completed could not be stored: leave the state before it. */
    st->pos = base + (uint64_t)i;
    return -2;
}

static uint64_t
h2_pending(const h2_state *st)
{
    if (st->preface_mode == 1 && st->preface_have)
        return st->preface_have;
    if (st->in_payload)
        return 9 + (uint64_t)(st->flen - st->remaining);
    return st->hdr_have;
}

/* ---- H2Scanner object ---- */

typedef struct {
    PyObject_HEAD
    h2_state st;
    h2_sink sk;
    Py_ssize_t allocations;
    Py_ssize_t cursor;        /* next_frame: the next record of the last feed to hand out */
    uint64_t consumed;        /* next_frame: absolute offset after the last frame handed out */
    carry_buf carry;          /* feed_frames: the incomplete frame's bytes */
} H2ScannerObject;

static int
parse_preface_arg(PyObject *obj, int *mode)
{
    if (obj == Py_None) { *mode = 2; return 0; }
    int b = PyObject_IsTrue(obj);
    if (b < 0) return -1;
    *mode = b ? 1 : 0;
    return 0;
}

static int
check_max_frame_size(long long v)
{
    if (v < 0 || v > 0xFFFFFF) {
        PyErr_SetString(PyExc_ValueError, "max_frame_size must be in 0..16777215");
        return -1;
    }
    return 0;
}

static int
H2Scanner_init(H2ScannerObject *self, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"max_frame_size", "preface", "validate", NULL};
    long long mfs = 16384;
    PyObject *preface = Py_False;
    int validate = 1, mode;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "|L$Op:H2Scanner", kwlist, &mfs, &preface, &validate))
        return -1;
    if (check_max_frame_size(mfs) < 0 || parse_preface_arg(preface, &mode) < 0)
        return -1;
    h2_init(&self->st, (uint32_t)mfs, mode, validate);
    self->sk.n = 0;
    self->cursor = 0;
    self->consumed = 0;
    self->carry.len = 0;
    return 0;
}

static PyObject *
H2Scanner_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    H2ScannerObject *self = (H2ScannerObject *)type->tp_alloc(type, 0);
    if (self == NULL) return NULL;
    memset(&self->sk, 0, sizeof(self->sk));
    memset(&self->carry, 0, sizeof(self->carry));
    self->sk.growable = 1;
    self->sk.allocations = &self->allocations;
    h2_init(&self->st, 16384, 0, 1);
    return (PyObject *)self;
}

static void
H2Scanner_dealloc(H2ScannerObject *self)
{
    PyMem_Free(self->sk.type);
    PyMem_Free(self->sk.flags);
    PyMem_Free(self->sk.sid);
    PyMem_Free(self->sk.len);
    PyMem_Free(self->sk.off);
    PyMem_Free(self->carry.buf);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *
H2Scanner_feed(H2ScannerObject *self, PyObject *data)
{
    Py_buffer view;
    int r;
    if (PyObject_GetBuffer(data, &view, PyBUF_SIMPLE) < 0)
        return NULL;
    self->sk.n = 0;
    r = h2_run(&self->st, (const uint8_t *)view.buf, view.len, &self->sk);
    PyBuffer_Release(&view);
    if (r == -1)
        return raise_frame_error("h2", self->st.err_code, self->st.err_off, self->st.err_reason, self->sk.n);
    if (r == -2)
        return NULL;
    return PyLong_FromSsize_t(self->sk.n);
}

/* feed_frames(data): feed, then each frame completed as (type, flags, stream_id, payload)
 * with the payload as bytes; the incomplete frame's bytes are kept for the next call. */
static PyObject *
H2Scanner_feed_frames(H2ScannerObject *self, PyObject *data)
{
    Py_buffer view;
    PyObject *list = NULL;
    const uint64_t base = self->st.pos;
    int r;
    if (!self->st.failed && carry_check(&self->carry, h2_pending(&self->st)) < 0)
        return NULL;
    if (PyObject_GetBuffer(data, &view, PyBUF_SIMPLE) < 0)
        return NULL;
    const uint8_t *p = (const uint8_t *)view.buf;
    self->sk.n = 0;
    r = h2_run(&self->st, p, view.len, &self->sk);
    if (r == -1) {
        PyBuffer_Release(&view);
        return raise_frame_error("h2", self->st.err_code, self->st.err_off, self->st.err_reason, self->sk.n);
    }
    if (r == -2)
        goto done;
    list = PyList_New(self->sk.n);
    if (list == NULL)
        goto done;
    for (Py_ssize_t k = 0; k < self->sk.n; k++) {
        PyObject *payload = carry_payload(&self->carry, p, base, self->sk.off[k], self->sk.len[k]);
        PyObject *t = payload ? PyTuple_New(4) : NULL;
        PyObject *a = t ? PyLong_FromLong(self->sk.type[k]) : NULL;
        PyObject *b = a ? PyLong_FromLong(self->sk.flags[k]) : NULL;
        PyObject *c = b ? PyLong_FromUnsignedLong(self->sk.sid[k]) : NULL;
        if (c == NULL) {
            Py_XDECREF(payload); Py_XDECREF(t); Py_XDECREF(a); Py_XDECREF(b);
            Py_CLEAR(list);
            goto done;
        }
        PyTuple_SET_ITEM(t, 0, a);
        PyTuple_SET_ITEM(t, 1, b);
        PyTuple_SET_ITEM(t, 2, c);
        PyTuple_SET_ITEM(t, 3, payload);
        PyList_SET_ITEM(list, k, t);
    }
    if (carry_keep(&self->carry, p, view.len, h2_pending(&self->st)) < 0)
        Py_CLEAR(list);
done:
    PyBuffer_Release(&view);
    return list;
}

static PyObject *
h2_record(const h2_sink *sk, Py_ssize_t k)
{
    /* Built by hand (not Py_BuildValue): this is the per-frame cost of the Python API. */
    PyObject *t = PyTuple_New(5);
    if (t == NULL) return NULL;
    PyObject *a = PyLong_FromLong(sk->type[k]);
    PyObject *b = PyLong_FromLong(sk->flags[k]);
    PyObject *c = PyLong_FromUnsignedLong(sk->sid[k]);
    PyObject *d = PyLong_FromUnsignedLongLong(sk->off[k]);
    PyObject *e = PyLong_FromUnsignedLong(sk->len[k]);
    if (!a || !b || !c || !d || !e) {
        Py_XDECREF(a); Py_XDECREF(b); Py_XDECREF(c); Py_XDECREF(d); Py_XDECREF(e);
        Py_DECREF(t);
        return NULL;
    }
    PyTuple_SET_ITEM(t, 0, a);
    PyTuple_SET_ITEM(t, 1, b);
    PyTuple_SET_ITEM(t, 2, c);
    PyTuple_SET_ITEM(t, 3, d);
    PyTuple_SET_ITEM(t, 4, e);
    return t;
}

static PyObject *
H2Scanner_results(H2ScannerObject *self, PyObject *Py_UNUSED(ignored))
{
    PyObject *list = PyList_New(self->sk.n);
    if (list == NULL) return NULL;
    for (Py_ssize_t k = 0; k < self->sk.n; k++) {
        PyObject *t = h2_record(&self->sk, k);
        if (t == NULL) { Py_DECREF(list); return NULL; }
        PyList_SET_ITEM(list, k, t);
    }
    return list;
}

/* results_into(out, start=0): copy the last feed's records into caller-owned arrays
 * (the bulk layout of scan_h2/scan_h3) at index start; returns the count.  Per-frame
 * values reach Python without a Python object per frame. */
static int
get_out_buffers(PyObject *out, int nbuf, const Py_ssize_t *sizes, Py_buffer *ob, Py_ssize_t *cap)
{
    int k;
    if (!PyTuple_Check(out) || PyTuple_GET_SIZE(out) != nbuf) {
        PyErr_Format(PyExc_TypeError, "out must be a tuple of %d buffers", nbuf);
        return -1;
    }
    *cap = PY_SSIZE_T_MAX;
    for (k = 0; k < nbuf; k++) {
        if (PyObject_GetBuffer(PyTuple_GET_ITEM(out, k), &ob[k], PyBUF_WRITABLE) < 0)
            goto fail;
        if (ob[k].itemsize != sizes[k] && ob[k].itemsize != 1) {
            PyBuffer_Release(&ob[k]);
            PyErr_SetString(PyExc_TypeError, "output array has the wrong item size");
            goto fail;
        }
        if (ob[k].len / sizes[k] < *cap)
            *cap = ob[k].len / sizes[k];
    }
    return 0;
fail:
    while (--k >= 0) PyBuffer_Release(&ob[k]);
    return -1;
}

static PyObject *
H2Scanner_results_into(H2ScannerObject *self, PyObject *args)
{
    static const Py_ssize_t sizes[5] = {1, 1, 4, 8, 4};
    PyObject *out;
    Py_ssize_t start = 0, cap, n = self->sk.n;
    Py_buffer ob[5];
    if (!PyArg_ParseTuple(args, "O|n:results_into", &out, &start))
        return NULL;
    if (get_out_buffers(out, 5, sizes, ob, &cap) < 0)
        return NULL;
    if (start < 0 || start > cap || cap - start < n) {
        for (int k = 0; k < 5; k++) PyBuffer_Release(&ob[k]);
        PyErr_SetString(PyExc_ValueError, "output arrays are too small");
        return NULL;
    }
    if (n) {
        memcpy((uint8_t *)ob[0].buf + start, self->sk.type, (size_t)n);
        memcpy((uint8_t *)ob[1].buf + start, self->sk.flags, (size_t)n);
        memcpy((uint32_t *)ob[2].buf + start, self->sk.sid, (size_t)n * 4);
        memcpy((uint64_t *)ob[3].buf + start, self->sk.off, (size_t)n * 8);
        memcpy((uint32_t *)ob[4].buf + start, self->sk.len, (size_t)n * 4);
    }
    for (int k = 0; k < 5; k++) PyBuffer_Release(&ob[k]);
    return PyLong_FromSsize_t(n);
}

static Py_ssize_t
H2Scanner_len(H2ScannerObject *self)
{
    return self->sk.n;
}

static PyObject *
H2Scanner_item(H2ScannerObject *self, Py_ssize_t k)
{
    if (k < 0 || k >= self->sk.n) {
        PyErr_SetString(PyExc_IndexError, "frame index out of range");
        return NULL;
    }
    return h2_record(&self->sk, k);
}

static PyObject *
H2Scanner_finish(H2ScannerObject *self, PyObject *Py_UNUSED(ignored))
{
    if (self->st.failed)
        return raise_frame_error("h2", self->st.err_code, self->st.err_off, self->st.err_reason, 0);
    if (h2_pending(&self->st)) {
        if (self->st.preface_mode == 1)
            return raise_frame_error("h2", PROTOCOL_ERROR, 0, "stream ends inside the client connection preface", 0);
        return raise_frame_error("h2", PROTOCOL_ERROR, self->st.fstart, "stream ends inside a frame", 0);
    }
    Py_RETURN_NONE;
}

static PyObject *
H2Scanner_get_offset(H2ScannerObject *self, void *c) { return PyLong_FromUnsignedLongLong(self->st.pos); }
static PyObject *
H2Scanner_get_frames(H2ScannerObject *self, void *c) { return PyLong_FromUnsignedLongLong(self->st.frames); }
static PyObject *
H2Scanner_get_pending(H2ScannerObject *self, void *c) { return PyLong_FromUnsignedLongLong(h2_pending(&self->st)); }
static PyObject *
H2Scanner_get_allocations(H2ScannerObject *self, void *c) { return PyLong_FromSsize_t(self->allocations); }
static PyObject *
H2Scanner_get_validate(H2ScannerObject *self, void *c) { return PyBool_FromLong(self->st.validate); }
static PyObject *
H2Scanner_get_open_block(H2ScannerObject *self, void *c) { return PyLong_FromUnsignedLong(self->st.cont_sid); }
static PyObject *
H2Scanner_get_max(H2ScannerObject *self, void *c) { return PyLong_FromUnsignedLong(self->st.max_frame_size); }

static int
H2Scanner_set_max(H2ScannerObject *self, PyObject *v, void *c)
{
    if (v == NULL) { PyErr_SetString(PyExc_AttributeError, "cannot delete max_frame_size"); return -1; }
    long long x = PyLong_AsLongLong(v);
    if (x == -1 && PyErr_Occurred()) return -1;
    if (check_max_frame_size(x) < 0) return -1;
    self->st.max_frame_size = (uint32_t)x;
    return 0;
}

static PyObject *
H2Scanner_get_error(H2ScannerObject *self, void *c)
{
    if (!self->st.failed) Py_RETURN_NONE;
    return make_frame_error("h2", self->st.err_code, self->st.err_off, self->st.err_reason, 0);
}

static PyObject *
H2Scanner_get_current(H2ScannerObject *self, void *c)
{
    /* The frame whose header is complete but whose payload is not (or None). */
    if (!self->st.in_payload) Py_RETURN_NONE;
    return Py_BuildValue("(iikKk)", (int)self->st.ftype, (int)self->st.fflags, (unsigned long)self->st.fsid,
                         (unsigned long long)(self->st.fstart + 9), (unsigned long)self->st.flen);
}

/* ---- hyperframe-compatible DATA and HEADERS frames for h2's receive buffer ----
 *
 * h2buffer.ScannerFrameBuffer takes its frames from next_frame().  A DATA frame that
 * hyperframe would accept (RFC 9113 section 6.1: stream id not 0, padding shorter than
 * the payload; and within SETTINGS_MAX_FRAME_SIZE, h2's check) is built here as an
 * instance of the subclass of hyperframe.frame.DataFrame that h2frames.py registers,
 * with the attributes hyperframe's parse_frame_header + parse_body set, in the same
 * order: stream_id, flags (a real hyperframe Flags: _valid_flags, _flags), body_len,
 * pad_length, data.  Likewise a HEADERS frame that ends its header block (section 6.2),
 * as the registered HeadersFrame subclass.  Any other frame is returned as its record
 * and built by hyperframe in Python.  The pure-Python twin (scanner.py) does the same. */

static PyObject *H2F_data_cls;        /* the registered DataFrame subclass, or NULL */
static PyObject *H2F_flags_cls;       /* hyperframe.flags.Flags */
static PyObject *H2F_flag_names;      /* ("END_STREAM", "PADDED"): hyperframe's order */
static PyObject *H2F_fallback_repr;   /* hyperframe.frame.Frame.__repr__ */
static PyObject *H2F_headers_cls;     /* the registered HeadersFrame subclass, or NULL */
static PyObject *H2F_headers_flag_names;  /* ("END_STREAM", "END_HEADERS", "PADDED", "PRIORITY") */
static PyObject *H2F_empty_tuple;
static PyObject *S_stream_id, *S_flags, *S_body_len, *S_pad_length, *S_data, *S_valid_flags, *S_flags_set;
static PyObject *S_depends_on, *S_stream_weight, *S_exclusive;
static PyObject *S_kind;

static PyObject *
h2f_new_instance(PyObject *cls)
{
    /* cls.__new__(cls): object.__new__ for hyperframe's classes (no Python code runs). */
    PyTypeObject *tp = (PyTypeObject *)cls;
    return tp->tp_new(tp, H2F_empty_tuple, NULL);
}

static int
h2f_set_long(PyObject *obj, PyObject *name, unsigned long v)
{
    PyObject *o = PyLong_FromUnsignedLong(v);
    if (o == NULL) return -1;
    int r = PyObject_SetAttr(obj, name, o);
    Py_DECREF(o);
    return r;
}

/* hyperframe's Flags of a frame: _valid_flags the frame type's names (``names``, in defined
 * order), _flags those of ``bits`` (the same order) that ``fl`` sets. */
static PyObject *
h2f_flags(PyObject *names, uint8_t fl, const uint8_t *bits, Py_ssize_t nbits)
{
    PyObject *flags = h2f_new_instance(H2F_flags_cls), *set = NULL;
    if (flags == NULL) return NULL;
    set = PySet_New(names);                   /* Flags._valid_flags: names in defined order */
    if (set == NULL || PyObject_SetAttr(flags, S_valid_flags, set) < 0) goto fail;
    Py_CLEAR(set);
    set = PySet_New(NULL);                    /* Flags._flags: added in defined order */
    if (set == NULL) goto fail;
    for (Py_ssize_t i = 0; i < nbits; i++)
        if ((fl & bits[i]) && PySet_Add(set, PyTuple_GET_ITEM(names, i)) < 0) goto fail;
    if (PyObject_SetAttr(flags, S_flags_set, set) < 0) goto fail;
    Py_DECREF(set);
    return flags;
fail:
    Py_XDECREF(set);
    Py_DECREF(flags);
    return NULL;
}

static PyObject *
h2f_build_data_frame(const uint8_t *p, uint32_t len, uint8_t fl, uint32_t sid)
{
    PyObject *data = NULL, *flags = NULL, *frame = NULL;
    uint32_t pad = 0, start = 0, stop = len;
    if (fl & F_PADDED) {                      /* Pad Length, then data, then padding */
        pad = p[0];
        start = 1;
        stop = len - pad;
    }
    data = PyBytes_FromStringAndSize((const char *)p + start, (Py_ssize_t)(stop - start));
    if (data == NULL) goto fail;
    static const uint8_t bits[] = {F_END_STREAM, F_PADDED};     /* DataFrame.defined_flags */
    flags = h2f_flags(H2F_flag_names, fl, bits, 2);
    if (flags == NULL) goto fail;
    frame = h2f_new_instance(H2F_data_cls);
    if (frame == NULL) goto fail;
    if (h2f_set_long(frame, S_stream_id, sid) < 0 || PyObject_SetAttr(frame, S_flags, flags) < 0 ||
        h2f_set_long(frame, S_body_len, len) < 0 || h2f_set_long(frame, S_pad_length, pad) < 0 ||
        PyObject_SetAttr(frame, S_data, data) < 0)
        goto fail;
    Py_DECREF(flags);
    Py_DECREF(data);
    return frame;
fail:
    Py_XDECREF(data);
    Py_XDECREF(flags);
    Py_XDECREF(frame);
    return NULL;
}

/* A HEADERS frame hyperframe accepts (RFC 9113 section 6.2), as HeadersFrame after
 * parse_frame_header + parse_body: attributes in HeadersFrame.__init__'s order (stream_id,
 * flags, body_len, then Priority's depends_on, stream_weight, exclusive, then Padding's
 * pad_length, then data).  body_len is the payload less the Pad Length byte, as hyperframe
 * sets it; the caller has checked the Pad Length and priority fields fit. */
static PyObject *
h2f_build_headers_frame(const uint8_t *p, uint32_t len, uint8_t fl, uint32_t sid)
{
    PyObject *data = NULL, *flags = NULL, *frame = NULL, *v = NULL;
    const uint32_t padded = (fl & F_PADDED) ? 1 : 0;
    const uint32_t body_len = len - padded;
    const uint32_t pad = padded ? p[0] : 0;
    const uint32_t prio = (fl & F_PRIORITY) ? 5 : 0;
    uint32_t depends_on = 0, weight = 0, exclusive = 0;
    /* data = body[prio:body_len - pad] with Python's slice rules: empty when it would end before it starts */
    uint32_t stop = body_len - pad;
    if (stop < prio) stop = prio;
    if (prio) {
        const uint8_t *q = p + padded;
        uint32_t dep = ((uint32_t)q[0] << 24) | ((uint32_t)q[1] << 16) | ((uint32_t)q[2] << 8) | (uint32_t)q[3];
        exclusive = dep >> 31;
        depends_on = dep & 0x7FFFFFFFu;
        weight = q[4];
    }
    data = PyBytes_FromStringAndSize((const char *)p + padded + prio, (Py_ssize_t)(stop - prio));
    if (data == NULL) goto fail;
    static const uint8_t bits[] = {F_END_STREAM, F_END_HEADERS, F_PADDED, F_PRIORITY};  /* HeadersFrame's */
    flags = h2f_flags(H2F_headers_flag_names, fl, bits, 4);
    if (flags == NULL) goto fail;
    frame = h2f_new_instance(H2F_headers_cls);
    if (frame == NULL) goto fail;
    if (h2f_set_long(frame, S_stream_id, sid) < 0 || PyObject_SetAttr(frame, S_flags, flags) < 0 ||
        h2f_set_long(frame, S_body_len, body_len) < 0 || h2f_set_long(frame, S_depends_on, depends_on) < 0 ||
        h2f_set_long(frame, S_stream_weight, weight) < 0)
        goto fail;
    v = PyBool_FromLong((long)exclusive);
    if (PyObject_SetAttr(frame, S_exclusive, v) < 0 || h2f_set_long(frame, S_pad_length, pad) < 0 ||
        PyObject_SetAttr(frame, S_data, data) < 0)
        goto fail;
    Py_DECREF(v);
    Py_DECREF(flags);
    Py_DECREF(data);
    return frame;
fail:
    Py_XDECREF(v);
    Py_XDECREF(data);
    Py_XDECREF(flags);
    Py_XDECREF(frame);
    return NULL;
}

/* getattr(obj, name) with AttributeError turned into *missing = 1. */
static PyObject *
h2f_getattr(PyObject *obj, PyObject *name, int *missing)
{
    PyObject *v = PyObject_GetAttr(obj, name);
    if (v == NULL && PyErr_ExceptionMatches(PyExc_AttributeError)) {
        PyErr_Clear();
        *missing = 1;
    }
    return v;
}

/* hyperframe's repr of a DATA frame: Frame.__repr__ ->
 *   f"{type(self).__name__}(stream_id={self.stream_id}, flags={self.flags!r}): {self._body_repr()}"
 * with _body_repr() = _raw_data_repr(serialize_body()), serialize_body() = Pad Length byte (if
 * PADDED) + data + pad_length zero bytes, and _raw_data_repr() keeping 20 hex digits (then
 * "...") or "None" when empty.  Built from the first 10 bytes instead of hex-encoding all of
 * them; anything unusual (not the registered class, data not bytes, odd attributes) goes to
 * hyperframe's own __repr__. */
static PyObject *
h2f_data_frame_repr(PyObject *self, PyObject *Py_UNUSED(ignored))
{
    PyObject *sid = NULL, *flags = NULL, *data = NULL, *pad = NULL, *present = NULL, *sorted = NULL;
    PyObject *flags_repr = NULL, *sid_str = NULL, *name = NULL, *body = NULL, *res = NULL;
    int missing = 0, overflow = 0, padded;
    long padv = -1;
    Py_ssize_t dlen, total;

    if (H2F_data_cls == NULL || (PyObject *)Py_TYPE(self) != H2F_data_cls)
        goto fallback;
    if ((sid = h2f_getattr(self, S_stream_id, &missing)) == NULL && !missing) goto done;
    if ((flags = h2f_getattr(self, S_flags, &missing)) == NULL && !missing) goto done;
    if ((data = h2f_getattr(self, S_data, &missing)) == NULL && !missing) goto done;
    if ((pad = h2f_getattr(self, S_pad_length, &missing)) == NULL && !missing) goto done;
    if (flags != NULL && (PyObject *)Py_TYPE(flags) == H2F_flags_cls) {
        if ((present = h2f_getattr(flags, S_flags_set, &missing)) == NULL && !missing) goto done;
    }
    if (pad != NULL && PyLong_CheckExact(pad)) {
        padv = PyLong_AsLongAndOverflow(pad, &overflow);
        if (padv == -1 && PyErr_Occurred()) goto done;
    }
    if (missing || !PyLong_CheckExact(sid) || present == NULL || !PySet_CheckExact(present) ||
        !PyBytes_CheckExact(data) || overflow || padv < 0 || padv > 255) {
        Py_CLEAR(sid); Py_CLEAR(flags); Py_CLEAR(data); Py_CLEAR(pad); Py_CLEAR(present);
        goto fallback;
    }
    /* repr(self.flags) is Flags.__repr__: repr(sorted(self._flags)). */
    sorted = PySequence_List(present);
    if (sorted == NULL || PyList_Sort(sorted) < 0) goto done;
    flags_repr = PyObject_Repr(sorted);
    if (flags_repr == NULL) goto done;
    padded = PySet_Contains(present, PyTuple_GET_ITEM(H2F_flag_names, 1));
    if (padded < 0) goto done;
    dlen = PyBytes_GET_SIZE(data);
    total = padded + dlen + padv;
    if (total == 0) {
        body = PyUnicode_FromString("None");
    }
    else {
        static const char hexdigits[] = "0123456789abcdef";
        uint8_t head[10];
        char hex[21];
        Py_ssize_t h = 0, k;
        const uint8_t *d = (const uint8_t *)PyBytes_AS_STRING(data);
        if (padded) head[h++] = (uint8_t)padv;
        for (k = 0; k < dlen && h < 10; k++) head[h++] = d[k];
        for (k = 0; k < padv && h < 10; k++) head[h++] = 0;
        for (k = 0; k < h; k++) {
            hex[2 * k] = hexdigits[head[k] >> 4];
            hex[2 * k + 1] = hexdigits[head[k] & 0xF];
        }
        hex[2 * h] = '\0';
        body = PyUnicode_FromFormat("<hex:%s%s>", hex, total > 10 ? "..." : "");
    }
    if (body == NULL) goto done;
    sid_str = PyObject_Str(sid);
    if (sid_str == NULL) goto done;
    name = PyType_GetName(Py_TYPE(self));
    if (name == NULL) goto done;
    res = PyUnicode_FromFormat("%U(stream_id=%U, flags=%U): %U", name, sid_str, flags_repr, body);
done:
    Py_XDECREF(sid); Py_XDECREF(flags); Py_XDECREF(data); Py_XDECREF(pad); Py_XDECREF(present);
    Py_XDECREF(sorted); Py_XDECREF(flags_repr); Py_XDECREF(sid_str); Py_XDECREF(name); Py_XDECREF(body);
    return res;
fallback:
    if (H2F_fallback_repr == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "no frame classes registered");
        return NULL;
    }
    return PyObject_CallOneArg(H2F_fallback_repr, self);
}

static PyMethodDef h2f_repr_def = {
    "__repr__", (PyCFunction)h2f_data_frame_repr, METH_NOARGS,
    "hyperframe's repr of a DATA frame, built from the first 10 bytes of its body."
};

/* hyperframe's repr of a HEADERS frame: Frame.__repr__ with HeadersFrame._body_repr() =
 *   f"exclusive={self.exclusive}, depends_on={self.depends_on}, stream_weight={self.stream_weight}, "
 *   f"data={_raw_data_repr(self.data)}"
 * (_raw_data_repr: "None" when empty, else 20 hex digits of the data, then "..." if longer).
 * The same string from the first 10 bytes; anything unusual (not the registered class, an
 * attribute missing or of another type than hyperframe's parser sets) goes to hyperframe. */
static PyObject *
h2f_headers_frame_repr(PyObject *self, PyObject *Py_UNUSED(ignored))
{
    PyObject *sid = NULL, *flags = NULL, *present = NULL, *excl = NULL, *dep = NULL, *weight = NULL, *data = NULL;
    PyObject *sorted = NULL, *flags_repr = NULL, *sid_str = NULL, *dep_str = NULL, *weight_str = NULL;
    PyObject *name = NULL, *body = NULL, *res = NULL;
    int missing = 0;

    if (H2F_headers_cls == NULL || (PyObject *)Py_TYPE(self) != H2F_headers_cls)
        goto fallback;
    if ((sid = h2f_getattr(self, S_stream_id, &missing)) == NULL && !missing) goto done;
    if ((flags = h2f_getattr(self, S_flags, &missing)) == NULL && !missing) goto done;
    if (flags != NULL && (PyObject *)Py_TYPE(flags) == H2F_flags_cls) {
        if ((present = h2f_getattr(flags, S_flags_set, &missing)) == NULL && !missing) goto done;
    }
    if ((excl = h2f_getattr(self, S_exclusive, &missing)) == NULL && !missing) goto done;
    if ((dep = h2f_getattr(self, S_depends_on, &missing)) == NULL && !missing) goto done;
    if ((weight = h2f_getattr(self, S_stream_weight, &missing)) == NULL && !missing) goto done;
    if ((data = h2f_getattr(self, S_data, &missing)) == NULL && !missing) goto done;
    if (missing || !PyLong_CheckExact(sid) || present == NULL || !PySet_CheckExact(present) || !PyBool_Check(excl) ||
        !PyLong_CheckExact(dep) || !PyLong_CheckExact(weight) || !PyBytes_CheckExact(data)) {
        Py_CLEAR(sid); Py_CLEAR(flags); Py_CLEAR(present); Py_CLEAR(excl); Py_CLEAR(dep); Py_CLEAR(weight);
        Py_CLEAR(data);
        goto fallback;
    }
    sorted = PySequence_List(present);        /* repr(self.flags) is repr(sorted(self._flags)) */
    if (sorted == NULL || PyList_Sort(sorted) < 0) goto done;
    flags_repr = PyObject_Repr(sorted);
    if (flags_repr == NULL) goto done;
    const Py_ssize_t dlen = PyBytes_GET_SIZE(data);
    if (dlen == 0) {
        body = PyUnicode_FromString("None");
    }
    else {
        static const char hexdigits[] = "0123456789abcdef";
        const uint8_t *d = (const uint8_t *)PyBytes_AS_STRING(data);
        char hex[21];
        Py_ssize_t k, h = dlen < 10 ? dlen : 10;
        for (k = 0; k < h; k++) {
            hex[2 * k] = hexdigits[d[k] >> 4];
            hex[2 * k + 1] = hexdigits[d[k] & 0xF];
        }
        hex[2 * h] = '\0';
        body = PyUnicode_FromFormat("<hex:%s%s>", hex, dlen > 10 ? "..." : "");
    }
    if (body == NULL) goto done;
    if ((sid_str = PyObject_Str(sid)) == NULL || (dep_str = PyObject_Str(dep)) == NULL ||
        (weight_str = PyObject_Str(weight)) == NULL)
        goto done;
    name = PyType_GetName(Py_TYPE(self));
    if (name == NULL) goto done;
    res = PyUnicode_FromFormat("%U(stream_id=%U, flags=%U): exclusive=%s, depends_on=%U, stream_weight=%U, data=%U",
                               name, sid_str, flags_repr, excl == Py_True ? "True" : "False", dep_str, weight_str,
                               body);
done:
    Py_XDECREF(sid); Py_XDECREF(flags); Py_XDECREF(present); Py_XDECREF(excl); Py_XDECREF(dep);
    Py_XDECREF(weight); Py_XDECREF(data); Py_XDECREF(sorted); Py_XDECREF(flags_repr); Py_XDECREF(sid_str);
    Py_XDECREF(dep_str); Py_XDECREF(weight_str); Py_XDECREF(name); Py_XDECREF(body);
    return res;
fallback:
    if (H2F_fallback_repr == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "no frame classes registered");
        return NULL;
    }
    return PyObject_CallOneArg(H2F_fallback_repr, self);
}

static PyMethodDef h2f_headers_repr_def = {
    "__repr__", (PyCFunction)h2f_headers_frame_repr, METH_NOARGS,
    "hyperframe's repr of a HEADERS frame, built from the first 10 bytes of its header block."
};

/* register_h2_frame_classes(data_frame, flags, flag_names, fallback_repr,
 *                           headers_frame=None, headers_flag_names=None) */
static PyObject *
register_h2_frame_classes(PyObject *mod, PyObject *args)
{
    PyObject *data_cls, *flags_cls, *names, *fallback, *expected, *descr;
    PyObject *headers_cls = Py_None, *headers_names = Py_None;
    int same;
    if (!PyArg_ParseTuple(args, "O!O!OO|OO:register_h2_frame_classes", &PyType_Type, &data_cls, &PyType_Type,
                          &flags_cls, &names, &fallback, &headers_cls, &headers_names))
        return NULL;
    names = PySequence_Tuple(names);
    if (names == NULL) return NULL;
    expected = Py_BuildValue("(ss)", "END_STREAM", "PADDED");
    same = expected == NULL ? -1 : PyObject_RichCompareBool(names, expected, Py_EQ);
    Py_XDECREF(expected);
    if (same <= 0) {
        Py_DECREF(names);
        if (same == 0)
            PyErr_SetString(PyExc_ValueError, "flag_names must be ('END_STREAM', 'PADDED')");
        return NULL;
    }
    if (headers_cls != Py_None) {
        if (!PyType_Check(headers_cls)) {
            Py_DECREF(names);
            PyErr_SetString(PyExc_TypeError, "headers_frame must be a class");
            return NULL;
        }
        headers_names = PySequence_Tuple(headers_names);
        if (headers_names == NULL) { Py_DECREF(names); return NULL; }
        expected = Py_BuildValue("(ssss)", "END_STREAM", "END_HEADERS", "PADDED", "PRIORITY");
        same = expected == NULL ? -1 : PyObject_RichCompareBool(headers_names, expected, Py_EQ);
        Py_XDECREF(expected);
        if (same <= 0) {
            Py_DECREF(headers_names);
            Py_DECREF(names);
            if (same == 0)
                PyErr_SetString(PyExc_ValueError,
                                "headers_flag_names must be ('END_STREAM', 'END_HEADERS', 'PADDED', 'PRIORITY')");
            return NULL;
        }
        descr = PyDescr_NewMethod((PyTypeObject *)headers_cls, &h2f_headers_repr_def);
        if (descr == NULL || PyObject_SetAttrString(headers_cls, "__repr__", descr) < 0) {
            Py_XDECREF(descr);
            Py_DECREF(headers_names);
            Py_DECREF(names);
            return NULL;
        }
        Py_DECREF(descr);
        Py_XSETREF(H2F_headers_cls, Py_NewRef(headers_cls));
        Py_XSETREF(H2F_headers_flag_names, headers_names);
    }
    descr = PyDescr_NewMethod((PyTypeObject *)data_cls, &h2f_repr_def);
    if (descr == NULL || PyObject_SetAttrString(data_cls, "__repr__", descr) < 0) {
        Py_XDECREF(descr);
        Py_DECREF(names);
        return NULL;
    }
    Py_DECREF(descr);
    Py_XSETREF(H2F_data_cls, Py_NewRef(data_cls));
    Py_XSETREF(H2F_flags_cls, Py_NewRef(flags_cls));
    Py_XSETREF(H2F_flag_names, names);
    Py_XSETREF(H2F_fallback_repr, Py_NewRef(fallback));
    Py_RETURN_NONE;
}

/* A Python int as a long long, saturating (the twin compares unbounded ints). */
static int
as_saturated_ll(PyObject *o, long long *out)
{
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (v == -1 && PyErr_Occurred()) return -1;
    *out = overflow > 0 ? LLONG_MAX : overflow < 0 ? LLONG_MIN : v;
    return 0;
}

/* next_frame(data, base, max_frame_size, slice_bytes): see scanner.py H2Scanner.next_frame. */
static PyObject *
H2Scanner_next_frame(H2ScannerObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    long long base, mfs, slice;
    Py_buffer view;
    PyObject *res;

    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "next_frame(data, base, max_frame_size, slice_bytes) takes 4 arguments");
        return NULL;
    }
    if (as_saturated_ll(args[1], &base) < 0 || as_saturated_ll(args[2], &mfs) < 0 ||
        as_saturated_ll(args[3], &slice) < 0)
        return NULL;
    if (slice < 1) {
        PyErr_SetString(PyExc_ValueError, "slice_bytes must be positive");
        return NULL;
    }
    if (base < 0) {
        PyErr_SetString(PyExc_ValueError, "base must not be negative");
        return NULL;
    }
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0)
        return NULL;
    const uint8_t *p = (const uint8_t *)view.buf;
    const uint64_t n = (uint64_t)view.len, ubase = (uint64_t)base;
    h2_state *st = &self->st;
    h2_sink *sk = &self->sk;

    if (self->cursor >= sk->n) {
        if (ubase > st->pos) {
            PyBuffer_Release(&view);
            PyErr_SetString(PyExc_ValueError, "base is beyond the scanned offset");
            return NULL;
        }
        for (;;) {
            if (st->pos - ubase >= n) {         /* every byte scanned, no frame completed */
                PyBuffer_Release(&view);
                Py_RETURN_NONE;
            }
            uint64_t start = st->pos - ubase;
            uint64_t stop = (n - start > (uint64_t)slice) ? start + (uint64_t)slice : n;
            self->cursor = 0;
            sk->n = 0;
            int r = h2_run(st, p + start, (Py_ssize_t)(stop - start), sk);
            if (r == -1) {
                PyBuffer_Release(&view);
                return raise_frame_error("h2", st->err_code, st->err_off, st->err_reason, sk->n);
            }
            if (r == -2) {
                PyBuffer_Release(&view);
                return NULL;
            }
            if (sk->n)
                break;
        }
    }
    const Py_ssize_t k = self->cursor;
    const uint64_t off = sk->off[k];
    const uint32_t len = sk->len[k];
    if (off < ubase || off - ubase > n || n - (off - ubase) < len) {
        PyBuffer_Release(&view);
        PyErr_SetString(PyExc_ValueError, "data does not hold the frame");
        return NULL;
    }
    /* A HEADERS frame that ends its header block (the common case: one that does not is
     * held by h2's header-block assembly, left to hyperframe) and that hyperframe accepts:
     * on a stream, a Pad Length byte and priority fields that fit, padding shorter than
     * the rest (RFC 9113 section 6.2; hyperframe's parse_body checks). */
    if (sk->type[k] == H2_HEADERS && H2F_headers_cls != NULL && sk->sid[k] != 0 && (long long)len <= mfs &&
        (sk->flags[k] & F_END_HEADERS)) {
        const uint8_t *body = p + (off - ubase);
        const uint8_t fl = sk->flags[k];
        const uint32_t padded = (fl & F_PADDED) ? 1 : 0;
        if (len >= padded && len - padded >= ((fl & F_PRIORITY) ? 5u : 0u) &&
            !(padded && body[0] && body[0] >= len - padded)) {
            res = h2f_build_headers_frame(body, len, fl, sk->sid[k]);
            PyBuffer_Release(&view);
            if (res != NULL) {
                self->cursor = k + 1;
                self->consumed = off + len;
            }
            return res;
        }
    }
    if (sk->type[k] == H2_DATA && H2F_data_cls != NULL && sk->sid[k] != 0 && (long long)len <= mfs) {
        const uint8_t *body = p + (off - ubase);
        if (!(sk->flags[k] & F_PADDED) || (len && body[0] < len)) {
            res = h2f_build_data_frame(body, len, sk->flags[k], sk->sid[k]);
            PyBuffer_Release(&view);
            if (res != NULL) {
                self->cursor = k + 1;
                self->consumed = off + len;
            }
            return res;
        }
    }
    PyBuffer_Release(&view);
    return h2_record(sk, k);
}

static PyObject *
H2Scanner_consume(H2ScannerObject *self, PyObject *Py_UNUSED(ignored))
{
    if (self->cursor >= self->sk.n) {
        PyErr_SetString(PyExc_ValueError, "no frame to consume");
        return NULL;
    }
    self->consumed = self->sk.off[self->cursor] + self->sk.len[self->cursor];
    self->cursor++;
    Py_RETURN_NONE;
}

static PyObject *
H2Scanner_get_consumed(H2ScannerObject *self, void *c) { return PyLong_FromUnsignedLongLong(self->consumed); }

static PyMethodDef H2Scanner_methods[] = {
    {"feed", (PyCFunction)H2Scanner_feed, METH_O,
     "feed(data) -> int: scan a chunk; returns how many frames it completed (see results())."},
    {"results", (PyCFunction)H2Scanner_results, METH_NOARGS,
     "results() -> list of (type, flags, stream_id, payload_offset, payload_length) from the last feed."},
    {"feed_frames", (PyCFunction)H2Scanner_feed_frames, METH_O,
     "feed_frames(data) -> list of (type, flags, stream_id, payload bytes): feed, and the frames the chunk\n"
     "completed with their payloads; the scanner keeps its incomplete frame's bytes (feed it only so)."},
    {"results_into", (PyCFunction)H2Scanner_results_into, METH_VARARGS,
     "results_into(out, start=0) -> int: copy the last feed's records into 5 arrays (types B, flags B,\n"
     "stream ids I, payload offsets Q, payload lengths I) at index start."},
    {"finish", (PyCFunction)H2Scanner_finish, METH_NOARGS,
     "finish(): raise FrameError if the stream failed or ends inside a frame."},
    {"next_frame", (PyCFunction)(void (*)(void))H2Scanner_next_frame, METH_FASTCALL,
     "next_frame(data, base, max_frame_size, slice_bytes) -> None, a DATA frame object or a record:\n"
     "the next frame of h2's receive buffer (see simulator.frames.h2buffer)."},
    {"consume", (PyCFunction)H2Scanner_consume, METH_NOARGS,
     "consume(): count the record next_frame returned as handed out."},
    {NULL}
};

static PyGetSetDef H2Scanner_getset[] = {
    {"offset", (getter)H2Scanner_get_offset, NULL, "bytes consumed so far (absolute stream offset)", NULL},
    {"frames", (getter)H2Scanner_get_frames, NULL, "frames completed so far", NULL},
    {"pending", (getter)H2Scanner_get_pending, NULL, "bytes of an incomplete frame (or preface) held in state", NULL},
    {"allocations", (getter)H2Scanner_get_allocations, NULL, "heap (re)allocations made by this scanner", NULL},
    {"validate", (getter)H2Scanner_get_validate, NULL, "whether RFC 9113 frame checks are applied", NULL},
    {"open_header_block", (getter)H2Scanner_get_open_block, NULL, "stream id of an unfinished header block, or 0", NULL},
    {"max_frame_size", (getter)H2Scanner_get_max, (setter)H2Scanner_set_max, "SETTINGS_MAX_FRAME_SIZE in force", NULL},
    {"error", (getter)H2Scanner_get_error, NULL, "the FrameError the stream failed with, or None", NULL},
    {"current", (getter)H2Scanner_get_current, NULL, "the incomplete frame whose header is known, or None", NULL},
    {"consumed", (getter)H2Scanner_get_consumed, NULL, "absolute offset after the last frame next_frame handed out", NULL},
    {NULL}
};

static PySequenceMethods H2Scanner_as_sequence = {
    .sq_length = (lenfunc)H2Scanner_len,
    .sq_item = (ssizeargfunc)H2Scanner_item,
};

static PyTypeObject H2ScannerType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "simulator.frames._scanner.H2Scanner",
    .tp_basicsize = sizeof(H2ScannerObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "H2Scanner(max_frame_size=16384, *, preface=False, validate=True): incremental HTTP/2 frame scanner.\n"
              "preface: True expects the client connection preface, None detects it, False none.",
    .tp_new = H2Scanner_new,
    .tp_init = (initproc)H2Scanner_init,
    .tp_dealloc = (destructor)H2Scanner_dealloc,
    .tp_methods = H2Scanner_methods,
    .tp_getset = H2Scanner_getset,
    .tp_as_sequence = &H2Scanner_as_sequence,
};

/* ---- bulk ---- */

static int
get_out_buffer(PyObject *obj, Py_buffer *view, Py_ssize_t itemsize, Py_ssize_t *cap)
{
    if (PyObject_GetBuffer(obj, view, PyBUF_WRITABLE) < 0)
        return -1;
    Py_ssize_t n = view->len / itemsize;
    if (n < *cap) *cap = n;
    return 0;
}

/* scan_h2(data, out, max_frame_size, preface, validate) -> (count, end, error, pending)
 * out is None (count only) or a tuple of 5 writable buffers: types (1 byte), flags
 * (1 byte), stream ids (4 bytes), payload offsets (8 bytes), payload lengths (4 bytes). */
static PyObject *
scan_h2(PyObject *mod, PyObject *args)
{
    PyObject *data, *out, *preface, *err = NULL, *res;
    long long mfs;
    int validate, mode, r;
    Py_buffer in, ob[5];
    int nob = 0;
    h2_state st;
    h2_sink sk;
    uint64_t end;

    if (!PyArg_ParseTuple(args, "OOLOp:scan_h2", &data, &out, &mfs, &preface, &validate))
        return NULL;
    if (check_max_frame_size(mfs) < 0 || parse_preface_arg(preface, &mode) < 0)
        return NULL;
    memset(&sk, 0, sizeof(sk));
    if (out == Py_None) {
        sk.counting = 1;
    }
    else {
        static const Py_ssize_t sizes[5] = {1, 1, 4, 8, 4};
        if (!PyTuple_Check(out) || PyTuple_GET_SIZE(out) != 5) {
            PyErr_SetString(PyExc_TypeError, "out must be None or a tuple of 5 buffers");
            return NULL;
        }
        sk.cap = PY_SSIZE_T_MAX;
        for (nob = 0; nob < 5; nob++) {
            if (get_out_buffer(PyTuple_GET_ITEM(out, nob), &ob[nob], sizes[nob], &sk.cap) < 0)
                goto fail;
        }
        sk.type = ob[0].buf; sk.flags = ob[1].buf; sk.sid = ob[2].buf; sk.off = ob[3].buf; sk.len = ob[4].buf;
    }
    if (PyObject_GetBuffer(data, &in, PyBUF_SIMPLE) < 0)
        goto fail;
    h2_init(&st, (uint32_t)mfs, mode, validate);
    r = h2_run(&st, (const uint8_t *)in.buf, in.len, &sk);
    PyBuffer_Release(&in);
    if (r == -2)
        goto fail;
    if (r == -1) {
        err = make_frame_error("h2", st.err_code, st.err_off, st.err_reason, sk.n);
        if (err == NULL) goto fail;
        end = st.err_off;
    }
    else {
        end = st.pos - h2_pending(&st);
        err = Py_NewRef(Py_None);
    }
    for (int k = 0; k < nob; k++) PyBuffer_Release(&ob[k]);
    res = Py_BuildValue("(nKNK)", sk.n, (unsigned long long)end, err,
                        (unsigned long long)(r == -1 ? 0 : h2_pending(&st)));
    return res;

fail:
    for (int k = 0; k < nob; k++) PyBuffer_Release(&ob[k]);
    return NULL;
}

/* ------------------------------------------------------------------------------ */
/* QUIC variable-length integers (RFC 9000 section 16)                              */

static PyObject *
decode_varint(PyObject *mod, PyObject *args)
{
    Py_buffer v;
    Py_ssize_t pos = 0;
    PyObject *res;
    if (!PyArg_ParseTuple(args, "y*|n:decode_varint", &v, &pos))
        return NULL;
    if (pos < 0 || pos > v.len) {
        PyBuffer_Release(&v);
        PyErr_SetString(PyExc_ValueError, "pos out of range");
        return NULL;
    }
    const uint8_t *p = (const uint8_t *)v.buf;
    if (pos >= v.len) {
        PyBuffer_Release(&v);
        Py_RETURN_NONE;
    }
    Py_ssize_t len = (Py_ssize_t)1 << (p[pos] >> 6);
    if (v.len - pos < len) {
        PyBuffer_Release(&v);
        Py_RETURN_NONE;
    }
    uint64_t x = p[pos] & 0x3F;
    for (Py_ssize_t k = 1; k < len; k++)
        x = (x << 8) | p[pos + k];
    res = Py_BuildValue("(Kn)", (unsigned long long)x, pos + len);
    PyBuffer_Release(&v);
    return res;
}

static PyObject *
encode_varint(PyObject *mod, PyObject *arg)
{
    uint8_t buf[8];
    int len;
    unsigned long long x = PyLong_AsUnsignedLongLong(arg);
    if (x == (unsigned long long)-1 && PyErr_Occurred()) {
        if (PyErr_ExceptionMatches(PyExc_OverflowError)) {
            PyErr_Clear();
            PyErr_SetString(IntegerError, "varint out of range 0..2**62-1");
        }
        return NULL;
    }
    if (x > VARINT_MAX) {
        PyErr_SetString(IntegerError, "varint out of range 0..2**62-1");
        return NULL;
    }
    if (x < 0x40) len = 1;
    else if (x < 0x4000) len = 2;
    else if (x < 0x40000000) len = 4;
    else len = 8;
    for (int k = len - 1; k >= 0; k--) { buf[k] = (uint8_t)(x & 0xFF); x >>= 8; }
    buf[0] |= (uint8_t)((len == 1 ? 0 : len == 2 ? 1 : len == 4 ? 2 : 3) << 6);
    return PyBytes_FromStringAndSize((const char *)buf, len);
}

/* ---- VarintDecoder: incremental ---- */

typedef struct {
    PyObject_HEAD
    uint64_t val;
    uint8_t have, need;
    uint64_t offset;
} VarintDecoderObject;

static PyObject *
VarintDecoder_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwds, ":VarintDecoder", kwlist))
        return NULL;
    VarintDecoderObject *self = (VarintDecoderObject *)type->tp_alloc(type, 0);
    return (PyObject *)self;
}

static PyObject *
VarintDecoder_feed(VarintDecoderObject *self, PyObject *data)
{
    Py_buffer v;
    PyObject *list;
    if (PyObject_GetBuffer(data, &v, PyBUF_SIMPLE) < 0)
        return NULL;
    list = PyList_New(0);
    if (list == NULL) { PyBuffer_Release(&v); return NULL; }
    const uint8_t *p = (const uint8_t *)v.buf;
    for (Py_ssize_t i = 0; i < v.len; i++) {
        if (self->have == 0) {
            self->need = (uint8_t)(1u << (p[i] >> 6));
            self->val = p[i] & 0x3F;
        }
        else {
            self->val = (self->val << 8) | p[i];
        }
        if (++self->have == self->need) {
            PyObject *x = PyLong_FromUnsignedLongLong(self->val);
            if (x == NULL || PyList_Append(list, x) < 0) {
                Py_XDECREF(x);
                Py_DECREF(list);
                PyBuffer_Release(&v);
                return NULL;
            }
            Py_DECREF(x);
            self->have = 0;
        }
    }
    self->offset += (uint64_t)v.len;
    PyBuffer_Release(&v);
    return list;
}

static PyObject *
VarintDecoder_get_pending(VarintDecoderObject *self, void *c) { return PyLong_FromLong(self->have); }

static PyMethodDef VarintDecoder_methods[] = {
    {"feed", (PyCFunction)VarintDecoder_feed, METH_O, "feed(data) -> list of the varints completed."},
    {NULL}
};
static PyGetSetDef VarintDecoder_getset[] = {
    {"pending", (getter)VarintDecoder_get_pending, NULL, "bytes of a partial varint held", NULL},
    {NULL}
};
static PyTypeObject VarintDecoderType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "simulator.frames._scanner.VarintDecoder",
    .tp_basicsize = sizeof(VarintDecoderObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "VarintDecoder(): incremental decoder of a sequence of QUIC varints.",
    .tp_new = VarintDecoder_new,
    .tp_methods = VarintDecoder_methods,
    .tp_getset = VarintDecoder_getset,
};

/* ------------------------------------------------------------------------------ */
/* HTTP/3 (RFC 9114 section 7)                                                      */

enum {
    H3_DATA = 0x0, H3_HEADERS = 0x1, H3_CANCEL_PUSH = 0x3, H3_SETTINGS = 0x4,
    H3_PUSH_PROMISE = 0x5, H3_GOAWAY = 0x7, H3_MAX_PUSH_ID = 0xD
};
enum {
    H3_FRAME_UNEXPECTED = 0x105, H3_FRAME_ERROR = 0x106, H3_EXCESSIVE_LOAD = 0x107,
    H3_SETTINGS_ERROR = 0x109, H3_MISSING_SETTINGS = 0x10A
};
enum { KIND_ANY = 0, KIND_CONTROL = 1, KIND_REQUEST = 2, KIND_PUSH = 3 };
enum { PV_NONE = 0, PV_ONE = 1, PV_SETTINGS = 2, PV_PUSH_ID = 3 };
enum { MSG_INIT = 0, MSG_HEADERS = 1, MSG_DATA = 2, MSG_TRAILERS = 3 };

typedef struct {
    uint64_t pos, fstart, pstart, frames;
    uint64_t max_frame_size;     /* 0: no limit */
    uint64_t ftype, flen, remaining;
    uint64_t v_val, pv_val, pv_count;
    uint8_t validate, kind, phase;  /* 0: type, 1: length, 2: payload */
    uint8_t v_have, v_need;
    uint8_t pv_mode, pv_have, pv_need;
    uint8_t seen_frame, msg_state;
    uint8_t failed;
    int err_code;
    uint64_t err_off;
    const char *err_reason;
} h3_state;

typedef struct {
    uint64_t *type, *off, *len;
    Py_ssize_t n, cap;
    int counting, growable;
    Py_ssize_t *allocations;
} h3_sink;

static void
h3_init(h3_state *st, uint64_t max_frame_size, int kind, int validate)
{
    memset(st, 0, sizeof(*st));
    st->max_frame_size = max_frame_size;
    st->kind = (uint8_t)kind;
    st->validate = (uint8_t)(validate != 0);
}

static int
h3_fail(h3_state *st, int code, const char *reason)
{
    st->failed = 1;
    st->err_code = code;
    st->err_off = st->fstart;
    st->err_reason = reason;
    return -1;
}

static int
h3_sink_grow(h3_sink *sk)
{
    Py_ssize_t cap = sk->cap ? sk->cap * 2 : 64;
    if (!sk->growable) {
        PyErr_SetString(PyExc_ValueError, "output arrays are too small");
        return -1;
    }
    if (cap > PY_SSIZE_T_MAX / 8) { PyErr_NoMemory(); return -1; }
    void *a = PyMem_Realloc(sk->type, (size_t)cap * 8);
    if (a) sk->type = a;
    void *b = PyMem_Realloc(sk->off, (size_t)cap * 8);
    if (b) sk->off = b;
    void *c = PyMem_Realloc(sk->len, (size_t)cap * 8);
    if (c) sk->len = c;
    if (sk->allocations) *sk->allocations += 3;
    if (!a || !b || !c) { PyErr_NoMemory(); return -1; }
    sk->cap = cap;
    return 0;
}

static inline int
h3_emit(h3_state *st, h3_sink *sk)
{
    if (!sk->counting) {
        if (sk->n >= sk->cap && h3_sink_grow(sk) < 0)
            return -1;
        sk->type[sk->n] = st->ftype;
        sk->off[sk->n] = st->pstart;
        sk->len[sk->n] = st->flen;
    }
    sk->n++;
    st->frames++;
    st->seen_frame = 1;
    return 0;
}

/* Checks once type and length are known (RFC 9114 sections 4.1, 6.2.1, 7.1, 7.2). */
static int
h3_check_header(h3_state *st)
{
    const uint64_t t = st->ftype;
    if (t == 0x2 || t == 0x6 || t == 0x8 || t == 0x9)
        return h3_fail(st, H3_FRAME_UNEXPECTED, "reserved HTTP/2 frame type");
    if (st->max_frame_size && st->flen > st->max_frame_size)
        return h3_fail(st, H3_EXCESSIVE_LOAD, "frame length exceeds the configured limit");
    if (st->kind == KIND_CONTROL) {
        if (!st->seen_frame && t != H3_SETTINGS)
            return h3_fail(st, H3_MISSING_SETTINGS, "control stream does not start with SETTINGS");
        if (st->seen_frame && t == H3_SETTINGS)
            return h3_fail(st, H3_FRAME_UNEXPECTED, "second SETTINGS frame on the control stream");
        if (t == H3_DATA || t == H3_HEADERS || t == H3_PUSH_PROMISE)
            return h3_fail(st, H3_FRAME_UNEXPECTED, "frame not allowed on the control stream");
    }
    else if (st->kind == KIND_REQUEST || st->kind == KIND_PUSH) {
        if (t == H3_SETTINGS || t == H3_CANCEL_PUSH || t == H3_GOAWAY || t == H3_MAX_PUSH_ID)
            return h3_fail(st, H3_FRAME_UNEXPECTED, "control frame on a request or push stream");
        if (st->kind == KIND_PUSH && t == H3_PUSH_PROMISE)
            return h3_fail(st, H3_FRAME_UNEXPECTED, "PUSH_PROMISE on a push stream");
        if (t == H3_DATA) {
            if (st->msg_state == MSG_INIT || st->msg_state == MSG_TRAILERS)
                return h3_fail(st, H3_FRAME_UNEXPECTED, "DATA frame outside a message body");
            st->msg_state = MSG_DATA;
        }
        else if (t == H3_HEADERS) {
            if (st->msg_state == MSG_TRAILERS)
                return h3_fail(st, H3_FRAME_UNEXPECTED, "HEADERS frame after trailers");
            st->msg_state = st->msg_state == MSG_DATA ? MSG_TRAILERS : MSG_HEADERS;
        }
    }
    switch (t) {
    case H3_CANCEL_PUSH: case H3_GOAWAY: case H3_MAX_PUSH_ID: st->pv_mode = PV_ONE; break;
    case H3_SETTINGS: st->pv_mode = PV_SETTINGS; break;
    case H3_PUSH_PROMISE: st->pv_mode = PV_PUSH_ID; break;
    default: st->pv_mode = PV_NONE; break;
    }
    st->pv_have = 0;
    st->pv_count = 0;
    return 0;
}

/* Walk payload bytes that carry varints (small frames only). */
static int
h3_walk(h3_state *st, const uint8_t *p, Py_ssize_t n)
{
    for (Py_ssize_t i = 0; i < n; i++) {
        if (st->pv_mode == PV_PUSH_ID && st->pv_count >= 1)
            return 0;       /* the rest is the encoded field section */
        if (st->pv_mode == PV_ONE && st->pv_count >= 1)
            return h3_fail(st, H3_FRAME_ERROR, "extra bytes after the frame's fields");
        if (st->pv_have == 0) {
            st->pv_need = (uint8_t)(1u << (p[i] >> 6));
            st->pv_val = p[i] & 0x3F;
        }
        else {
            st->pv_val = (st->pv_val << 8) | p[i];
        }
        if (++st->pv_have == st->pv_need) {
            st->pv_have = 0;
            st->pv_count++;
            if (st->pv_mode == PV_SETTINGS && (st->pv_count & 1) && st->pv_val >= 0x2 && st->pv_val <= 0x5)
                return h3_fail(st, H3_SETTINGS_ERROR, "reserved HTTP/2 setting identifier in SETTINGS");
        }
    }
    return 0;
}

static int
h3_check_end(h3_state *st)
{
    switch (st->pv_mode) {
    case PV_ONE:
        if (st->pv_count != 1 || st->pv_have)
            return h3_fail(st, H3_FRAME_ERROR, "frame payload does not hold exactly one varint");
        break;
    case PV_SETTINGS:
        if (st->pv_have || (st->pv_count & 1))
            return h3_fail(st, H3_FRAME_ERROR, "SETTINGS payload ends inside a setting");
        break;
    case PV_PUSH_ID:
        if (st->pv_count < 1)
            return h3_fail(st, H3_FRAME_ERROR, "PUSH_PROMISE payload ends inside the push ID");
        break;
    default:
        break;
    }
    return 0;
}

static int
h3_run(h3_state *st, const uint8_t *p, Py_ssize_t n, h3_sink *sk)
{
    const uint64_t base = st->pos;
    Py_ssize_t i = 0;

    if (st->failed)
        return -1;
    while (i < n) {
        if (st->phase < 2) {
            if (st->v_have == 0) {
                if (st->phase == 0)
                    st->fstart = base + (uint64_t)i;
                st->v_need = (uint8_t)(1u << (p[i] >> 6));
                st->v_val = p[i] & 0x3F;
                st->v_have = 1;
                i++;
            }
            while (st->v_have < st->v_need && i < n) {
                st->v_val = (st->v_val << 8) | p[i++];
                st->v_have++;
            }
            if (st->v_have < st->v_need)
                break;
            st->v_have = 0;
            if (st->phase == 0) {
                st->ftype = st->v_val;
                st->phase = 1;
                continue;
            }
            st->flen = st->v_val;
            st->pstart = base + (uint64_t)i;
            if (st->validate) {
                if (h3_check_header(st) < 0) goto failed;
            }
            st->remaining = st->flen;
            st->phase = 2;
        }
        /* payload */
        Py_ssize_t take = n - i;
        if ((uint64_t)take > st->remaining)
            take = (Py_ssize_t)st->remaining;
        if (st->validate && st->pv_mode != PV_NONE) {
            if (h3_walk(st, p + i, take) < 0) goto failed;
        }
        i += take;
        st->remaining -= (uint64_t)take;
        if (st->remaining)
            break;
        if (st->validate) {
            if (h3_check_end(st) < 0) goto failed;
        }
        st->phase = 0;
        if (h3_emit(st, sk) < 0) {
            st->pos = base + (uint64_t)i;
            return -2;
        }
    }
    st->pos = base + (uint64_t)n;
    return 0;

failed:
    st->pos = st->fstart;
    return -1;
}

static uint64_t
h3_pending(const h3_state *st)
{
    if (st->phase == 0 && st->v_have == 0)
        return 0;
    return st->pos - st->fstart;
}

typedef struct {
    PyObject_HEAD
    h3_state st;
    h3_sink sk;
    Py_ssize_t allocations;
    carry_buf carry;          /* feed_frames: the incomplete frame's bytes */
} H3ScannerObject;

static int
parse_kind(const char *kind)
{
    if (kind == NULL) return KIND_ANY;
    if (strcmp(kind, "control") == 0) return KIND_CONTROL;
    if (strcmp(kind, "request") == 0) return KIND_REQUEST;
    if (strcmp(kind, "push") == 0) return KIND_PUSH;
    PyErr_SetString(PyExc_ValueError, "kind must be None, 'control', 'request' or 'push'");
    return -1;
}

static int
parse_h3_max(PyObject *obj, uint64_t *out)
{
    if (obj == Py_None) { *out = 0; return 0; }
    unsigned long long v = PyLong_AsUnsignedLongLong(obj);
    if (v == (unsigned long long)-1 && PyErr_Occurred()) return -1;
    if (v == 0) {
        PyErr_SetString(PyExc_ValueError, "max_frame_size must be positive or None");
        return -1;
    }
    *out = v;
    return 0;
}

static PyObject *
H3Scanner_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    H3ScannerObject *self = (H3ScannerObject *)type->tp_alloc(type, 0);
    if (self == NULL) return NULL;
    memset(&self->sk, 0, sizeof(self->sk));
    memset(&self->carry, 0, sizeof(self->carry));
    self->sk.growable = 1;
    self->sk.allocations = &self->allocations;
    h3_init(&self->st, 0, KIND_ANY, 1);
    return (PyObject *)self;
}

static int
H3Scanner_init(H3ScannerObject *self, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"max_frame_size", "kind", "validate", NULL};
    PyObject *mfs = Py_None;
    const char *kind = NULL;
    int validate = 1, k;
    uint64_t m = 0;
    /* H3Scanner(kind="request"), a receiver's once per stream, read without the general
     * parser (which costs as much as scanning a small stream); anything else goes to it. */
    if (PyTuple_GET_SIZE(args) == 0 && kwds != NULL && PyDict_GET_SIZE(kwds) == 1) {
        PyObject *given = PyDict_GetItemWithError(kwds, S_kind);
        if (given == NULL && PyErr_Occurred())
            return -1;
        Py_ssize_t size;
        kind = (given != NULL && PyUnicode_CheckExact(given)) ? PyUnicode_AsUTF8AndSize(given, &size) : NULL;
        if (kind == NULL && PyErr_Occurred())
            return -1;
        if (kind != NULL && strlen(kind) == (size_t)size) {
            if ((k = parse_kind(kind)) < 0)
                return -1;
            h3_init(&self->st, 0, k, 1);
            self->sk.n = 0;
            self->carry.len = 0;
            return 0;
        }
        kind = NULL;
    }
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "|O$zp:H3Scanner", kwlist, &mfs, &kind, &validate))
        return -1;
    if (parse_h3_max(mfs, &m) < 0 || (k = parse_kind(kind)) < 0)
        return -1;
    h3_init(&self->st, m, k, validate);
    self->sk.n = 0;
    self->carry.len = 0;
    return 0;
}

static void
H3Scanner_dealloc(H3ScannerObject *self)
{
    PyMem_Free(self->sk.type);
    PyMem_Free(self->sk.off);
    PyMem_Free(self->sk.len);
    PyMem_Free(self->carry.buf);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *
H3Scanner_feed(H3ScannerObject *self, PyObject *data)
{
    Py_buffer view;
    int r;
    if (PyObject_GetBuffer(data, &view, PyBUF_SIMPLE) < 0)
        return NULL;
    self->sk.n = 0;
    r = h3_run(&self->st, (const uint8_t *)view.buf, view.len, &self->sk);
    PyBuffer_Release(&view);
    if (r == -1)
        return raise_frame_error("h3", self->st.err_code, self->st.err_off, self->st.err_reason, self->sk.n);
    if (r == -2)
        return NULL;
    return PyLong_FromSsize_t(self->sk.n);
}

/* feed_frames(data): feed, then each frame completed as (type, payload) with the payload as
 * bytes; the incomplete frame's bytes are kept for the next call. */
static PyObject *
H3Scanner_feed_frames(H3ScannerObject *self, PyObject *data)
{
    Py_buffer view;
    PyObject *list = NULL;
    const uint64_t base = self->st.pos;
    int r;
    if (!self->st.failed && carry_check(&self->carry, h3_pending(&self->st)) < 0)
        return NULL;
    if (PyObject_GetBuffer(data, &view, PyBUF_SIMPLE) < 0)
        return NULL;
    const uint8_t *p = (const uint8_t *)view.buf;
    self->sk.n = 0;
    r = h3_run(&self->st, p, view.len, &self->sk);
    if (r == -1) {
        PyBuffer_Release(&view);
        return raise_frame_error("h3", self->st.err_code, self->st.err_off, self->st.err_reason, self->sk.n);
    }
    if (r == -2)
        goto done;
    list = PyList_New(self->sk.n);
    if (list == NULL)
        goto done;
    for (Py_ssize_t k = 0; k < self->sk.n; k++) {
        PyObject *payload = carry_payload(&self->carry, p, base, self->sk.off[k], self->sk.len[k]);
        PyObject *t = payload ? PyTuple_New(2) : NULL;
        PyObject *a = t ? PyLong_FromUnsignedLongLong(self->sk.type[k]) : NULL;
        if (a == NULL) {
            Py_XDECREF(payload); Py_XDECREF(t);
            Py_CLEAR(list);
            goto done;
        }
        PyTuple_SET_ITEM(t, 0, a);
        PyTuple_SET_ITEM(t, 1, payload);
        PyList_SET_ITEM(list, k, t);
    }
    if (carry_keep(&self->carry, p, view.len, h3_pending(&self->st)) < 0)
        Py_CLEAR(list);
done:
    PyBuffer_Release(&view);
    return list;
}

static PyObject *
h3_record(const h3_sink *sk, Py_ssize_t k)
{
    return Py_BuildValue("(KKK)", (unsigned long long)sk->type[k], (unsigned long long)sk->off[k],
                         (unsigned long long)sk->len[k]);
}

static PyObject *
H3Scanner_results(H3ScannerObject *self, PyObject *Py_UNUSED(ignored))
{
    PyObject *list = PyList_New(self->sk.n);
    if (list == NULL) return NULL;
    for (Py_ssize_t k = 0; k < self->sk.n; k++) {
        PyObject *t = h3_record(&self->sk, k);
        if (t == NULL) { Py_DECREF(list); return NULL; }
        PyList_SET_ITEM(list, k, t);
    }
    return list;
}

static PyObject *
H3Scanner_results_into(H3ScannerObject *self, PyObject *args)
{
    static const Py_ssize_t sizes[3] = {8, 8, 8};
    PyObject *out;
    Py_ssize_t start = 0, cap, n = self->sk.n;
    Py_buffer ob[3];
    if (!PyArg_ParseTuple(args, "O|n:results_into", &out, &start))
        return NULL;
    if (get_out_buffers(out, 3, sizes, ob, &cap) < 0)
        return NULL;
    if (start < 0 || start > cap || cap - start < n) {
        for (int k = 0; k < 3; k++) PyBuffer_Release(&ob[k]);
        PyErr_SetString(PyExc_ValueError, "output arrays are too small");
        return NULL;
    }
    if (n) {
        memcpy((uint64_t *)ob[0].buf + start, self->sk.type, (size_t)n * 8);
        memcpy((uint64_t *)ob[1].buf + start, self->sk.off, (size_t)n * 8);
        memcpy((uint64_t *)ob[2].buf + start, self->sk.len, (size_t)n * 8);
    }
    for (int k = 0; k < 3; k++) PyBuffer_Release(&ob[k]);
    return PyLong_FromSsize_t(n);
}

static Py_ssize_t
H3Scanner_len(H3ScannerObject *self) { return self->sk.n; }

static PyObject *
H3Scanner_item(H3ScannerObject *self, Py_ssize_t k)
{
    if (k < 0 || k >= self->sk.n) {
        PyErr_SetString(PyExc_IndexError, "frame index out of range");
        return NULL;
    }
    return h3_record(&self->sk, k);
}

static PyObject *
H3Scanner_finish(H3ScannerObject *self, PyObject *Py_UNUSED(ignored))
{
    if (self->st.failed)
        return raise_frame_error("h3", self->st.err_code, self->st.err_off, self->st.err_reason, 0);
    if (h3_pending(&self->st))
        return raise_frame_error("h3", H3_FRAME_ERROR, self->st.fstart, "stream ends inside a frame", 0);
    Py_RETURN_NONE;
}

static PyObject *
H3Scanner_get_offset(H3ScannerObject *self, void *c) { return PyLong_FromUnsignedLongLong(self->st.pos); }
static PyObject *
H3Scanner_get_frames(H3ScannerObject *self, void *c) { return PyLong_FromUnsignedLongLong(self->st.frames); }
static PyObject *
H3Scanner_get_pending(H3ScannerObject *self, void *c) { return PyLong_FromUnsignedLongLong(h3_pending(&self->st)); }
static PyObject *
H3Scanner_get_allocations(H3ScannerObject *self, void *c) { return PyLong_FromSsize_t(self->allocations); }
static PyObject *
H3Scanner_get_error(H3ScannerObject *self, void *c)
{
    if (!self->st.failed) Py_RETURN_NONE;
    return make_frame_error("h3", self->st.err_code, self->st.err_off, self->st.err_reason, 0);
}
static PyObject *
H3Scanner_get_current(H3ScannerObject *self, void *c)
{
    if (self->st.phase != 2) Py_RETURN_NONE;
    return Py_BuildValue("(KKK)", (unsigned long long)self->st.ftype, (unsigned long long)self->st.pstart,
                         (unsigned long long)self->st.flen);
}

static PyMethodDef H3Scanner_methods[] = {
    {"feed", (PyCFunction)H3Scanner_feed, METH_O,
     "feed(data) -> int: scan a chunk; returns how many frames it completed (see results())."},
    {"results", (PyCFunction)H3Scanner_results, METH_NOARGS,
     "results() -> list of (type, payload_offset, payload_length) from the last feed."},
    {"feed_frames", (PyCFunction)H3Scanner_feed_frames, METH_O,
     "feed_frames(data) -> list of (type, payload bytes): feed, and the frames the chunk completed with\n"
     "their payloads; the scanner keeps its incomplete frame's bytes (feed it only so)."},
    {"results_into", (PyCFunction)H3Scanner_results_into, METH_VARARGS,
     "results_into(out, start=0) -> int: copy the last feed's records into 3 arrays of 8-byte items."},
    {"finish", (PyCFunction)H3Scanner_finish, METH_NOARGS,
     "finish(): raise FrameError if the stream failed or ends inside a frame (H3_FRAME_ERROR)."},
    {NULL}
};

static PyGetSetDef H3Scanner_getset[] = {
    {"offset", (getter)H3Scanner_get_offset, NULL, "bytes consumed so far", NULL},
    {"frames", (getter)H3Scanner_get_frames, NULL, "frames completed so far", NULL},
    {"pending", (getter)H3Scanner_get_pending, NULL, "bytes of an incomplete frame held in state", NULL},
    {"allocations", (getter)H3Scanner_get_allocations, NULL, "heap (re)allocations made by this scanner", NULL},
    {"error", (getter)H3Scanner_get_error, NULL, "the FrameError the stream failed with, or None", NULL},
    {"current", (getter)H3Scanner_get_current, NULL, "the incomplete frame whose header is known, or None", NULL},
    {NULL}
};

static PySequenceMethods H3Scanner_as_sequence = {
    .sq_length = (lenfunc)H3Scanner_len,
    .sq_item = (ssizeargfunc)H3Scanner_item,
};

static PyTypeObject H3ScannerType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "simulator.frames._scanner.H3Scanner",
    .tp_basicsize = sizeof(H3ScannerObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "H3Scanner(max_frame_size=None, *, kind=None, validate=True): incremental HTTP/3 frame scanner\n"
              "for one stream; kind is None, 'control', 'request' or 'push'.",
    .tp_new = H3Scanner_new,
    .tp_init = (initproc)H3Scanner_init,
    .tp_dealloc = (destructor)H3Scanner_dealloc,
    .tp_methods = H3Scanner_methods,
    .tp_getset = H3Scanner_getset,
    .tp_as_sequence = &H3Scanner_as_sequence,
};

/* scan_h3(data, out, max_frame_size, kind, validate) -> (count, end, error, pending)
 * out is None or a tuple of 3 writable buffers of 8-byte items: types, offsets, lengths. */
static PyObject *
scan_h3(PyObject *mod, PyObject *args)
{
    PyObject *data, *out, *mfs, *err;
    const char *kind;
    int validate, k, r, nob = 0;
    uint64_t m, end;
    Py_buffer in, ob[3];
    h3_state st;
    h3_sink sk;

    if (!PyArg_ParseTuple(args, "OOOzp:scan_h3", &data, &out, &mfs, &kind, &validate))
        return NULL;
    if (parse_h3_max(mfs, &m) < 0 || (k = parse_kind(kind)) < 0)
        return NULL;
    memset(&sk, 0, sizeof(sk));
    if (out == Py_None) {
        sk.counting = 1;
    }
    else {
        if (!PyTuple_Check(out) || PyTuple_GET_SIZE(out) != 3) {
            PyErr_SetString(PyExc_TypeError, "out must be None or a tuple of 3 buffers");
            return NULL;
        }
        sk.cap = PY_SSIZE_T_MAX;
        for (nob = 0; nob < 3; nob++) {
            if (get_out_buffer(PyTuple_GET_ITEM(out, nob), &ob[nob], 8, &sk.cap) < 0)
                goto fail;
        }
        sk.type = ob[0].buf; sk.off = ob[1].buf; sk.len = ob[2].buf;
    }
    if (PyObject_GetBuffer(data, &in, PyBUF_SIMPLE) < 0)
        goto fail;
    h3_init(&st, m, k, validate);
    r = h3_run(&st, (const uint8_t *)in.buf, in.len, &sk);
    PyBuffer_Release(&in);
    if (r == -2)
        goto fail;
    if (r == -1) {
        err = make_frame_error("h3", st.err_code, st.err_off, st.err_reason, sk.n);
        if (err == NULL) goto fail;
        end = st.err_off;
    }
    else {
        err = Py_NewRef(Py_None);
        end = st.pos - h3_pending(&st);
    }
    for (int j = 0; j < nob; j++) PyBuffer_Release(&ob[j]);
    return Py_BuildValue("(nKNK)", sk.n, (unsigned long long)end, err,
                         (unsigned long long)(r == -1 ? 0 : h3_pending(&st)));
fail:
    for (int j = 0; j < nob; j++) PyBuffer_Release(&ob[j]);
    return NULL;
}

/* ------------------------------------------------------------------------------ */
/* HPACK/QPACK prefixed integers (RFC 7541 section 5.1)                              */

static PyObject *
decode_int(PyObject *mod, PyObject *args)
{
    Py_buffer v;
    Py_ssize_t pos;
    int prefix;
    PyObject *res = NULL;
    if (!PyArg_ParseTuple(args, "y*ni:decode_int", &v, &pos, &prefix))
        return NULL;
    if (prefix < 1 || prefix > 8) {
        PyErr_SetString(PyExc_ValueError, "prefix_bits must be in 1..8");
        goto done;
    }
    if (pos < 0 || pos > v.len) {
        PyErr_SetString(PyExc_ValueError, "pos out of range");
        goto done;
    }
    const uint8_t *p = (const uint8_t *)v.buf;
    if (pos >= v.len) { res = Py_NewRef(Py_None); goto done; }
    const uint64_t mask = (1u << prefix) - 1;
    uint64_t x = p[pos++] & mask;
    if (x == mask) {
        for (int k = 0;; k++) {
            if (pos >= v.len) { res = Py_NewRef(Py_None); goto done; }
            uint8_t b = p[pos++];
            x += (uint64_t)(b & 0x7F) << (7 * k);
            if (!(b & 0x80)) break;
            if (k == 8) {
                PyErr_SetString(IntegerError, "prefixed integer longer than 9 continuation bytes");
                goto done;
            }
        }
        if (x > VARINT_MAX) {
            PyErr_SetString(IntegerError, "prefixed integer exceeds 2**62-1");
            goto done;
        }
    }
    res = Py_BuildValue("(Kn)", (unsigned long long)x, pos);
done:
    PyBuffer_Release(&v);
    return res;
}

static PyObject *
encode_int(PyObject *mod, PyObject *args)
{
    unsigned long long x;
    int prefix, first = 0;
    uint8_t buf[16];
    int n = 0;
    PyObject *xo;
    if (!PyArg_ParseTuple(args, "Oi|i:encode_int", &xo, &prefix, &first))
        return NULL;
    x = PyLong_AsUnsignedLongLong(xo);
    if (x == (unsigned long long)-1 && PyErr_Occurred()) {
        if (PyErr_ExceptionMatches(PyExc_OverflowError)) {
            PyErr_Clear();
            PyErr_SetString(IntegerError, "prefixed integer out of range 0..2**62-1");
        }
        return NULL;
    }
    if (x > VARINT_MAX) {
        PyErr_SetString(IntegerError, "prefixed integer out of range 0..2**62-1");
        return NULL;
    }
    if (prefix < 1 || prefix > 8) {
        PyErr_SetString(PyExc_ValueError, "prefix_bits must be in 1..8");
        return NULL;
    }
    if (first < 0 || first > 255 || (first & ((1 << prefix) - 1))) {
        PyErr_SetString(PyExc_ValueError, "first byte bits overlap the prefix");
        return NULL;
    }
    const unsigned long long mask = (1u << prefix) - 1;
    if (x < mask) {
        buf[n++] = (uint8_t)(first | x);
    }
    else {
        buf[n++] = (uint8_t)(first | mask);
        x -= mask;
        while (x >= 128) {
            buf[n++] = (uint8_t)(0x80 | (x & 0x7F));
            x >>= 7;
        }
        buf[n++] = (uint8_t)x;
    }
    return PyBytes_FromStringAndSize((const char *)buf, n);
}

/* ------------------------------------------------------------------------------ */
/* Huffman (RFC 7541 section 5.2 and Appendix B)                                    */

static PyObject *
raise_huffman(const char *kind)
{
    PyObject *exc = PyObject_CallFunction(HuffmanError, "s", kind);
    if (exc != NULL) {
        PyErr_SetObject((PyObject *)Py_TYPE(exc), exc);
        Py_DECREF(exc);
    }
    return NULL;
}

/* A byte-at-a-time machine derived at import from the 4-bit one in _huffman_table.h:
 * entry = next state | symbol count (0..2) << 8 | FAIL << 10 | sym1 << 16 | sym2 << 24.
 * One table load per input byte instead of two dependent ones. */
static uint32_t HUFF_BYTE[256 * 256];

static void
huff_build_byte_table(void)
{
    for (unsigned state = 0; state < 256; state++) {
        for (unsigned b = 0; b < 256; b++) {
            const huff_entry *e = &HUFF_FSM[(state << 4) | (b >> 4)];
            const huff_entry *f = &HUFF_FSM[((unsigned)e->next << 4) | (b & 0x0F)];
            uint32_t count = 0, syms = 0, fail = 0;
            if ((e->flags | f->flags) & HUFF_FAIL) {
                fail = 1;
            }
            else {
                if (e->flags & HUFF_EMIT) syms |= (uint32_t)e->sym << (16 + 8 * count++);
                if (f->flags & HUFF_EMIT) syms |= (uint32_t)f->sym << (16 + 8 * count++);
            }
            HUFF_BYTE[(state << 8) | b] = (uint32_t)f->next | (count << 8) | (fail << 10) | syms;
        }
    }
}

/* Decode n bytes at p into o (room for n*8/5 + 2 bytes).  Returns the output length,
 * -1 (EOS decoded: invalid) or -2 (bad padding: incomplete). */
static Py_ssize_t
huff_decode_into(const uint8_t *p, Py_ssize_t n, uint8_t *o)
{
    uint8_t *start = o;
    unsigned state = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        const uint32_t e = HUFF_BYTE[(state << 8) | p[i]];
        if (e & (1u << 10))
            return -1;
        o[0] = (uint8_t)(e >> 16);      /* unconditional stores, advance by the count */
        o[1] = (uint8_t)(e >> 24);
        o += (e >> 8) & 3;
        state = e & 0xFF;
    }
    if (!HUFF_ACCEPT[state])
        return -2;
    return o - start;
}

static PyObject *
huffman_decode(PyObject *mod, PyObject *data)
{
    Py_buffer v;
    const uint8_t *p;
    Py_ssize_t n, r;
    int have_view = 0;
    uint8_t stackbuf[4096];
    uint8_t *o = stackbuf;
    PyObject *out = NULL;

    if (PyBytes_CheckExact(data)) {
        p = (const uint8_t *)PyBytes_AS_STRING(data);
        n = PyBytes_GET_SIZE(data);
    }
    else {
        if (PyObject_GetBuffer(data, &v, PyBUF_SIMPLE) < 0)
            return NULL;
        have_view = 1;
        p = (const uint8_t *)v.buf;
        n = v.len;
    }
    /* Every symbol takes at least 5 bits; +2 for the unconditional stores. */
    Py_ssize_t cap = n / 5 * 8 + (n % 5) * 8 / 5 + 2;
    if (cap > (Py_ssize_t)sizeof(stackbuf)) {
        o = PyMem_Malloc((size_t)cap);
        if (o == NULL) {
            PyErr_NoMemory();
            goto done;
        }
    }
    r = huff_decode_into(p, n, o);
    if (r == -1)
        raise_huffman("invalid");
    else if (r == -2)
        raise_huffman("incomplete");
    else
        out = PyBytes_FromStringAndSize((const char *)o, r);
    if (o != stackbuf)
        PyMem_Free(o);
done:
    if (have_view)
        PyBuffer_Release(&v);
    return out;
}

static PyObject *
huffman_encoded_length(PyObject *mod, PyObject *data)
{
    Py_buffer v;
    uint64_t bits = 0;
    if (PyObject_GetBuffer(data, &v, PyBUF_SIMPLE) < 0)
        return NULL;
    const uint8_t *p = (const uint8_t *)v.buf;
    for (Py_ssize_t i = 0; i < v.len; i++)
        bits += HUFF_LENGTHS[p[i]];
    PyBuffer_Release(&v);
    return PyLong_FromUnsignedLongLong((bits + 7) / 8);
}

static PyObject *
huffman_encode(PyObject *mod, PyObject *data)
{
    Py_buffer v;
    uint64_t bits = 0, acc = 0;
    int nacc = 0;
    if (PyObject_GetBuffer(data, &v, PyBUF_SIMPLE) < 0)
        return NULL;
    const uint8_t *p = (const uint8_t *)v.buf;
    for (Py_ssize_t i = 0; i < v.len; i++)
        bits += HUFF_LENGTHS[p[i]];
    PyObject *out = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)((bits + 7) / 8));
    if (out == NULL) { PyBuffer_Release(&v); return NULL; }
    uint8_t *o = (uint8_t *)PyBytes_AS_STRING(out);
    for (Py_ssize_t i = 0; i < v.len; i++) {
        acc = (acc << HUFF_LENGTHS[p[i]]) | HUFF_CODES[p[i]];
        nacc += HUFF_LENGTHS[p[i]];
        while (nacc >= 8) {
            nacc -= 8;
            *o++ = (uint8_t)(acc >> nacc);
        }
        acc &= (((uint64_t)1) << nacc) - 1;
    }
    if (nacc)
        *o++ = (uint8_t)((acc << (8 - nacc)) | (0xFFu >> nacc));
    PyBuffer_Release(&v);
    return out;
}

/* ------------------------------------------------------------------------------ */

static PyMethodDef module_methods[] = {
    {"register_h2_frame_classes", register_h2_frame_classes, METH_VARARGS,
     "register_h2_frame_classes(data_frame, flags, flag_names, fallback_repr, headers_frame=None,\n"
     "headers_flag_names=None): the DataFrame subclass next_frame builds (given its __repr__), hyperframe's\n"
     "Flags, ('END_STREAM', 'PADDED'), Frame.__repr__; and the HeadersFrame subclass it builds, with\n"
     "('END_STREAM', 'END_HEADERS', 'PADDED', 'PRIORITY')."},
    {"scan_h2", scan_h2, METH_VARARGS,
     "scan_h2(data, out, max_frame_size, preface, validate) -> (count, end, error, pending)"},
    {"scan_h3", scan_h3, METH_VARARGS,
     "scan_h3(data, out, max_frame_size, kind, validate) -> (count, end, error, pending)"},
    {"decode_varint", decode_varint, METH_VARARGS,
     "decode_varint(data, pos=0) -> (value, next_pos), or None if more bytes are needed"},
    {"encode_varint", encode_varint, METH_O, "encode_varint(value) -> bytes"},
    {"decode_int", decode_int, METH_VARARGS,
     "decode_int(data, pos, prefix_bits) -> (value, next_pos), or None if more bytes are needed"},
    {"encode_int", encode_int, METH_VARARGS, "encode_int(value, prefix_bits, first_byte=0) -> bytes"},
    {"huffman_decode", huffman_decode, METH_O, "huffman_decode(data) -> bytes"},
    {"huffman_encode", huffman_encode, METH_O, "huffman_encode(data) -> bytes"},
    {"huffman_encoded_length", huffman_encoded_length, METH_O, "huffman_encoded_length(data) -> int"},
    {NULL}
};

static struct PyModuleDef moduledef = {
    PyModuleDef_HEAD_INIT, "_scanner",
    "HTTP/2 and HTTP/3 frame scanners, QUIC varints, HPACK integers and Huffman coding in C.",
    -1, module_methods,
};

PyMODINIT_FUNC
PyInit__scanner(void)
{
    PyObject *m, *errors;
    errors = PyImport_ImportModule("simulator.frames._errors");
    if (errors == NULL)
        return NULL;
    FrameError = PyObject_GetAttrString(errors, "FrameError");
    HuffmanError = PyObject_GetAttrString(errors, "HuffmanError");
    IntegerError = PyObject_GetAttrString(errors, "IntegerError");
    Py_DECREF(errors);
    if (!FrameError || !HuffmanError || !IntegerError)
        return NULL;
    huff_build_byte_table();
    H2F_empty_tuple = PyTuple_New(0);
    if (H2F_empty_tuple == NULL ||
        !(S_stream_id = PyUnicode_InternFromString("stream_id")) || !(S_flags = PyUnicode_InternFromString("flags")) ||
        !(S_body_len = PyUnicode_InternFromString("body_len")) ||
        !(S_pad_length = PyUnicode_InternFromString("pad_length")) || !(S_data = PyUnicode_InternFromString("data")) ||
        !(S_valid_flags = PyUnicode_InternFromString("_valid_flags")) ||
        !(S_flags_set = PyUnicode_InternFromString("_flags")) ||
        !(S_depends_on = PyUnicode_InternFromString("depends_on")) ||
        !(S_stream_weight = PyUnicode_InternFromString("stream_weight")) ||
        !(S_exclusive = PyUnicode_InternFromString("exclusive")) || !(S_kind = PyUnicode_InternFromString("kind")))
        return NULL;
    if (PyType_Ready(&H2ScannerType) < 0 || PyType_Ready(&H3ScannerType) < 0 ||
        PyType_Ready(&VarintDecoderType) < 0)
        return NULL;
    m = PyModule_Create(&moduledef);
    if (m == NULL)
        return NULL;
    if (PyModule_AddObjectRef(m, "H2Scanner", (PyObject *)&H2ScannerType) < 0 ||
        PyModule_AddObjectRef(m, "H3Scanner", (PyObject *)&H3ScannerType) < 0 ||
        PyModule_AddObjectRef(m, "VarintDecoder", (PyObject *)&VarintDecoderType) < 0 ||
        PyModule_AddStringConstant(m, "IMPLEMENTATION", "c") < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
