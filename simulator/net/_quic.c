/* The QUIC model's per-packet path in C: simulator.net._quic.
 *
 * Written by hand, as the TCP model's twin (_tcp.c) is: no library models QUIC inside this
 * workbench's engine.  This is the C twin of the Python reference, which defines the
 * behaviour and stays selectable (simulator/net/native.py; WORKBENCH_NET=python):
 *
 *   QuicCore     simulator/net/quic/recovery.py    LossRecovery: sent-packet records, ACK frames
 *                                                  with ranges, RTT samples, loss detection
 *                                                  (packet and time threshold), PTO and backoff
 *                simulator/net/quic/ack.py         AckGeneration: received packet numbers as
 *                                                  ranges, ACK frames, their sizes, when to ACK
 *                simulator/net/quic/packet_builder.py  PacketBuilder: flush, packet contents, send
 *                simulator/net/quic/connection.py  QuicEndpoint._on_packet (1-RTT packets once the
 *                                                  handshake is confirmed), _on_stream_frame, write
 *                simulator/net/quic/pacer.py       Pacer
 *                simulator/net/cc.py               RttIncreaseMonitor
 *   QuicPacket   simulator/net/quic/packet.py      QuicPacket
 *   ResponseWriter  simulator/net/writer.py        ResponseWriter on a NativeQuicEndpoint (the page-load
 *                                                  model's pull writer: rotations per urgency, a
 *                                                  packet's worth per pull, written into the core;
 *                                                  with a scheduler's hooks or the tree's twin
 *                                                  in place of the rotations: _writer_turns.h)
 *   StrideTree   simulator/http/priority_tree.py  TreeScheduler's tree (_stride_tree.h, shared with _tcp.c)
 *   TimerSlots   simulator/engine.py               TimerSlots (the slots loss, ack, pace, handshake)
 *   _Bound       the endpoint's _flush, _on_packet and _ack_now, as the engine and links call them
 *                (flushes and the timer slots' entries go on the engine's C queue as its C events,
 *                _engine.c's push_c: the same keys and callables, run without a Python call)
 *   RttEstimator, CongestionControl  (_cc.h, shared with _tcp.c)  cc.RttEstimator, Reno, Cubic
 *
 * One QuicCore per endpoint of simulator/net/quic/native.py's NativeQuicEndpoint, which keeps
 * the reference's objects: the core works on the endpoint's own slots, queues of chunks,
 * SendStream / RecvStream records and RangeSet lists through their attributes, so the Python
 * that stays (opening streams, the handshake, the statistics, the application's callbacks)
 * sees the same state.  Its streams are _quic_streams.h's SendStream / RecvStream, stream.py's
 * records with their fields in C, read in place (anything else through its attributes).  The handshake (handshake.py) stays Python and calls into the core.
 *
 * Why C: an HTTP/3 answer on the page-load model cost about 8x an HTTP/2 one, whose TCP
 * path is C; every packet was a dozen Python calls out (flush, build, send) and in (arrival,
 * frames, packet number, ACK processing, timers).  Then the HTTP layer's were most of what was
 * left: the pull writer (three Python calls a packet), SendStream's written/append/data (four),
 * the writer's acknowledgement report; these are C now too (ResponseWriter, stream_* below).
 *
 * Same results, by construction: every event is pushed at the same point of the same
 * computation with the same time and a callback of the same name (the C callables carry the
 * reference methods' __qualname__, TimerSlots is named as the engine's), the application's
 * callbacks and the links are called in the same order with the same arguments, and every
 * float is computed by the same IEEE operations in the same order (Python's min()/max() tie
 * rules; built with -ffp-contract=off).  tests/test_net_quic_native.py runs both and compares
 * every event, delivery, packet and counter.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#define NET_MODULE "simulator.net._quic"
#define LINK_SEND_CAPSULE "simulator.net._tcp.any_link_send"   /* _tcp.c's C links' send */
enum { CC_RENO = 0, CC_CUBIC = 1 };
#include "_cc.h"

#define MAX_ACK_RANGES 32          /* packet.MAX_ACK_RANGES: ranges kept and reported by a receiver */
#define ACK_DELAY_EXPONENT 3       /* packet.ACK_DELAY_EXPONENT (RFC 9000 section 18.2) */
#define LOSS_EPSILON_S 1e-9        /* recovery.LOSS_EPSILON_S */
#define MONITOR_SIZE 5             /* cc.RttIncreaseMonitor's defaults */
#define MONITOR_GRANULARITY_S 0.001

/* A C link's send (_tcp.c's any_link_send, from its type's _c_send capsule): 1 sent, 0 dropped at
 * the queue, -1 error; now: sim.now of this event. */
typedef int (*link_send_fn)(PyObject *link, PyObject *packet, PyObject *deliver, const double *now);

/* The engine's push of a C event (_engine.c's push_c, from the capsule EventQueue._c_push):
 * callback(*args) at t, args (gen,) or (), which the loop runs as fire(callback, gen). */
#define PUSH_C_CAPSULE "simulator._engine.push_c"
#define PACKET_NEW_CAPSULE "simulator.net._tcp.packet_c_new"   /* _tcp.c's C Packet(size, payload) */
typedef int (*push_c_fn)(PyObject *queue, double t, PyObject *t_obj, PyObject *callback,
                         int (*fire)(PyObject *callback, uint64_t gen), uint64_t gen, int gen_arg);
/* The engine's reserve(), push_at() and next event time for C events (_engine.c's SeqApi, from
 * the capsule EventQueue._c_seq): a held flush's place in the queue (packet_builder). */
#define SEQ_C_CAPSULE "simulator._engine.seq_c"
typedef struct {
    uint64_t (*reserve)(PyObject *queue);
    int (*push_at)(PyObject *queue, uint64_t seq, double t, PyObject *t_obj, PyObject *callback,
                   int (*fire)(PyObject *callback, uint64_t gen), uint64_t gen, int gen_arg);
    int (*next_t)(PyObject *queue, double *t);
} SeqApi;

/* One ack-eliciting packet sent (recovery's QuicPacket record). */
typedef struct {
    PyObject *packet;              /* the QuicPacket, returned when acknowledged or lost */
    long long pn, size;
    double time_sent;
    char done;                     /* acknowledged or declared lost */
} Sent;

typedef struct {
    PyObject_HEAD
    RttObject *rtt;
    CcObject *cc;
    PyObject *cwnd_log;            /* list of (time_s, cwnd_bytes), or None */
    /* config */
    double max_ack_delay_s, time_threshold;
    long long packet_threshold, max_datagram;
    /* sent packets, pn order: [head, head + len) of buf; `outstanding` of them not done */
    Sent *sent;
    Py_ssize_t head, len, cap, outstanding;
    long long largest_acked, pto_count, bytes_in_flight;
    double loss_time, last_ack_eliciting_s, recovery_start_s;
    char has_loss_time;
    long long pto_watch_pn, pto_watch_ptos;
    char pto_watch_lost;
    /* counters (the endpoint's statistics) */
    long long packets_lost, lost_by_packet_threshold, lost_by_time_threshold, ptos, spurious_ptos,
        congestion_events;
    /* pacer (pacer.Pacer) */
    char pacing, has_interval;
    double interval_s, credit_s, credit_max_s, updated_s, late_s;
    /* slow start exit on a rising RTT (cc.RttIncreaseMonitor) */
    char monitor;
    double mon_samples[MONITOR_SIZE], mon_last_s, mon_base_s;
    int mon_index, mon_increases;
    char mon_full, mon_has_base;
    /* received packet numbers (ack.AckGeneration): inclusive ranges, ascending */
    long long lows[MAX_ACK_RANGES + 1], highs[MAX_ACK_RANGES + 1];
    int nranges;
    long long largest_recv_pn;
    double largest_recv_time_s;
    /* the sending path's Python objects (bind): the packet classes, the endpoint's queues
     * of chunks [stream_id, offset, length, fin, retransmission] and its send streams */
    PyObject *packet_class, *link_packet_class, *retx_queue, *new_queue, *send_streams;
    PyObject *(*link_packet_new)(long long size, PyObject *payload);   /* _tcp.c's Packet._c_new, or NULL */
    long long max_payload;
    /* the receiving path's (bind): the endpoint's receive streams and their class */
    PyObject *recv_streams, *recv_stream_class;
    PyObject *send_stream_class;                 /* SendStream: a peer's stream answered (bind) */
    int is_client;
    long long ack_every_packets;
    /* the endpoint's own figures and flags on the per-packet path, kept here (the endpoint's
     * attributes of these names read and write them: native.NativeQuicEndpoint's properties) */
    long long next_pn, packets_sent, probe_packets_sent, ack_packets_sent, bytes_sent, stream_bytes_sent,
        stream_bytes_retransmitted, unacked_eliciting, bytes_delivered, reorder_bytes, max_reorder_bytes;
    char ack_due, flush_scheduled;
    char flushing;                               /* in flush(): a write's flush is held */
    uint64_t held_seq;                           /* its place in the engine's queue (0: none) */
    const SeqApi *seq_c;                         /* the C queue's reserve / push_at (with push_c) */
    /* the endpoint's fixed objects (bind): its simulator, timer slots, and loss-timer callback */
    PyObject *sim, *timers, *on_loss_timeout;
    PyObject *flush_event, *ack_now_event;       /* its _Bound flush and ack_now (callables) */
    PyObject *push;                              /* sim._push when bound, and its engine's C push */
    push_c_fn push_c;
    PyObject *queue;                             /* (the queue: borrowed, push holds it) */
    PyObject *link;                              /* the endpoint's link, and its type's C send when it */
    link_send_fn link_send;                      /* is one of _tcp.c's links (Link, DelayedLink), else NULL */
} CoreObject;

static PyTypeObject CoreType;

static inline int
varint_len(long long v)                      /* frames.varint_len (RFC 9000 section 16) */
{
    if (v < 0x40)
        return 1;
    if (v < 0x4000)
        return 2;
    if (v < 0x40000000)
        return 4;
    return 8;
}

/* One out-of-line copy (see _fastattr.h): callgrind's cache simulation of an h3 page load,
 * 0.5 M fewer instruction-cache misses for 0.4 M more instructions. */
#define FASTATTR_FN static Py_NO_INLINE
#include "_fastattr.h"   /* fast_getattr, fast_setattr: a slot read at its offset */

/* SITE_GETATTR(o, name): fast_getattr with a cache of its own for each place it is written (the
 * per-packet path reads the same attribute of objects of the same type there each time, about
 * 80,000 reads in an h3 page load): the type, name, version tag and slot offset last read there,
 * checked as slot_offset checks its shared table's entry, without the hash and the table (whose
 * entries fall out of the data cache between packets).  Anything else: fast_getattr. */
typedef struct {
    PyTypeObject *tp;
    PyObject *name;
    unsigned int version;
    Py_ssize_t offset;
} SiteCache;
#define SITE_CACHES 64
static SiteCache site_caches[SITE_CACHES];
#define SITE_GETATTR(o, name) site_getattr(&site_caches[__COUNTER__], (o), (name))

static Py_NO_INLINE PyObject *
site_getattr(SiteCache *sc, PyObject *o, PyObject *name)
{
    PyTypeObject *tp = Py_TYPE(o);
    if (tp == sc->tp && name == sc->name && sc->version == tp->tp_version_tag
        && PyType_HasFeature(tp, Py_TPFLAGS_VALID_VERSION_TAG)) {
        PyObject *v = *(PyObject **)((char *)o + sc->offset);
        if (v != NULL)
            return Py_NewRef(v);
    }
    else if (tp->tp_getattro == PyObject_GenericGetAttr) {
        char kind;
        Py_ssize_t offset = slot_offset(tp, name, &kind);
        if (offset > 0 && PyType_HasFeature(tp, Py_TPFLAGS_VALID_VERSION_TAG))
            *sc = (SiteCache){tp, name, tp->tp_version_tag, offset};
    }
    return fast_getattr(o, name);
}

/* Tuples and lists of the hot paths built directly (Py_BuildValue parses its format on every
 * call).  Each steals the references it is given, NULLs included (then it fails, as "N" does). */
/* f(a, b[, c[, d]]) through vectorcall: no varargs walk, no argument tuple. */
static inline PyObject *
call2(PyObject *f, PyObject *a, PyObject *b)
{
    PyObject *argv[3] = {NULL, a, b};
    return PyObject_Vectorcall(f, argv + 1, 2 | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
}

static inline PyObject *
call3(PyObject *f, PyObject *a, PyObject *b, PyObject *c)
{
    PyObject *argv[4] = {NULL, a, b, c};
    return PyObject_Vectorcall(f, argv + 1, 3 | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
}

static inline PyObject *
call4(PyObject *f, PyObject *a, PyObject *b, PyObject *c, PyObject *d)
{
    PyObject *argv[5] = {NULL, a, b, c, d};
    return PyObject_Vectorcall(f, argv + 1, 4 | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
}

static PyObject *
steal_seq(int list, Py_ssize_t n, PyObject **items)
{
    PyObject *seq = NULL;
    for (Py_ssize_t i = 0; i < n; i++)
        if (items[i] == NULL)
            goto fail;
    if ((seq = list ? PyList_New(n) : PyTuple_New(n)) == NULL)
        goto fail;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (list)
            PyList_SET_ITEM(seq, i, items[i]);
        else
            PyTuple_SET_ITEM(seq, i, items[i]);
    }
    return seq;
fail:
    for (Py_ssize_t i = 0; i < n; i++)
        Py_XDECREF(items[i]);
    return NULL;
}

#define STEAL_TUPLE(...) steal_seq(0, sizeof((PyObject *[]){__VA_ARGS__}) / sizeof(PyObject *), (PyObject *[]){__VA_ARGS__})
#define STEAL_LIST(...) steal_seq(1, sizeof((PyObject *[]){__VA_ARGS__}) / sizeof(PyObject *), (PyObject *[]){__VA_ARGS__})

static PyObject *str_ready, *str_on_send_ready, *str_flush_scheduled, *str_ack_due, *str_unacked_eliciting,
    *str_next_pn, *str_packets_sent, *str_probe_packets_sent, *str_ack_packets_sent, *str_bytes_sent,
    *str_stream_bytes_sent, *str_stream_bytes_retransmitted, *str_timers, *str_set, *str_cancel, *str_loss,
    *str_pace, *str_ack, *str_flush, *str_on_loss_timeout, *str_link, *str_send, *str_c_send, *str_c_push, *str_c_new, *str_peer, *str_on_packet,
    *str_sim, *str_now, *str_acked_prefix, *str_fin_acked, *str_buf, *str_buf_offset, *str_written, *str_popleft,
    *str_call_soon, *str_fin_offset, *str_finished, *str_delivered, *str_heap, *str_heap_bytes,
    *str_on_data, *str_on_ack_frame, *str_frames, *str_pn,
    *str_ack_eliciting, *str_expiry, *str_ack_delay_s, *str_ack_now, *str_join, *str_payload, *str_handshake_done_s,
    *str_deliver, *str_flush_event, *str_ack_now_event, *str_starts, *str_ends, *str_done, *str_acked, *str_on_packet_acked,
    *str_on_stream_acked, *str_requeue_lost, *str_fin, *str_append, *str_push, *str_later, *str_later_bytes,
    *str_appendleft, *str_write, *str_cwnd_bytes, *str_queue, *str_c_seq, *str_reserve, *str_push_at, *str_next_s;

/* sim._push's C push: when it is the push method of an engine EventQueue with the capsule,
 * that function and the queue (borrowed: the bound method holds it), else NULL. */
static push_c_fn
queue_push_c(PyObject *push, PyObject **queue)
{
    if (push == NULL || !PyCFunction_Check(push) || strcmp(((PyCFunctionObject *)push)->m_ml->ml_name, "push") != 0)
        return NULL;
    PyObject *self = PyCFunction_GET_SELF(push);
    if (self == NULL)
        return NULL;
    PyObject *cap = _PyType_Lookup(Py_TYPE(self), str_c_push);   /* borrowed */
    if (cap == NULL || !PyCapsule_IsValid(cap, PUSH_C_CAPSULE))
        return NULL;
    *queue = self;
    return (push_c_fn)PyCapsule_GetPointer(cap, PUSH_C_CAPSULE);
}
static PyObject *empty_bytes, *empty_tuple;

/* collections.deque and its methods append, appendleft and popleft, looked up once: a queue of
 * the endpoint's (or a stream's `later`) that is a deque is called through them directly. */
static PyObject *deque_type, *deque_append, *deque_appendleft, *deque_popleft;

/* queue.<name>(arg) (arg NULL: no argument), through the deque's method when it is one. */
static PyObject *
deque_call(PyObject *queue, PyObject *method, PyObject *name, PyObject *arg)
{
    if ((PyObject *)Py_TYPE(queue) == deque_type) {
        PyObject *argv[2] = {queue, arg};
        return PyObject_Vectorcall(method, argv, arg == NULL ? 1 : 2, NULL);
    }
    return arg == NULL ? PyObject_CallMethodNoArgs(queue, name) : PyObject_CallMethodOneArg(queue, name, arg);
}

/* len(queue): a deque's length is its ob_size (CPython's deque_len reads it there), read in
 * place; anything else through len(). */
static inline Py_ssize_t
queue_len(PyObject *queue)
{
    return (PyObject *)Py_TYPE(queue) == deque_type ? Py_SIZE(queue) : PyObject_Length(queue);
}

#define SHORT_HEADER_BYTES (1 + 8 + 2 + 16)   /* packet.SHORT_HEADER_BYTES */
#define UDP_IP_HEADER_BYTES 28                /* packet.UDP_IP_HEADER_BYTES */

static int
get_double(PyObject *o, double *out)
{
    *out = PyFloat_AsDouble(o);
    return (*out == -1.0 && PyErr_Occurred()) ? -1 : 0;
}

/* -- pacer (pacer.Pacer) -- */

static void
pacer_refill(CoreObject *c, double now)
{
    if (now > c->updated_s) {
        c->credit_s = py_min(c->credit_s + (now - c->updated_s), c->credit_max_s);
        c->updated_s = now;
    }
}

static void
pacer_set_rate(CoreObject *c)
{
    double cwnd = c->cc->cwnd;
    double rate = cwnd / py_max(rtt_smoothed(c->rtt), 1e-6);
    double mdb = (double)c->max_datagram;
    c->interval_s = py_max(1e-6, py_min(mdb / rate, 1.0));
    c->has_interval = 1;
    /* cwnd // 4 (a float's floor division by 4 is exact) */
    double quarter = floor(cwnd / 4.0);
    double burst = py_max(2 * mdb, py_min(quarter, 16 * mdb));
    c->credit_max_s = burst / rate;
    if (c->credit_s > c->credit_max_s)
        c->credit_s = c->credit_max_s;
}

/* -- RTT samples (recovery._slow_start_check, cc.RttIncreaseMonitor) -- */

static int
monitor_increasing(CoreObject *c, double now, double rtt_s)
{
    if (now <= c->mon_last_s + MONITOR_GRANULARITY_S)
        return 0;
    c->mon_last_s = now;
    c->mon_samples[c->mon_index] = rtt_s;
    c->mon_index = (c->mon_index + 1) % MONITOR_SIZE;
    if (c->mon_index == 0)
        c->mon_full = 1;
    if (!c->mon_full)
        return 0;
    double low = c->mon_samples[0], high = c->mon_samples[0];
    for (int i = 1; i < MONITOR_SIZE; i++) {
        low = py_min(low, c->mon_samples[i]);
        high = py_max(high, c->mon_samples[i]);
    }
    if (!c->mon_has_base || c->mon_base_s > high) {
        c->mon_base_s = high;
        c->mon_has_base = 1;
    }
    double delta = low - c->mon_base_s;
    if (4 * delta >= c->mon_base_s) {
        c->mon_increases += 1;
        return c->mon_increases >= MONITOR_SIZE;
    }
    if (delta > 0)
        c->mon_increases = 0;
    return 0;
}

static void
slow_start_check(CoreObject *c, double now, double latest_rtt_s)
{
    CcObject *cc = c->cc;
    if (c->monitor && cc->ssthresh == INFINITY && monitor_increasing(c, now, latest_rtt_s)) {
        cc->ssthresh = cc->cwnd;
        cc->ssthresh_int = cc->cwnd_int;
    }
}

static int
log_cwnd(CoreObject *c, double now)
{
    PyObject *log = c->cwnd_log;
    if (log == Py_None)
        return 0;
    Py_ssize_t n = PyList_GET_SIZE(log);
    if (n > 0) {
        PyObject *last = PyList_GET_ITEM(log, n - 1);
        double v;
        if (get_double(PyTuple_GET_ITEM(last, 1), &v) < 0)
            return -1;
        if (v == c->cc->cwnd)
            return 0;
    }
    PyObject *entry = Py_BuildValue("(dN)", now, number(c->cc->cwnd, c->cc->cwnd_int));
    if (entry == NULL)
        return -1;
    int rc = PyList_Append(log, entry);
    Py_DECREF(entry);
    return rc;
}

/* -- loss detection (recovery._detect_lost_packets, _on_packets_lost) -- */

/* Packets declared lost now, appended to *lost (a list, made at the first one: most ACKs
 * declare none) in pn order, with the bookkeeping of _on_packets_lost except re-queueing their
 * data (Python's); the loss timer's deadline. */
static int
detect_lost(CoreObject *c, double now, PyObject **lost)
{
    c->has_loss_time = 0;
    RttObject *r = c->rtt;
    double loss_delay = py_max(c->time_threshold * py_max(r->latest_rtt_s, rtt_smoothed(r)), r->granularity_s);
    double loss_time = 0.0;
    char has_loss_time = 0;
    Sent *last_lost = NULL;
    for (Py_ssize_t i = c->head; i < c->head + c->len; i++) {
        Sent *s = &c->sent[i];
        if (s->pn > c->largest_acked)
            break;
        if (s->done)
            continue;
        double deadline = s->time_sent + loss_delay;
        int is_lost = 0;
        if (c->largest_acked >= s->pn + c->packet_threshold) {
            c->lost_by_packet_threshold += 1;
            is_lost = 1;
        }
        else if (deadline <= now + LOSS_EPSILON_S) {     /* same sum as the timer's */
            c->lost_by_time_threshold += 1;
            is_lost = 1;
        }
        else if (!has_loss_time || deadline < loss_time) {
            loss_time = deadline;
            has_loss_time = 1;
        }
        if (is_lost) {
            if (*lost == NULL && (*lost = PyList_New(0)) == NULL)
                return -1;
            if (PyList_Append(*lost, s->packet) < 0)
                return -1;
            last_lost = s;
        }
    }
    c->has_loss_time = has_loss_time;
    c->loss_time = loss_time;
    if (last_lost == NULL)
        return 0;
    /* _on_packets_lost: in pn order, every one lost is settled */
    for (Py_ssize_t i = c->head; i < c->head + c->len; i++) {
        Sent *s = &c->sent[i];
        if (s->pn > c->largest_acked)
            break;
        if (s->done)
            continue;
        double deadline = s->time_sent + loss_delay;
        if (!(c->largest_acked >= s->pn + c->packet_threshold || deadline <= now + LOSS_EPSILON_S))
            continue;
        s->done = 1;
        c->outstanding -= 1;
        if (s->pn <= c->pto_watch_pn)
            c->pto_watch_lost = 1;
        c->bytes_in_flight -= s->size;
        c->packets_lost += 1;
    }
    /* 7.3.2 OnCongestionEvent: one reduction per recovery period */
    if (last_lost->time_sent > c->recovery_start_s) {
        c->recovery_start_s = now;
        cc_on_congestion_event(c->cc);
        c->congestion_events += 1;
        if (log_cwnd(c, now) < 0)
            return -1;
    }
    return 0;
}

/* -- QuicPacket: packet.QuicPacket's C twin (the twin's endpoints send these) ---------------- */

/* One STREAM frame (RFC 9000 section 19.8) of a packet the core built: (stream_id, offset,
 * data, fin) in C, the references held. */
typedef struct {
    PyObject *sid, *data;
    long long offset;
    char fin;
} CFrame;

#define CFRAMES_INLINE 2            /* a packet's frames kept in the packet itself up to this many */

static void
cframes_release(CFrame *v, int n)
{
    for (int i = 0; i < n; i++) {
        Py_CLEAR(v[i].sid);
        Py_CLEAR(v[i].data);
    }
}

/* The frames of the packet being built (packet_builder._build_frames's list), in C. */
typedef struct {
    CFrame *v;                     /* inl, or the heap past CFRAMES_INLINE */
    int n, cap;
    CFrame inl[CFRAMES_INLINE];
} FrameBuf;

static void
fb_init(FrameBuf *fb)
{
    fb->v = fb->inl;
    fb->n = 0;
    fb->cap = CFRAMES_INLINE;
}

static void
fb_release(FrameBuf *fb)
{
    cframes_release(fb->v, fb->n);
    if (fb->v != fb->inl)
        PyMem_Free(fb->v);
    fb_init(fb);
}

/* Appends (sid, offset, data, fin): a reference to sid taken, data's stolen. */
static int
fb_push(FrameBuf *fb, PyObject *sid, long long offset, PyObject *data, int fin)
{
    if (fb->n == fb->cap) {
        int cap = 2 * fb->cap;
        CFrame *v = PyMem_Malloc((size_t)cap * sizeof(CFrame));
        if (v == NULL) {
            Py_DECREF(data);
            PyErr_NoMemory();
            return -1;
        }
        memcpy(v, fb->v, (size_t)fb->n * sizeof(CFrame));
        if (fb->v != fb->inl)
            PyMem_Free(fb->v);
        fb->v = v;
        fb->cap = cap;
    }
    fb->v[fb->n++] = (CFrame){Py_NewRef(sid), data, offset, (char)(fin != 0)};
    return 0;
}

typedef struct {
    PyObject_HEAD
    long long pn, size_bytes;
    double time_sent_s;
    PyObject *frames;              /* the frames list; NULL until read when the core's are in C: */
    CFrame *cf;                    /* ncf > 0: the frames, in C (cf_inline or the heap) */
    int ncf;
    CFrame cf_inline[CFRAMES_INLINE];
    PyObject *ack;                 /* (ranges, ack_delay_s) or None; NULL until read when kept in C: */
    long long *ack_ranges;         /* the core's ACK frame: nack (low, high) pairs, highest first */
    int nack;                      /* > 0: ack_ranges and ack_delay_s hold the frame */
    double ack_delay_s;
    char ack_eliciting, done, probe;
} QPacketObject;

static PyTypeObject QPacketType;

static QPacketObject *
qpacket_new(long long pn, double time_sent_s, long long size_bytes, PyObject *frames, PyObject *ack,
            int ack_eliciting, int probe)
{
    QPacketObject *p = PyObject_GC_New(QPacketObject, &QPacketType);
    if (p == NULL)
        return NULL;
    p->pn = pn;
    p->time_sent_s = time_sent_s;
    p->size_bytes = size_bytes;
    Py_XINCREF(frames);
    p->frames = frames;            /* NULL: the caller moves its C frames in (qpacket_take_frames) */
    p->cf = NULL;
    p->ncf = 0;
    Py_XINCREF(ack);
    p->ack = ack;                  /* NULL: the caller fills ack_ranges (qpacket_ack) */
    p->ack_ranges = NULL;
    p->nack = 0;
    p->ack_delay_s = 0.0;
    p->ack_eliciting = (char)ack_eliciting;
    p->done = 0;
    p->probe = (char)probe;
    PyObject_GC_Track(p);
    return p;
}

static PyObject *
QPacket_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"pn", "time_sent_s", "size_bytes", "frames", "ack", "ack_eliciting", "probe", NULL};
    long long pn, size;
    double t;
    PyObject *frames, *ack = Py_None;
    int eliciting = 1, probe = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "LdLO|Opp:QuicPacket", kwlist, &pn, &t, &size, &frames, &ack,
                                     &eliciting, &probe))
        return NULL;
    return (PyObject *)qpacket_new(pn, t, size, frames, ack, eliciting, probe);
}

/* The frames built in C moved into packet p (fb left empty). */
static void
qpacket_take_frames(QPacketObject *p, FrameBuf *fb)
{
    if (fb->v == fb->inl) {
        memcpy(p->cf_inline, fb->inl, (size_t)fb->n * sizeof(CFrame));
        p->cf = p->cf_inline;
    }
    else
        p->cf = fb->v;
    p->ncf = fb->n;
    fb_init(fb);
}

static int
QPacket_traverse(QPacketObject *p, visitproc visit, void *arg)
{
    Py_VISIT(p->frames);
    Py_VISIT(p->ack);
    for (int i = 0; i < p->ncf; i++) {
        Py_VISIT(p->cf[i].sid);
        Py_VISIT(p->cf[i].data);
    }
    return 0;
}

static int
QPacket_clear(QPacketObject *p)
{
    Py_CLEAR(p->frames);
    Py_CLEAR(p->ack);
    if (p->cf != NULL)
        cframes_release(p->cf, p->ncf);
    p->ncf = 0;                    /* (cf itself is freed with the packet) */
    return 0;
}

static void
QPacket_dealloc(QPacketObject *p)
{
    PyObject_GC_UnTrack(p);
    QPacket_clear(p);
    if (p->cf != NULL && p->cf != p->cf_inline)
        PyMem_Free(p->cf);
    PyMem_Free(p->ack_ranges);
    Py_TYPE(p)->tp_free((PyObject *)p);
}

/* packet.frames: the reference's list of (stream_id, offset, data, fin) tuples, made from the
 * C frames the first time it is read (then kept: one object; the C frames stay what the core
 * reads, the same values). */
static PyObject *
qpacket_frames(QPacketObject *p)
{
    if (p->frames == NULL) {
        PyObject *frames = PyList_New(p->ncf);
        if (frames == NULL)
            return NULL;
        for (int i = 0; i < p->ncf; i++) {
            CFrame *f = &p->cf[i];
            PyObject *t = STEAL_TUPLE(Py_NewRef(f->sid), PyLong_FromLongLong(f->offset), Py_NewRef(f->data),
                                      Py_NewRef(f->fin ? Py_True : Py_False));
            if (t == NULL) {
                Py_DECREF(frames);
                return NULL;
            }
            PyList_SET_ITEM(frames, i, t);
        }
        p->frames = frames;
    }
    return Py_NewRef(p->frames);
}

static PyObject *
QPacket_get_frames(QPacketObject *p, void *x)
{
    return qpacket_frames(p);
}

/* packet.ack: the ACK frame as the reference builds it, ([(low, high), ...] highest first,
 * ack_delay_s), made from the C ranges the first time it is read (then kept: one object). */
static PyObject *
qpacket_ack(QPacketObject *p)
{
    if (p->ack == NULL) {
        PyObject *ranges = PyList_New(p->nack);
        if (ranges == NULL)
            return NULL;
        for (int i = 0; i < p->nack; i++) {
            PyObject *rg = STEAL_TUPLE(PyLong_FromLongLong(p->ack_ranges[2 * i]),
                                       PyLong_FromLongLong(p->ack_ranges[2 * i + 1]));
            if (rg == NULL) {
                Py_DECREF(ranges);
                return NULL;
            }
            PyList_SET_ITEM(ranges, i, rg);
        }
        if ((p->ack = STEAL_TUPLE(ranges, PyFloat_FromDouble(p->ack_delay_s))) == NULL)
            return NULL;
    }
    return Py_NewRef(p->ack);
}

static PyObject *
QPacket_get_ack(QPacketObject *p, void *x)
{
    return qpacket_ack(p);
}

static PyGetSetDef QPacket_getset[] = {
    {"ack", (getter)QPacket_get_ack, NULL, "ACK frame (ranges, ack_delay_s), or None", NULL},
    {"frames", (getter)QPacket_get_frames, NULL, "STREAM frames [(stream_id, offset, data, fin), ...]", NULL},
    {NULL},
};

static PyObject *
QPacket_repr(QPacketObject *p)
{
    Py_ssize_t n = p->frames == NULL ? p->ncf : PyObject_Length(p->frames);
    if (n < 0)
        return NULL;
    return PyUnicode_FromFormat("QuicPacket(pn=%lld, %s, %lld B, %zd frames)", p->pn,
                                (p->nack > 0 || p->ack != Py_None) ? "ack" : "data", p->size_bytes, n);
}

static PyMemberDef QPacket_members[] = {
    {"pn", T_LONGLONG, offsetof(QPacketObject, pn), READONLY, NULL},
    {"time_sent_s", T_DOUBLE, offsetof(QPacketObject, time_sent_s), READONLY, NULL},
    {"size_bytes", T_LONGLONG, offsetof(QPacketObject, size_bytes), READONLY, "UDP payload bytes"},
    {"ack_eliciting", T_BOOL, offsetof(QPacketObject, ack_eliciting), READONLY, NULL},
    {"done", T_BOOL, offsetof(QPacketObject, done), 0, "acknowledged or declared lost (sender side)"},
    {"probe", T_BOOL, offsetof(QPacketObject, probe), READONLY, NULL},
    {NULL},
};

static PyTypeObject QPacketType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = NET_MODULE ".QuicPacket",
    .tp_doc = "QuicPacket(pn, time_sent_s, size_bytes, frames, ack=None, ack_eliciting=True, probe=False): "
              "one QUIC packet (packet.QuicPacket's C twin).",
    .tp_basicsize = sizeof(QPacketObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_new = QPacket_new,
    .tp_traverse = (traverseproc)QPacket_traverse,
    .tp_clear = (inquiry)QPacket_clear,
    .tp_dealloc = (destructor)QPacket_dealloc,
    .tp_repr = (reprfunc)QPacket_repr,
    .tp_members = QPacket_members,
    .tp_getset = QPacket_getset,
};

/* -- the QuicCore type -- */

static int
Core_init(CoreObject *c, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"cc", "max_datagram_bytes", "initial_window_segments", "initial_rtt_s",
                             "max_ack_delay_s", "time_threshold", "packet_threshold", "pacing",
                             "slow_start_rtt_exit", "pacer_late_s", NULL};
    const char *cc_name;
    long long mdb, iw, threshold;
    double initial_rtt, max_ack_delay, time_threshold, late = 0.0;
    int pacing, monitor;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "sLLdddLpp|d", kwlist, &cc_name, &mdb, &iw, &initial_rtt,
                                     &max_ack_delay, &time_threshold, &threshold, &pacing, &monitor, &late))
        return -1;
    int kind;
    if (strcmp(cc_name, "reno") == 0 || strcmp(cc_name, "newreno") == 0)
        kind = CC_RENO;
    else if (strcmp(cc_name, "cubic") == 0)
        kind = CC_CUBIC;
    else {
        PyErr_Format(PyExc_ValueError, "unknown congestion control %s", cc_name);
        return -1;
    }
    Py_CLEAR(c->cc);
    Py_CLEAR(c->rtt);
    c->cc = cc_new(kind, mdb, iw);
    c->rtt = rtt_new(initial_rtt, 0.2);
    if (c->cc == NULL || c->rtt == NULL)
        return -1;
    Py_INCREF(Py_None);
    Py_XSETREF(c->cwnd_log, Py_None);
    c->max_ack_delay_s = max_ack_delay;
    c->time_threshold = time_threshold;
    c->packet_threshold = threshold;
    c->max_datagram = mdb;
    c->largest_acked = -1;
    c->pto_count = c->bytes_in_flight = 0;
    c->has_loss_time = 0;
    c->loss_time = c->last_ack_eliciting_s = 0.0;
    c->recovery_start_s = -1.0;
    c->pto_watch_pn = -1;
    c->pto_watch_ptos = 0;
    c->pto_watch_lost = 0;
    c->pacing = (char)pacing;
    c->has_interval = 0;
    c->interval_s = c->credit_s = c->credit_max_s = c->updated_s = 0.0;
    c->late_s = late;
    c->monitor = (char)monitor;
    memset(c->mon_samples, 0, sizeof(c->mon_samples));
    c->mon_last_s = 0.0;
    c->mon_index = c->mon_increases = 0;
    c->mon_full = c->mon_has_base = 0;
    c->nranges = 0;
    c->largest_recv_pn = -1;
    c->largest_recv_time_s = 0.0;
    return 0;
}

static void
clear_sent(CoreObject *c)
{
    for (Py_ssize_t i = c->head; i < c->head + c->len; i++)
        Py_CLEAR(c->sent[i].packet);
    c->head = c->len = c->outstanding = 0;
}

static int
Core_traverse(CoreObject *c, visitproc visit, void *arg)
{
    Py_VISIT(c->cwnd_log);
    Py_VISIT(c->packet_class);
    Py_VISIT(c->link_packet_class);
    Py_VISIT(c->retx_queue);
    Py_VISIT(c->new_queue);
    Py_VISIT(c->send_streams);
    Py_VISIT(c->recv_streams);
    Py_VISIT(c->recv_stream_class);
    Py_VISIT(c->send_stream_class);
    Py_VISIT(c->sim);
    Py_VISIT(c->timers);
    Py_VISIT(c->on_loss_timeout);
    Py_VISIT(c->flush_event);
    Py_VISIT(c->ack_now_event);
    Py_VISIT(c->link);
    Py_VISIT(c->push);
    for (Py_ssize_t i = c->head; i < c->head + c->len; i++)
        Py_VISIT(c->sent[i].packet);
    return 0;
}

static int
Core_clear(CoreObject *c)
{
    Py_CLEAR(c->cwnd_log);
    Py_CLEAR(c->packet_class);
    Py_CLEAR(c->link_packet_class);
    Py_CLEAR(c->retx_queue);
    Py_CLEAR(c->new_queue);
    Py_CLEAR(c->send_streams);
    Py_CLEAR(c->recv_streams);
    Py_CLEAR(c->recv_stream_class);
    Py_CLEAR(c->send_stream_class);
    Py_CLEAR(c->sim);
    Py_CLEAR(c->timers);
    Py_CLEAR(c->on_loss_timeout);
    Py_CLEAR(c->flush_event);
    Py_CLEAR(c->ack_now_event);
    Py_CLEAR(c->link);
    Py_CLEAR(c->push);
    clear_sent(c);
    return 0;
}

static void
Core_dealloc(CoreObject *c)
{
    PyObject_GC_UnTrack(c);
    Core_clear(c);
    Py_CLEAR(c->rtt);
    Py_CLEAR(c->cc);
    PyMem_Free(c->sent);
    Py_TYPE(c)->tp_free((PyObject *)c);
}

static int record_sent(CoreObject *c, PyObject *packet, long long pn, double t, long long size);

/* on_sent(packet, pn, time_sent_s, size_bytes): an ack-eliciting packet left
 * (packet_builder._send_packet's bookkeeping). */
static PyObject *
Core_on_sent(CoreObject *c, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "on_sent(packet, pn, time_sent_s, size_bytes)");
        return NULL;
    }
    long long pn = PyLong_AsLongLong(args[1]);
    double t;
    long long size = PyLong_AsLongLong(args[3]);
    if ((pn == -1 || size == -1) && PyErr_Occurred())
        return NULL;
    if (get_double(args[2], &t) < 0)
        return NULL;
    if (record_sent(c, args[0], pn, t, size) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static int
record_sent(CoreObject *c, PyObject *packet, long long pn, double t, long long size)
{
    /* drop settled records at the front (the reference's lazy popleft), then make room */
    while (c->len > 0 && c->sent[c->head].done) {
        Py_CLEAR(c->sent[c->head].packet);
        c->head++;
        c->len--;
    }
    if (c->head + c->len == c->cap) {
        if (c->head > 0 && c->head >= c->cap / 2) {
            memmove(c->sent, c->sent + c->head, c->len * sizeof(Sent));
            c->head = 0;
        }
        else {
            Py_ssize_t cap = c->cap ? 2 * c->cap : 64;
            Sent *buf = PyMem_Realloc(c->sent, cap * sizeof(Sent));
            if (buf == NULL) {
                PyErr_NoMemory();
                return -1;
            }
            c->sent = buf;
            c->cap = cap;
        }
    }
    Sent *s = &c->sent[c->head + c->len];
    Py_INCREF(packet);
    s->packet = packet;
    s->pn = pn;
    s->size = size;
    s->time_sent = t;
    s->done = 0;
    c->len++;
    c->outstanding++;
    c->bytes_in_flight += size;
    c->last_ack_eliciting_s = t;
    return 0;
}

/* Index of the first record with pn >= target in [head, head + len). */
static Py_ssize_t
lower_bound(CoreObject *c, long long target)
{
    Py_ssize_t lo = c->head, hi = c->head + c->len;
    while (lo < hi) {
        Py_ssize_t mid = lo + (hi - lo) / 2;
        if (c->sent[mid].pn < target)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* on_ack(ranges, ack_delay_s, now): the first half of recovery._on_ack_frame.  The packets
 * newly acknowledged, oldest first, after the RTT sample (5.1), the pacing rate, the bytes in
 * flight and the window (7.3.2: no growth for packets sent before the recovery started);
 * None when the frame acknowledges nothing new (the reference returns there). */
/* An ACK frame's ranges [(low, high), ...] (a list of tuples, highest first) as 2n C values. */
static long long *
parse_ranges(PyObject *ranges, Py_ssize_t *nr)
{
    if (!PyList_Check(ranges)) {
        PyErr_SetString(PyExc_TypeError, "an ACK frame's ranges are a list");
        return NULL;
    }
    Py_ssize_t n = PyList_GET_SIZE(ranges);
    long long *rg = PyMem_Malloc((size_t)(2 * n + 1) * sizeof(long long));
    if (rg == NULL) {
        PyErr_NoMemory();
        return NULL;
    }
    for (Py_ssize_t k = 0; k < n; k++) {
        PyObject *item = PyList_GET_ITEM(ranges, k);
        if (!PyTuple_Check(item) || PyTuple_GET_SIZE(item) != 2) {
            PyMem_Free(rg);
            PyErr_SetString(PyExc_TypeError, "an ACK range is a (low, high) tuple");
            return NULL;
        }
        rg[2 * k] = PyLong_AsLongLong(PyTuple_GET_ITEM(item, 0));
        rg[2 * k + 1] = PyLong_AsLongLong(PyTuple_GET_ITEM(item, 1));
        if ((rg[2 * k] == -1 || rg[2 * k + 1] == -1) && PyErr_Occurred()) {
            PyMem_Free(rg);
            return NULL;
        }
    }
    *nr = n;
    return rg;
}

/* The packets an ACK frame newly acknowledges, oldest first (references held): on the stack up
 * to PKTBUF_INLINE (an ACK a packet or two, as a load's mostly are), else on the heap. */
#define PKTBUF_INLINE 16
typedef struct {
    PyObject **v;
    Py_ssize_t n;
    PyObject *inl[PKTBUF_INLINE];
} PktBuf;

static void
pktbuf_release(PktBuf *b)
{
    for (Py_ssize_t i = 0; i < b->n; i++)
        Py_DECREF(b->v[i]);
    if (b->v != b->inl)
        PyMem_Free(b->v);
    b->v = b->inl;
    b->n = 0;
}

static int on_ack(CoreObject *c, const long long *rg, Py_ssize_t nr, double ack_delay, double now, PktBuf *out);

static PyObject *
Core_on_ack(CoreObject *c, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3 || !PyList_Check(args[0])) {
        PyErr_SetString(PyExc_TypeError, "on_ack(ranges: list, ack_delay_s, now)");
        return NULL;
    }
    double ack_delay, now;
    if (get_double(args[1], &ack_delay) < 0 || get_double(args[2], &now) < 0)
        return NULL;
    Py_ssize_t nr;
    long long *rg = parse_ranges(args[0], &nr);
    if (rg == NULL)
        return NULL;
    PktBuf newly;
    int rc = on_ack(c, rg, nr, ack_delay, now, &newly);
    PyMem_Free(rg);
    if (rc < 0)
        return NULL;
    if (newly.n == 0)
        Py_RETURN_NONE;
    PyObject *out = PyList_New(newly.n);
    if (out != NULL)
        for (Py_ssize_t i = 0; i < newly.n; i++)
            PyList_SET_ITEM(out, i, Py_NewRef(newly.v[i]));
    pktbuf_release(&newly);
    return out;
}

/* on_ack on the frame's ranges rg (low, high pairs, highest first): the packets newly
 * acknowledged into *out (none: the reference's None). */
static int
on_ack(CoreObject *c, const long long *rg, Py_ssize_t nr, double ack_delay, double now, PktBuf *out)
{
    out->v = out->inl;
    out->n = 0;
    while (c->len > 0 && c->sent[c->head].done) {
        Py_CLEAR(c->sent[c->head].packet);
        c->head++;
        c->len--;
    }
    if (c->len == 0)
        return 0;
    long long smallest = c->sent[c->head].pn;
    if (nr == 0)
        return 0;
    long long largest_in_frame = 0;
    /* newly acknowledged, highest first: record indices */
    Py_ssize_t cap = 16, n = 0;
    Py_ssize_t idx0[16], *idx = idx0;             /* on the heap past 16 */
#define IDX_FREE() do { if (idx != idx0) PyMem_Free(idx); } while (0)
    for (Py_ssize_t k = 0; k < nr; k++) {           /* highest first */
        long long low = rg[2 * k], high = rg[2 * k + 1];
        if (k == 0)
            largest_in_frame = high;
        if (high < smallest)
            break;
        Py_ssize_t i = lower_bound(c, high + 1) - 1;
        for (; i >= c->head && c->sent[i].pn >= low; i--) {
            if (c->sent[i].done)
                continue;
            if (n == cap) {
                cap *= 2;
                Py_ssize_t *grown = PyMem_Malloc(cap * sizeof(Py_ssize_t));
                if (grown == NULL) {
                    IDX_FREE();
                    PyErr_NoMemory();
                    return -1;
                }
                memcpy(grown, idx, (size_t)n * sizeof(Py_ssize_t));
                IDX_FREE();
                idx = grown;
            }
            idx[n++] = i;
        }
    }
    if (n == 0) {
        IDX_FREE();
        return 0;
    }
    if (largest_in_frame > c->largest_acked)
        c->largest_acked = largest_in_frame;
    Sent *first = &c->sent[idx[0]];
    if (first->pn == largest_in_frame) {           /* RTT sample (5.1) */
        double sample = now - first->time_sent;
        rtt_update(c->rtt, sample, py_min(ack_delay, c->max_ack_delay_s), 0);
        slow_start_check(c, now, sample);
        if (c->pacing)                             /* aioquic sets the pacing rate at each RTT sample */
            pacer_set_rate(c);
    }
    double srtt = rtt_smoothed(c->rtt);
    if (n > PKTBUF_INLINE && (out->v = PyMem_Malloc((size_t)n * sizeof(PyObject *))) == NULL) {
        out->v = out->inl;
        IDX_FREE();
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t j = 0; j < n; j++) {           /* oldest first */
        Sent *s = &c->sent[idx[n - 1 - j]];
        s->done = 1;
        c->outstanding -= 1;
        c->bytes_in_flight -= s->size;
        if (s->time_sent > c->recovery_start_s && cc_on_ack(c->cc, s->size, now, srtt) < 0) {
            IDX_FREE();
            pktbuf_release(out);
            return -1;
        }
        out->v[out->n++] = Py_NewRef(s->packet);
    }
    IDX_FREE();
    return 0;
#undef IDX_FREE
}

/* after_ack(now): the second half of recovery._on_ack_frame, after the streams' bookkeeping:
 * the window log, loss detection (A.10), the spurious-PTO watch, the PTO backoff reset (A.7).
 * The packets declared lost (pn order; their data is Python's to queue again), or None. */
static PyObject *
after_ack(CoreObject *c, double now)
{
    if (log_cwnd(c, now) < 0)
        return NULL;
    PyObject *lost = NULL;
    if (detect_lost(c, now, &lost) < 0) {
        Py_XDECREF(lost);
        return NULL;
    }
    if (c->pto_watch_pn >= 0) {
        long long first = -1;
        for (Py_ssize_t i = c->head; i < c->head + c->len; i++)
            if (!c->sent[i].done) {
                first = c->sent[i].pn;
                break;
            }
        if (c->outstanding == 0 || first > c->pto_watch_pn) {
            if (!c->pto_watch_lost)
                c->spurious_ptos += c->pto_watch_ptos;
            c->pto_watch_pn = -1;
        }
    }
    c->pto_count = 0;
    if (lost == NULL)
        Py_RETURN_NONE;
    return lost;
}

static PyObject *
Core_after_ack(CoreObject *c, PyObject *arg)
{
    double now;
    if (get_double(arg, &now) < 0)
        return NULL;
    return after_ack(c, now);
}

/* loss_deadline(): recovery._set_loss_detection_timer's time (A.8): the loss time if any,
 * else the PTO if anything is in flight; None: cancel the timer. */
static PyObject *
Core_loss_deadline(CoreObject *c, PyObject *unused)
{
    if (c->has_loss_time)
        return PyFloat_FromDouble(c->loss_time);
    if (c->outstanding == 0)
        Py_RETURN_NONE;
    RttObject *r = c->rtt;
    double pto = rtt_smoothed(r) + py_max(4 * r->rttvar_s, r->granularity_s) + c->max_ack_delay_s;
    pto = pto * ldexp(1.0, (int)c->pto_count);      /* * 2 ** pto_count: exact */
    return PyFloat_FromDouble(c->last_ack_eliciting_s + pto);
}

/* on_loss_timeout(now): recovery._on_loss_detection_timeout (A.9) up to the probes: with a
 * loss time, the packets it declares lost (a list, maybe empty); else, with packets in
 * flight, True (a PTO: the backoff and the spurious-PTO watch are done, the caller sends
 * the probes); else None. */
static PyObject *
Core_on_loss_timeout(CoreObject *c, PyObject *arg)
{
    double now;
    if (get_double(arg, &now) < 0)
        return NULL;
    if (c->has_loss_time) {
        PyObject *lost = NULL;
        if (detect_lost(c, now, &lost) < 0) {
            Py_XDECREF(lost);
            return NULL;
        }
        return lost != NULL ? lost : PyList_New(0);
    }
    if (c->outstanding == 0)
        Py_RETURN_NONE;
    c->ptos += 1;
    if (c->pto_watch_pn < 0) {
        c->pto_watch_ptos = 0;
        c->pto_watch_lost = 0;
    }
    c->pto_watch_ptos += 1;
    for (Py_ssize_t i = c->head + c->len - 1; i >= c->head; i--)     /* the newest packet in flight */
        if (!c->sent[i].done) {
            c->pto_watch_pn = c->sent[i].pn;
            break;
        }
    c->pto_count += 1;
    Py_RETURN_TRUE;
}

/* outstanding(index): the index-th oldest packet in flight (or the newest if fewer). */
static PyObject *
Core_outstanding(CoreObject *c, PyObject *arg)
{
    Py_ssize_t index = PyLong_AsSsize_t(arg);
    if (index == -1 && PyErr_Occurred())
        return NULL;
    PyObject *found = NULL;
    Py_ssize_t seen = 0;
    for (Py_ssize_t i = c->head; i < c->head + c->len && seen <= index; i++)
        if (!c->sent[i].done) {
            found = c->sent[i].packet;
            seen++;
        }
    if (found == NULL) {
        PyErr_SetString(PyExc_IndexError, "no packet in flight");
        return NULL;
    }
    Py_INCREF(found);
    return found;
}

/* rtt_sample(sample_s, now): recovery._rtt_sample (the handshake's: no ack delay). */
static PyObject *
Core_rtt_sample(CoreObject *c, PyObject *const *args, Py_ssize_t nargs)
{
    double sample, now;
    if (nargs != 2 || get_double(args[0], &sample) < 0 || get_double(args[1], &now) < 0) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_TypeError, "rtt_sample(sample_s, now)");
        return NULL;
    }
    rtt_update(c->rtt, sample, 0.0, PyLong_Check(args[0]));
    slow_start_check(c, now, sample);
    if (c->pacing)
        pacer_set_rate(c);
    Py_RETURN_NONE;
}

/* cwnd_open(): the window lets another packet go (bytes in flight < cwnd, RFC 9002 7). */
static PyObject *
Core_cwnd_open(CoreObject *c, PyObject *unused)
{
    return PyBool_FromLong((double)c->bytes_in_flight < c->cc->cwnd);
}

/* pace(now): pacer.Pacer.next_send_s: None if a packet may leave now (or no pacing). */
static PyObject *
Core_pace(CoreObject *c, PyObject *arg)
{
    if (!c->pacing || !c->has_interval)
        Py_RETURN_NONE;
    double now;
    if (get_double(arg, &now) < 0)
        return NULL;
    pacer_refill(c, now);
    if (c->credit_s <= 0)
        return PyFloat_FromDouble(now + c->interval_s + c->late_s);
    Py_RETURN_NONE;
}

/* paced(now): pacer.Pacer.on_packet_sent. */
static PyObject *
Core_paced(CoreObject *c, PyObject *arg)
{
    if (!c->pacing || !c->has_interval)
        Py_RETURN_NONE;
    double now;
    if (get_double(arg, &now) < 0)
        return NULL;
    pacer_refill(c, now);
    c->credit_s = c->credit_s < c->interval_s ? 0.0 : c->credit_s - c->interval_s;
    Py_RETURN_NONE;
}

/* -- receiver: packet numbers and ACK frames (ack.AckGeneration) -- */

/* on_packet_number(pn, now): record a received packet number; True if it arrived out of
 * order (13.2.1: below the largest, or a gap before it). */
static int
packet_number(CoreObject *c, long long pn, double now)
{
    long long *lows = c->lows, *highs = c->highs;
    int n = c->nranges;
    long long largest = c->largest_recv_pn;
    if (n && pn == highs[n - 1] + 1)
        highs[n - 1] = pn;
    else {
        int i = 0;                                  /* bisect_left(lows, pn) */
        while (i < n && lows[i] < pn)
            i++;
        if (i > 0 && highs[i - 1] + 1 >= pn) {
            if (pn > highs[i - 1])
                highs[i - 1] = pn;
            i -= 1;
        }
        else {
            memmove(lows + i + 1, lows + i, (n - i) * sizeof(long long));
            memmove(highs + i + 1, highs + i, (n - i) * sizeof(long long));
            lows[i] = highs[i] = pn;
            n++;
        }
        if (i + 1 < n && lows[i + 1] == highs[i] + 1) {     /* filled a gap: merge */
            highs[i] = highs[i + 1];
            memmove(lows + i + 1, lows + i + 2, (n - i - 2) * sizeof(long long));
            memmove(highs + i + 1, highs + i + 2, (n - i - 2) * sizeof(long long));
            n--;
        }
        if (n > MAX_ACK_RANGES) {
            memmove(lows, lows + 1, (n - 1) * sizeof(long long));
            memmove(highs, highs + 1, (n - 1) * sizeof(long long));
            n--;
        }
        c->nranges = n;
    }
    if (pn > largest) {
        c->largest_recv_pn = pn;
        c->largest_recv_time_s = now;
    }
    return largest >= 0 && (pn < largest || pn > largest + 1);
}

static PyObject *
Core_on_packet_number(CoreObject *c, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "on_packet_number(pn, now)");
        return NULL;
    }
    long long pn = PyLong_AsLongLong(args[0]);
    if (pn == -1 && PyErr_Occurred())
        return NULL;
    double now;
    if (get_double(args[1], &now) < 0)
        return NULL;
    return PyBool_FromLong(packet_number(c, pn, now));
}

static long long
ack_frame_size(CoreObject *c, double ack_delay_s)
{
    int n = c->nranges;
    long long *lows = c->lows, *highs = c->highs;
    long long size = 1 + varint_len(highs[n - 1]) + varint_len(((long long)(ack_delay_s * 1e6)) >> ACK_DELAY_EXPONENT)
        + varint_len(n - 1) + varint_len(highs[n - 1] - lows[n - 1]);
    long long prev_low = lows[n - 1];
    for (int i = n - 2; i >= 0; i--) {
        size += varint_len(prev_low - highs[i] - 2) + varint_len(highs[i] - lows[i]);
        prev_low = lows[i];
    }
    return size;
}

static PyObject *ack_tuple(CoreObject *c, double now, long long *size);

/* ack_frame(now): ((ranges highest first, ack_delay_s), size) (RFC 9000 section 19.3). */
static PyObject *
Core_ack_frame(CoreObject *c, PyObject *arg)
{
    double now;
    if (get_double(arg, &now) < 0)
        return NULL;
    if (c->nranges == 0) {
        PyErr_SetString(PyExc_IndexError, "no packet received");
        return NULL;
    }
    long long size;
    PyObject *ack = ack_tuple(c, now, &size);
    if (ack == NULL)
        return NULL;
    return STEAL_TUPLE(ack, PyLong_FromLongLong(size));
}

/* The ACK frame (ranges highest first, ack_delay_s) of ack._ack_frame, its size in *size. */
static PyObject *
ack_tuple(CoreObject *c, double now, long long *size)
{
    int n = c->nranges;
    PyObject *ranges = PyList_New(n);
    if (ranges == NULL)
        return NULL;
    for (int i = 0; i < n; i++) {
        PyObject *rg = STEAL_TUPLE(PyLong_FromLongLong(c->lows[n - 1 - i]), PyLong_FromLongLong(c->highs[n - 1 - i]));
        if (rg == NULL) {
            Py_DECREF(ranges);
            return NULL;
        }
        PyList_SET_ITEM(ranges, i, rg);
    }
    double ack_delay_s = now - c->largest_recv_time_s;
    *size = ack_frame_size(c, ack_delay_s);
    return STEAL_TUPLE(ranges, PyFloat_FromDouble(ack_delay_s));
}

/* ack_frame_size(now): the ACK frame's size alone (ack._pending_ack_bytes). */
static PyObject *
Core_ack_frame_size(CoreObject *c, PyObject *arg)
{
    double now;
    if (get_double(arg, &now) < 0)
        return NULL;
    if (c->nranges == 0) {
        PyErr_SetString(PyExc_IndexError, "no packet received");
        return NULL;
    }
    return PyLong_FromLongLong(ack_frame_size(c, now - c->largest_recv_time_s));
}

/* -- TimerSlots: engine.TimerSlots's C twin for a QUIC endpoint's four slots ---------------
 *
 * The same heap entries as the reference (one live entry per owner, the earliest expiry,
 * pushed as self._fire(gen) on the engine's queue; stale entries find nothing due), the
 * same order of the callbacks at one instant (by time, then slot name), so the engine sees
 * the same events; named TimerSlots so a traced run labels them "TimerSlots._fire". */

#define N_SLOTS 4
static const char *slot_names[N_SLOTS] = {"loss", "ack", "pace", "handshake"};   /* the endpoint's order */
static const int slot_rank[N_SLOTS] = {2, 0, 3, 1};      /* their names' sort order */

typedef struct {
    PyObject_HEAD
    PyObject *sim, *owner, *push, *fire;
    push_c_fn push_c;               /* push's C push (NULL: call push), on queue (borrowed) */
    PyObject *queue;
    double when[N_SLOTS];
    PyObject *cb[N_SLOTS];          /* NULL: the slot is empty */
    double scheduled;
    char has_scheduled;
    long long gen;
} TimersObject;

static PyTypeObject TimersType;

static int
slot_of(PyObject *name)
{
    if (PyUnicode_Check(name))
        for (int i = 0; i < N_SLOTS; i++)
            if (PyUnicode_CompareWithASCIIString(name, slot_names[i]) == 0)
                return i;
    PyErr_Format(PyExc_KeyError, "no timer slot %R", name);
    return -1;
}

static int timers_cfire(PyObject *fire, uint64_t gen);
static int bound_timer_kind(PyObject *callback);
static int bound_cfire(PyObject *bound, uint64_t gen);

static int
tm_schedule(TimersObject *t, double when)
{
    t->gen += 1;
    t->scheduled = when;
    t->has_scheduled = 1;
    if (t->push_c != NULL) {          /* the engine's C event: the same key, callable and args */
        PyObject *w = PyFloat_FromDouble(when);
        int rc = w == NULL ? -1 : t->push_c(t->queue, when, w, t->fire, timers_cfire, (uint64_t)t->gen, 1);
        Py_XDECREF(w);
        return rc;
    }
    PyObject *args = STEAL_TUPLE(PyLong_FromLongLong(t->gen));
    PyObject *when_o = args == NULL ? NULL : PyFloat_FromDouble(when);
    PyObject *r = when_o == NULL ? NULL : call3(t->push, when_o, t->fire, args);
    Py_XDECREF(when_o);
    Py_XDECREF(args);
    Py_XDECREF(r);
    return r == NULL ? -1 : 0;
}

static int
tm_now(TimersObject *t, double *now)
{
    PyObject *o = SITE_GETATTR(t->sim, str_now);
    if (o == NULL)
        return -1;
    int rc = get_double(o, now);
    Py_DECREF(o);
    return rc;
}

/* TimerSlots.set(slot, when_s, callback) */
static int
tm_set(TimersObject *t, int slot, double when, PyObject *callback)
{
    double now;
    if (tm_now(t, &now) < 0)
        return -1;
    if (when < now)
        when = now;
    t->when[slot] = when;
    Py_INCREF(callback);
    Py_XSETREF(t->cb[slot], callback);
    if (!t->has_scheduled || when < t->scheduled)
        return tm_schedule(t, when);
    return 0;
}

static void
tm_cancel(TimersObject *t, int slot)
{
    Py_CLEAR(t->cb[slot]);        /* lazy: the heap entry stays, as in TimerSlots */
}

static PyObject *
Timers_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
    PyObject *sim, *owner;
    if (!PyArg_ParseTuple(args, "OO:TimerSlots", &sim, &owner))
        return NULL;
    TimersObject *t = (TimersObject *)type->tp_alloc(type, 0);
    if (t == NULL)
        return NULL;
    Py_INCREF(sim);
    t->sim = sim;
    Py_INCREF(owner);
    t->owner = owner;
    t->push = PyObject_GetAttrString(sim, "_push");
    t->fire = t->push == NULL ? NULL : PyObject_GetAttrString((PyObject *)t, "_fire");
    if (t->fire == NULL) {
        Py_DECREF(t);
        return NULL;
    }
    t->push_c = PyCFunction_Check(t->fire) ? queue_push_c(t->push, &t->queue) : NULL;
    return (PyObject *)t;
}

static int
Timers_traverse(TimersObject *t, visitproc visit, void *arg)
{
    Py_VISIT(t->sim);
    Py_VISIT(t->owner);
    Py_VISIT(t->push);
    Py_VISIT(t->fire);
    for (int i = 0; i < N_SLOTS; i++)
        Py_VISIT(t->cb[i]);
    return 0;
}

static int
Timers_clear(TimersObject *t)
{
    Py_CLEAR(t->sim);
    Py_CLEAR(t->owner);
    Py_CLEAR(t->push);
    Py_CLEAR(t->fire);
    for (int i = 0; i < N_SLOTS; i++)
        Py_CLEAR(t->cb[i]);
    return 0;
}

static void
Timers_dealloc(TimersObject *t)
{
    PyObject_GC_UnTrack(t);
    Timers_clear(t);
    Py_TYPE(t)->tp_free((PyObject *)t);
}

static PyObject *
Timers_set(TimersObject *t, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "set(slot, when_s, callback)");
        return NULL;
    }
    int slot = slot_of(args[0]);
    double when;
    if (slot < 0 || get_double(args[1], &when) < 0 || tm_set(t, slot, when, args[2]) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *
Timers_cancel(TimersObject *t, PyObject *name)
{
    int slot = slot_of(name);
    if (slot < 0)
        return NULL;
    tm_cancel(t, slot);
    Py_RETURN_NONE;
}

static PyObject *
Timers_expiry(TimersObject *t, PyObject *name)
{
    int slot = slot_of(name);
    if (slot < 0)
        return NULL;
    if (t->cb[slot] == NULL)
        Py_RETURN_NONE;
    return PyFloat_FromDouble(t->when[slot]);
}

static PyObject *
Timers_armed(TimersObject *t, PyObject *unused)
{
    PyObject *d = PyDict_New();
    for (int i = 0; d != NULL && i < N_SLOTS; i++) {
        if (t->cb[i] == NULL)
            continue;
        PyObject *w = PyFloat_FromDouble(t->when[i]);
        if (w == NULL || PyDict_SetItemString(d, slot_names[i], w) < 0) {
            Py_XDECREF(w);
            Py_CLEAR(d);
            break;
        }
        Py_DECREF(w);
    }
    return d;
}

/* TimerSlots._fire(gen): the slots due now, earliest first (equal times in name order). */
static int
timers_fire_gen(TimersObject *t, long long gen)
{
    if (gen != t->gen)
        return 0;                     /* superseded by an earlier expiry */
    t->has_scheduled = 0;
    double now;
    if (tm_now(t, &now) < 0)
        return -1;
    int order[N_SLOTS], n = 0;
    double due[N_SLOTS];
    for (int i = 0; i < N_SLOTS; i++)
        if (t->cb[i] != NULL && t->when[i] <= now) {
            int j = n++;               /* insertion sort by (when, name) */
            while (j > 0 && (due[j - 1] > t->when[i]
                             || (due[j - 1] == t->when[i] && slot_rank[order[j - 1]] > slot_rank[i]))) {
                due[j] = due[j - 1];
                order[j] = order[j - 1];
                j--;
            }
            due[j] = t->when[i];
            order[j] = i;
        }
    for (int k = 0; k < n; k++) {
        int slot = order[k];
        if (t->cb[slot] == NULL || t->when[slot] != due[k])
            continue;                 /* cancelled or re-armed by an earlier callback of this batch */
        PyObject *callback = t->cb[slot];
        t->cb[slot] = NULL;           /* the reference to it is ours now */
        if (bound_timer_kind(callback)) {          /* an endpoint's flush or ack_now: in C */
            int rc = bound_cfire(callback, 0);
            Py_DECREF(callback);
            if (rc < 0)
                return -1;
            continue;
        }
        PyObject *r = PyObject_CallNoArgs(callback);
        Py_DECREF(callback);
        if (r == NULL)
            return -1;
        Py_DECREF(r);
    }
    if (!t->has_scheduled) {
        int any = 0;
        double later = 0.0;
        for (int i = 0; i < N_SLOTS; i++)
            if (t->cb[i] != NULL && (!any || t->when[i] < later)) {
                later = t->when[i];
                any = 1;
            }
        if (any && tm_schedule(t, later) < 0)
            return -1;
    }
    return 0;
}

static PyObject *
Timers_fire(TimersObject *t, PyObject *gen_obj)
{
    long long gen = PyLong_AsLongLong(gen_obj);
    if ((gen == -1 && PyErr_Occurred()) || timers_fire_gen(t, gen) < 0)
        return NULL;
    Py_RETURN_NONE;
}

/* The engine's C event of a TimerSlots (fire: its bound _fire, which a traced run calls). */
static int
timers_cfire(PyObject *fire, uint64_t gen)
{
    return timers_fire_gen((TimersObject *)PyCFunction_GET_SELF(fire), (long long)gen);
}

static PyMethodDef Timers_methods[] = {
    {"set", (PyCFunction)(void (*)(void))Timers_set, METH_FASTCALL, "set(slot, when_s, callback)"},
    {"cancel", (PyCFunction)Timers_cancel, METH_O, "cancel(slot)"},
    {"expiry", (PyCFunction)Timers_expiry, METH_O, "expiry(slot): seconds, or None"},
    {"armed", (PyCFunction)Timers_armed, METH_NOARGS, "the armed slots and their expiry times"},
    {"_fire", (PyCFunction)Timers_fire, METH_O, "_fire(gen): the heap entry of generation gen popped"},
    {NULL},
};

static PyMemberDef Timers_members[] = {
    {"sim", T_OBJECT, offsetof(TimersObject, sim), READONLY, NULL},
    {"owner", T_OBJECT, offsetof(TimersObject, owner), READONLY, NULL},
    {NULL},
};

static PyTypeObject TimersType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = NET_MODULE ".TimerSlots",
    .tp_doc = "TimerSlots(sim, owner): a QUIC endpoint's loss, ack, pace and handshake timer slots "
              "(engine.TimerSlots's C twin).",
    .tp_basicsize = sizeof(TimersObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_new = Timers_new,
    .tp_traverse = (traverseproc)Timers_traverse,
    .tp_clear = (inquiry)Timers_clear,
    .tp_dealloc = (destructor)Timers_dealloc,
    .tp_methods = Timers_methods,
    .tp_members = Timers_members,
};

/* -- the sending path (packet_builder.PacketBuilder, ack._send_ack, A.8's timer) ------------
 *
 * On the endpoint's own Python objects: its slots (ready, _ack_due, _next_pn, the counters),
 * its queues of chunks, its SendStreams, its TimerSlots, its link; each read and written where
 * the reference reads and writes it, so what Python code around sees is the same. */

static int
attr_truthy(PyObject *o, PyObject *name)
{
    PyObject *v = SITE_GETATTR(o, name);
    if (v == NULL)
        return -1;
    int t = PyObject_IsTrue(v);
    Py_DECREF(v);
    return t;
}

static int
attr_long(PyObject *o, PyObject *name, long long *out)
{
    PyObject *v = SITE_GETATTR(o, name);
    if (v == NULL)
        return -1;
    *out = PyLong_AsLongLong(v);
    Py_DECREF(v);
    return (*out == -1 && PyErr_Occurred()) ? -1 : 0;
}

static int
set_long(PyObject *o, PyObject *name, long long v)
{
    PyObject *x = PyLong_FromLongLong(v);
    if (x == NULL)
        return -1;
    int rc = fast_setattr(o, name, x);
    Py_DECREF(x);
    return rc;
}

static int
add_long(PyObject *o, PyObject *name, long long delta)
{
    long long v;
    if (attr_long(o, name, &v) < 0)
        return -1;
    return set_long(o, name, v + delta);
}

static int
sim_now(CoreObject *c, double *now)
{
    PyObject *t = SITE_GETATTR(c->sim, str_now);
    if (t == NULL)
        return -1;
    int rc = get_double(t, now);
    Py_DECREF(t);
    return rc;
}

static int
fast_slot(PyObject *slot)
{
    return slot == str_loss ? 0 : slot == str_ack ? 1 : slot == str_pace ? 2 : -1;
}

static PyObject *
call_timers(CoreObject *c, PyObject *method, PyObject *slot, PyObject *when, PyObject *callback)
{
    PyObject *timers = c->timers;
    Py_INCREF(timers);
    PyObject *r;
    int index = fast_slot(slot);
    if (Py_IS_TYPE(timers, &TimersType) && index >= 0) {    /* the C twin's: no call through Python */
        TimersObject *t = (TimersObject *)timers;
        r = Py_None;
        Py_INCREF(r);
        if (method == str_cancel)
            tm_cancel(t, index);
        else if (method == str_expiry) {
            Py_DECREF(r);
            r = t->cb[index] == NULL ? (Py_INCREF(Py_None), Py_None) : PyFloat_FromDouble(t->when[index]);
        }
        else {
            double w;
            if (get_double(when, &w) < 0 || tm_set(t, index, w, callback) < 0)
                Py_CLEAR(r);
        }
    }
    else if (callback == NULL)
        r = PyObject_CallMethodOneArg(timers, method, slot);
    else
        r = PyObject_CallMethodObjArgs(timers, method, slot, when, callback, NULL);
    Py_DECREF(timers);
    return r;
}

static int
timers_cancel(CoreObject *c, PyObject *slot)
{
    PyObject *r = call_timers(c, str_cancel, slot, NULL, NULL);
    Py_XDECREF(r);
    return r == NULL ? -1 : 0;
}

/* self.timers.set(slot, when, callback) */
static int
timers_set(CoreObject *c, PyObject *slot, double when, PyObject *cb)
{
    int index = fast_slot(slot);
    if (Py_IS_TYPE(c->timers, &TimersType) && index >= 0)   /* the C twin's: no float object */
        return tm_set((TimersObject *)c->timers, index, when, cb);
    PyObject *t = PyFloat_FromDouble(when);
    if (t == NULL)
        return -1;
    PyObject *r = call_timers(c, str_set, slot, t, cb);
    Py_DECREF(t);
    Py_XDECREF(r);
    return r == NULL ? -1 : 0;
}

/* ack._acked_now: the ACK went out. */
static int
acked_now(CoreObject *c)
{
    if (timers_cancel(c, str_ack) < 0)
        return -1;
    c->unacked_eliciting = 0;
    c->ack_due = 0;
    return 0;
}

/* self.link.send(Packet(wire, packet), self.peer._on_packet); a link of _tcp.c's types through
 * its C send (which calls a send hooked on the instance, as the method call would), looked up
 * once per link; any other link by its send method. */
static int
send_on_link(CoreObject *c, PyObject *ep, long long wire, PyObject *packet, double now)
{
    PyObject *lp;
    if (c->link_packet_new != NULL)
        lp = c->link_packet_new(wire, packet);
    else {
        PyObject *wire_o = PyLong_FromLongLong(wire);
        lp = wire_o == NULL ? NULL : call2(c->link_packet_class, wire_o, packet);
        Py_XDECREF(wire_o);
    }
    if (lp == NULL)
        return -1;
    PyObject *link = SITE_GETATTR(ep, str_link);
    PyObject *peer = link == NULL ? NULL : SITE_GETATTR(ep, str_peer);
    PyObject *deliver = peer == NULL ? NULL : SITE_GETATTR(peer, str_deliver);
    int rc = -1;
    if (deliver != NULL) {
        if (link != c->link) {
            PyObject *cap = _PyType_Lookup(Py_TYPE(link), str_c_send);   /* borrowed */
            Py_XSETREF(c->link, Py_NewRef(link));
            c->link_send = cap != NULL && PyCapsule_IsValid(cap, LINK_SEND_CAPSULE)
                               ? (link_send_fn)PyCapsule_GetPointer(cap, LINK_SEND_CAPSULE)
                               : NULL;
        }
        if (c->link_send != NULL)
            rc = c->link_send(link, lp, deliver, &now) < 0 ? -1 : 0;
        else {
            PyObject *argv[3] = {link, lp, deliver};
            PyObject *r = PyObject_VectorcallMethod(str_send, argv, 3, NULL);
            rc = r == NULL ? -1 : 0;
            Py_XDECREF(r);
        }
    }
    Py_XDECREF(deliver);
    Py_XDECREF(peer);
    Py_XDECREF(link);
    Py_DECREF(lp);
    return rc;
}

/* QuicPacket(pn, time_sent_s, size_bytes, frames, ack, ack_eliciting, probe) and the count. */
static PyObject *
new_packet(CoreObject *c, PyObject *ep, double now, long long size, PyObject *frames, PyObject *ack,
           int eliciting, int probe, long long *pn)
{
    *pn = c->next_pn;
    PyObject *packet = (PyObject *)qpacket_new(*pn, now, size, frames, ack, eliciting, probe);
    if (packet == NULL)
        return NULL;
    c->next_pn = *pn + 1;
    return packet;
}

/* The ACK frame of the received ranges (ack._ack_frame) into packet p, kept in C: nack (low,
 * high) pairs, highest first, and the delay; packet.ack makes the reference's tuple if read. */
static int
packet_take_ack(CoreObject *c, PyObject *packet, double ack_delay_s)
{
    QPacketObject *p = (QPacketObject *)packet;
    int n = c->nranges;
    if (n == 0)                                 /* nothing received: the reference's empty frame */
        return (p->ack = STEAL_TUPLE(PyList_New(0), PyFloat_FromDouble(ack_delay_s))) == NULL ? -1 : 0;
    if ((p->ack_ranges = PyMem_Malloc((size_t)(2 * n) * sizeof(long long))) == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (int i = 0; i < n; i++) {
        p->ack_ranges[2 * i] = c->lows[n - 1 - i];
        p->ack_ranges[2 * i + 1] = c->highs[n - 1 - i];
    }
    p->nack = n;
    p->ack_delay_s = ack_delay_s;
    return 0;
}

/* packet_builder._send_packet: an ack-eliciting packet with a new number (RFC 9000 12.3),
 * an ACK riding along if one is pending (13.2). */
/* frames: a list, or NULL for the frames built in C in *fb (moved into the packet; released
 * on an error). */
static int
send_packet(CoreObject *c, PyObject *ep, PyObject *frames, FrameBuf *fb, long long size, int probe, double now)
{
    long long unacked = c->unacked_eliciting, pn;
    double ack_delay_s = now - c->largest_recv_time_s;
    if (unacked) {                              /* the frame's ranges are taken below: acked_now keeps them */
        size += ack_frame_size(c, ack_delay_s);
        if (acked_now(c) < 0) {
            if (fb != NULL)
                fb_release(fb);
            return -1;
        }
    }
    PyObject *packet = new_packet(c, ep, now, size, frames, unacked ? NULL : Py_None, 1, probe, &pn);
    if (packet == NULL) {
        if (fb != NULL)
            fb_release(fb);
        return -1;
    }
    if (frames == NULL)
        qpacket_take_frames((QPacketObject *)packet, fb);
    if (unacked && packet_take_ack(c, packet, ack_delay_s) < 0) {
        Py_DECREF(packet);
        return -1;
    }
    long long wire = size + UDP_IP_HEADER_BYTES;
    c->packets_sent += 1;
    if (probe)
        c->probe_packets_sent += 1;
    c->bytes_sent += wire;
    int rc = (record_sent(c, packet, pn, now, size) < 0 || send_on_link(c, ep, wire, packet, now) < 0) ? -1 : 0;
    Py_DECREF(packet);
    return rc;
}

/* ack._send_ack: an ACK-only packet (not ack-eliciting, not in flight). */
static int
send_ack(CoreObject *c, PyObject *ep, double now)
{
    long long pending = c->unacked_eliciting, size, pn;
    if (acked_now(c) < 0)
        return -1;
    if (!pending || c->nranges == 0)
        return 0;
    double ack_delay_s = now - c->largest_recv_time_s;
    size = ack_frame_size(c, ack_delay_s) + SHORT_HEADER_BYTES;
    PyObject *packet = new_packet(c, ep, now, size, empty_tuple, NULL, 0, 0, &pn);
    if (packet == NULL)
        return -1;
    if (packet_take_ack(c, packet, ack_delay_s) < 0) {
        Py_DECREF(packet);
        return -1;
    }
    long long wire = size + UDP_IP_HEADER_BYTES;
    c->packets_sent += 1;
    c->ack_packets_sent += 1;
    c->bytes_sent += wire;
    int rc = send_on_link(c, ep, wire, packet, now) < 0 ? -1 : 0;
    Py_DECREF(packet);
    return rc;
}

/* recovery._set_loss_detection_timer (A.8). */
static int
set_loss_timer(CoreObject *c, PyObject *ep)
{
    if (c->has_loss_time)
        return timers_set(c, str_loss, c->loss_time, c->on_loss_timeout);
    if (c->outstanding == 0)
        return timers_cancel(c, str_loss);
    RttObject *r = c->rtt;
    double pto = rtt_smoothed(r) + py_max(4 * r->rttvar_s, r->granularity_s) + c->max_ack_delay_s;
    pto = pto * ldexp(1.0, (int)c->pto_count);
    return timers_set(c, str_loss, c->last_ack_eliciting_s + pto, c->on_loss_timeout);
}

#include "_quic_streams.h"   /* SendStream, RecvStream: the stream records in C */

static int
set_item_long(PyObject *list, Py_ssize_t i, long long v)
{
    PyObject *x = PyLong_FromLongLong(v);
    return x == NULL ? -1 : PyList_SetItem(list, i, x);
}

static int
popleft(PyObject *queue)
{
    PyObject *r = deque_call(queue, deque_popleft, str_popleft, NULL);
    Py_XDECREF(r);
    return r == NULL ? -1 : 0;
}

/* stream.written (stream.SendStream): buf_offset + len(buf) + later_bytes, read from its slots
 * (the property itself for anything but a bytearray buffer). */
static int
stream_written(PyObject *stream, long long *out)
{
    PyObject *buf = SS_OBJ(stream, buf);
    if (buf == NULL)
        return -1;
    if (!PyByteArray_Check(buf)) {
        Py_DECREF(buf);
        return attr_long(stream, str_written, out);
    }
    long long held = PyByteArray_GET_SIZE(buf) + (IS_SS(stream) ? SS(stream)->pend_bytes : 0);
    Py_DECREF(buf);
    long long buf_offset, later_bytes;
    if (SS_LONG(stream, buf_offset, &buf_offset) < 0 || SS_LONG(stream, later_bytes, &later_bytes) < 0)
        return -1;
    *out = buf_offset + held + later_bytes;
    return 0;
}

/* stream.append(data) (stream.SendStream): a write of n > 0 bytes kept by reference in `later`. */
static int
stream_append(PyObject *stream, PyObject *data, Py_ssize_t n)
{
    if (n <= 0)
        return 0;
    PyObject *later = SS_OBJ(stream, later);
    if (later == NULL)
        return -1;
    PyObject *r = deque_call(later, deque_append, str_append, data);
    Py_DECREF(later);
    if (r == NULL)
        return -1;
    Py_DECREF(r);
    return SS_ADD(stream, later_bytes, n);
}

/* A SendStream's buffer (a bytearray) kept as a sliding window over the stream: bytes appended
 * at its end as packets read them, its acknowledged front dropped in place.  CPython's own resize
 * copies the live bytes each time a front deletion leaves the buffer under half full, and again
 * at the next append past its end; here it grows to twice what it holds and the front advances,
 * so a byte is copied a bounded number of times.  Same contents; only the allocation differs.
 * A buffer with exports (a memoryview on it) takes CPython's path, which refuses a resize. */
static int
buf_append(PyObject *buf, const char *data, Py_ssize_t n)
{
    PyByteArrayObject *b = (PyByteArrayObject *)buf;
    Py_ssize_t held = Py_SIZE(b), need = held + n;
    if (!PyByteArray_CheckExact(buf) || b->ob_exports > 0) {
        if (PyByteArray_Resize(buf, need) < 0)
            return -1;
        memcpy(PyByteArray_AS_STRING(buf) + held, data, (size_t)n);
        return 0;
    }
    Py_ssize_t offset = b->ob_bytes == NULL ? 0 : b->ob_start - b->ob_bytes;
    if (need + offset + 1 > b->ob_alloc) {
        if (b->ob_bytes != NULL && need + 1 <= b->ob_alloc / 2) {     /* room enough: slide back */
            memmove(b->ob_bytes, b->ob_start, (size_t)held);
            b->ob_start = b->ob_bytes;
        }
        else {
            if (need > (PY_SSIZE_T_MAX - 1) / 2) {
                PyErr_NoMemory();
                return -1;
            }
            Py_ssize_t alloc = 2 * need + 1;
            char *fresh = PyObject_Malloc((size_t)alloc);
            if (fresh == NULL) {
                PyErr_NoMemory();
                return -1;
            }
            if (held > 0)
                memcpy(fresh, b->ob_start, (size_t)held);
            PyObject_Free(b->ob_bytes);
            b->ob_bytes = b->ob_start = fresh;
            b->ob_alloc = alloc;
        }
    }
    memcpy(b->ob_start + held, data, (size_t)n);
    Py_SET_SIZE(b, need);
    b->ob_start[need] = '\0';          /* a bytearray's trailing NUL */
    return 0;
}

/* del buf[:drop]: the front let go in place.  Only a stream with nothing more to send (`done`:
 * FIN written and every byte up to it acknowledged) gives its memory back, by CPython's deletion (which copies what is left
 * into a buffer of its size): a stream still sending keeps its allocation, as it would grow back
 * to it at once, copying its bytes in flight at each doubling (a load's streams did this about
 * 270 times, copying several times the bytes they sent). */
static int
buf_drop_front(PyObject *buf, Py_ssize_t drop, int done)
{
    PyByteArrayObject *b = (PyByteArrayObject *)buf;
    Py_ssize_t left = Py_SIZE(b) - drop;
    if (!PyByteArray_CheckExact(buf) || b->ob_exports > 0 || drop < 0 || left < 0 || b->ob_bytes == NULL
        || (done && left < b->ob_alloc / 8))
        return PySequence_DelSlice(buf, 0, drop);
    b->ob_start += drop;
    Py_SET_SIZE(b, left);                 /* the trailing NUL is still at ob_start[left] */
    return 0;
}

/* stream.data(offset, length) (stream.SendStream.data): read on from the writes in `later` into
 * `buf` only as far as this packet (a write split by the packet's end stays in `later` as a
 * memoryview of its rest), then the bytes from `buf`.  Anything but a bytearray buffer, or an
 * offset before it: the reference's method. */
static PyObject *
stream_data(PyObject *stream, long long offset, long long length)
{
    PyObject *buf = SS_OBJ(stream, buf), *later = NULL, *out = NULL;
    if (buf == NULL)
        return NULL;
    long long buf_offset;
    if (SS_LONG(stream, buf_offset, &buf_offset) < 0)
        goto done;
    long long start = offset - buf_offset;
    int odd = start < 0 || length < 0;         /* the C SendStream's own method: sliced as Python does */
    if (!IS_SS(stream) && (!PyByteArray_Check(buf) || odd)) {
        out = PyObject_CallMethod(stream, "data", "LL", offset, length);
        goto done;
    }
    SendStreamObject *ss = IS_SS(stream) ? SS(stream) : NULL;
    long long shortfall = start + length - PyByteArray_GET_SIZE(buf) - (ss != NULL ? ss->pend_bytes : 0);
    PyObject *whole = NULL;                    /* a write that is this packet's bytes exactly */
    if (shortfall > 0) {
        long long later_bytes;
        if ((later = SS_OBJ(stream, later)) == NULL || SS_LONG(stream, later_bytes, &later_bytes) < 0)
            goto done;
        int first = !odd && shortfall == length;   /* the packet starts at the buffer's end */
        while (shortfall > 0) {
            Py_ssize_t queued = queue_len(later);
            if (queued < 0)
                goto done;
            if (queued == 0)
                break;
            PyObject *chunk = deque_call(later, deque_popleft, str_popleft, NULL);
            if (chunk == NULL)
                goto done;
            if (first && PyBytes_CheckExact(chunk) && PyBytes_GET_SIZE(chunk) == length) {
                /* the usual packet (a pull writer's write of a packet's worth): its bytes are
                 * the write itself, kept (a C SendStream's pending writes, else the buffer)
                 * and returned as it is (bytes are immutable: the same value as a copy) */
                if ((ss != NULL ? ss_pend_push(ss, chunk)
                                : buf_append(buf, PyBytes_AS_STRING(chunk), PyBytes_GET_SIZE(chunk))) < 0) {
                    Py_DECREF(chunk);
                    goto done;
                }
                whole = chunk;
                later_bytes -= length;
                shortfall = 0;
                break;
            }
            first = 0;
            if (ss != NULL && ss->pend_len > 0 && ss_materialize(ss) < 0) {   /* buf's bytes in order */
                Py_DECREF(chunk);
                goto done;
            }
            Py_buffer view;
            if (PyObject_GetBuffer(chunk, &view, PyBUF_SIMPLE) < 0) {
                Py_DECREF(chunk);
                goto done;
            }
            long long take = view.len;
            int rc = 0;
            if (take > shortfall) {            /* later.appendleft(memoryview(chunk)[shortfall:]) */
                PyObject *mv = PyMemoryView_FromObject(chunk);
                PyObject *rest = mv == NULL ? NULL : PySequence_GetSlice(mv, (Py_ssize_t)shortfall, view.len);
                PyObject *r = rest == NULL ? NULL : deque_call(later, deque_appendleft, str_appendleft, rest);
                rc = r == NULL ? -1 : 0;
                Py_XDECREF(r);
                Py_XDECREF(rest);
                Py_XDECREF(mv);
                take = shortfall;
            }
            if (rc == 0 && buf_append(buf, view.buf, (Py_ssize_t)take) < 0)
                rc = -1;
            PyBuffer_Release(&view);
            Py_DECREF(chunk);
            if (rc < 0)
                goto done;
            later_bytes -= take;
            shortfall -= take;
        }
        if (SS_SET(stream, later_bytes, later_bytes) < 0) {
            Py_XDECREF(whole);
            goto done;
        }
    }
    if (whole != NULL) {
        out = whole;
        goto done;
    }
    if (ss != NULL && ss->pend_len > 0 && ss_materialize(ss) < 0)   /* read from buf: all of it there */
        goto done;
    if (odd) {                                 /* bytes(buf[start:start + length]) */
        PyObject *part = PySequence_GetSlice(buf, (Py_ssize_t)start, (Py_ssize_t)(start + length));
        out = part == NULL ? NULL : PyBytes_FromObject(part);
        Py_XDECREF(part);
        goto done;
    }
    Py_ssize_t held = PyByteArray_GET_SIZE(buf);   /* bytes(buf[start:start + length]) */
    long long stop = start + length < held ? start + length : held;
    out = PyBytes_FromStringAndSize(PyByteArray_AS_STRING(buf) + (start < held ? start : held),
                                    stop > start ? (Py_ssize_t)(stop - start) : 0);
done:
    Py_XDECREF(later);
    Py_DECREF(buf);
    return out;
}

/* packet_builder._build_frames: fill one packet from the retransmission queue, then new data
 * (FIFO in write order), leaving `reserved` bytes for an ACK frame.  1 and the frames and
 * size, 0 when there is nothing to send, -1 on error. */
static int
build_frames(CoreObject *c, PyObject *ep, long long reserved, FrameBuf *frames, long long *size_out)
{
    long long budget = c->max_payload - reserved;
    int full = 0;
    PyObject *queues[2] = {c->retx_queue, c->new_queue};
    for (int q = 0; q < 2 && !full; q++) {
        PyObject *queue = queues[q];
        while (queue_len(queue) > 0) {
            PyObject *chunk = PySequence_GetItem(queue, 0);
            if (chunk == NULL || !PyList_Check(chunk) || PyList_GET_SIZE(chunk) != 5) {
                if (chunk != NULL)
                    PyErr_SetString(PyExc_TypeError, "a queued chunk is a list of 5");
                goto error_chunk;
            }
            PyObject *sid_o = PyList_GET_ITEM(chunk, 0);
            long long sid = PyLong_AsLongLong(sid_o);
            long long offset = PyLong_AsLongLong(PyList_GET_ITEM(chunk, 1));
            long long length = PyLong_AsLongLong(PyList_GET_ITEM(chunk, 2));
            int fin = PyObject_IsTrue(PyList_GET_ITEM(chunk, 3));
            int retx = PyObject_IsTrue(PyList_GET_ITEM(chunk, 4));
            if (PyErr_Occurred())
                goto error_chunk;
            PyObject *stream = PyDict_GetItemWithError(c->send_streams, sid_o);   /* borrowed */
            if (stream == NULL) {
                if (!PyErr_Occurred())
                    PyErr_SetObject(PyExc_KeyError, sid_o);
                goto error_chunk;
            }
            if (retx) {                          /* skip what was acknowledged meanwhile */
                long long end = offset + length, acked_prefix;
                if (SS_LONG(stream, acked_prefix, &acked_prefix) < 0)
                    goto error_chunk;
                if (offset < acked_prefix) {
                    offset = acked_prefix < end ? acked_prefix : end;
                    length = end - offset;
                    if (set_item_long(chunk, 1, offset) < 0 || set_item_long(chunk, 2, length) < 0)
                        goto error_chunk;
                }
                if (length == 0) {
                    int fin_acked = fin ? SS_BOOL(stream, fin_acked) : 0;
                    if (fin_acked < 0)
                        goto error_chunk;
                    if (!fin || fin_acked) {
                        Py_DECREF(chunk);
                        if (popleft(queue) < 0)
                            goto error;
                        continue;
                    }
                }
            }
            long long room = length < budget ? length : budget;
            long long header = 1 + varint_len(sid) + (offset ? varint_len(offset) : 0) + varint_len(room);
            long long take = length < budget - header ? length : budget - header;
            if (take < 0 || (take == 0 && length > 0)) {
                Py_DECREF(chunk);
                full = 1;
                break;
            }
            int last = take == length;
            PyObject *data = stream_data(stream, offset, take);
            if (data == NULL || fb_push(frames, sid_o, offset, data, fin && last) < 0)
                goto error_chunk;
            budget -= header + take;
            c->stream_bytes_sent += take;
            if (retx)
                c->stream_bytes_retransmitted += take;
            if (last) {
                Py_DECREF(chunk);
                if (popleft(queue) < 0)
                    goto error;
            }
            else {
                int rc = set_item_long(chunk, 1, offset + take) < 0 || set_item_long(chunk, 2, length - take) < 0;
                Py_DECREF(chunk);
                if (rc)
                    goto error;
                full = 1;
                break;
            }
            continue;
        error_chunk:
            Py_XDECREF(chunk);
            goto error;
        }
        if (PyErr_Occurred())
            goto error;
    }
    if (frames->n == 0)
        return 0;
    *size_out = c->max_payload - reserved - budget + SHORT_HEADER_BYTES;
    return 1;
error:
    fb_release(frames);
    return -1;
}

static PyTypeObject BoundType;
static int bound_cfire(PyObject *bound, uint64_t gen);

/* The engine's seq C API on the queue's type (the capsule EventQueue._c_seq), else NULL: its
 * Python methods reserve, push_at and next_s are called. */
static const SeqApi *
queue_seq_c(PyObject *queue)
{
    PyObject *cap = _PyType_Lookup(Py_TYPE(queue), str_c_seq);   /* borrowed */
    if (cap == NULL || !PyCapsule_IsValid(cap, SEQ_C_CAPSULE))
        return NULL;
    return (const SeqApi *)PyCapsule_GetPointer(cap, SEQ_C_CAPSULE);
}

/* packet_builder._schedule_flush during a flush: the flush's place taken (sim._queue.reserve()). */
static int
hold_flush(CoreObject *c)
{
    if (c->seq_c != NULL) {
        c->held_seq = c->seq_c->reserve(c->queue);
        return 0;
    }
    PyObject *queue = SITE_GETATTR(c->sim, str_queue);
    if (queue == NULL)
        return -1;
    const SeqApi *api = queue_seq_c(queue);
    int rc = 0;
    if (api != NULL)
        c->held_seq = api->reserve(queue);
    else {
        PyObject *r = PyObject_CallMethodNoArgs(queue, str_reserve);
        c->held_seq = r == NULL ? 0 : PyLong_AsUnsignedLongLong(r);
        rc = r == NULL || PyErr_Occurred() ? -1 : 0;
        Py_XDECREF(r);
    }
    Py_DECREF(queue);
    return rc;
}

/* packet_builder._release_held_flush: at a flush's end, the flush its pull writer's writes
 * scheduled is not pushed when it would run next and find nothing to do (idle: the window full
 * or the pacer holding, and no event before it at this instant), else pushed at its place. */
static int
release_held_flush(CoreObject *c, int idle, double now)
{
    uint64_t seq = c->held_seq;
    c->held_seq = 0;
    const SeqApi *api = c->seq_c;
    PyObject *queue;
    if (api != NULL)
        queue = Py_NewRef(c->queue);         /* the queue hold_flush reserved on */
    else {
        queue = SITE_GETATTR(c->sim, str_queue);
        if (queue == NULL)
            return -1;
        api = queue_seq_c(queue);
    }
    int later = 1, rc = -1;
    if (api != NULL) {
        double t;
        later = !api->next_t(queue, &t) || t > now;
    }
    else {
        PyObject *r = PyObject_CallMethodNoArgs(queue, str_next_s);
        if (r == NULL)
            goto done;
        double t = 0.0;
        if (r != Py_None && get_double(r, &t) < 0) {
            Py_DECREF(r);
            goto done;
        }
        later = r == Py_None || t > now;
        Py_DECREF(r);
    }
    if (idle && later) {
        c->flush_scheduled = 0;                /* as its run would have left it */
        rc = 0;
        goto done;
    }
    PyObject *now_obj = SITE_GETATTR(c->sim, str_now);
    if (now_obj == NULL)
        goto done;
    if (api != NULL && Py_IS_TYPE(c->flush_event, &BoundType))
        rc = api->push_at(queue, seq, now, now_obj, c->flush_event, bound_cfire, 0, 0);
    else {
        PyObject *s = PyLong_FromUnsignedLongLong(seq);
        PyObject *r = s == NULL ? NULL : PyObject_CallMethodObjArgs(queue, str_push_at, now_obj, s, c->flush_event,
                                                                  empty_tuple, NULL);
        rc = r == NULL ? -1 : 0;
        Py_XDECREF(r);
        Py_XDECREF(s);
    }
    Py_DECREF(now_obj);
done:
    Py_DECREF(queue);
    return rc;
}

/* packet_builder._flush: send packets while the window (RFC 9002 7) and the pacer (7.7)
 * allow; a due ACK rides in the first packet (and lets it past the pacer, as aioquic), else
 * goes alone (RFC 9000 13.2). */
static int
flush(CoreObject *c, PyObject *ep)
{
    c->flush_scheduled = 0;
    int ready = attr_truthy(ep, str_ready);
    if (ready <= 0)
        return ready;
    double now;
    if (sim_now(c, &now) < 0)
        return -1;
    PyObject *pull = SITE_GETATTR(ep, str_on_send_ready);
    if (pull == NULL)
        return -1;
    int sent = 0;
    int idle = 1;                              /* the loop ended on the window, the pacer or nothing queued */
    c->flushing = 1;
    while ((double)c->bytes_in_flight < c->cc->cwnd) {
        Py_ssize_t queued = queue_len(c->retx_queue);
        if (queued == 0)
            queued = queue_len(c->new_queue);
        if (queued < 0)
            goto error;
        if (!queued && pull == Py_None)
            break;
        if (!c->ack_due && c->pacing && c->has_interval) {
            pacer_refill(c, now);
            if (c->credit_s <= 0) {
                if (timers_set(c, str_pace, now + c->interval_s + c->late_s, c->flush_event) < 0)
                    goto error;
                break;
            }
        }
        if (!queued) {                         /* the pull writer: anything more now? */
            PyObject *r = PyObject_CallNoArgs(pull);
            if (r == NULL)
                goto error;
            int more = PyObject_IsTrue(r);
            Py_DECREF(r);
            if (more < 0)
                goto error;
            if (!more) {
                idle = 0;
                break;
            }
        }
        long long reserved = 0, size;
        if (c->unacked_eliciting)
            reserved = ack_frame_size(c, now - c->largest_recv_time_s);
        FrameBuf frames;
        fb_init(&frames);
        int built = build_frames(c, ep, reserved, &frames, &size);
        if (built < 0)
            goto error;
        if (built == 0) {
            idle = 0;
            break;
        }
        if (send_packet(c, ep, NULL, &frames, size, 0, now) < 0)
            goto error;
        if (c->pacing && c->has_interval) {    /* pacer.on_packet_sent */
            pacer_refill(c, now);
            c->credit_s = c->credit_s < c->interval_s ? 0.0 : c->credit_s - c->interval_s;
        }
        sent = 1;
    }
    Py_DECREF(pull);
    c->flushing = 0;
    if (sent && set_loss_timer(c, ep) < 0)
        return -1;
    if (c->ack_due && send_ack(c, ep, now) < 0)
        return -1;
    return c->held_seq ? release_held_flush(c, idle, now) : 0;
error:
    Py_DECREF(pull);
    c->flushing = 0;
    return -1;
}

static PyObject *
Core_flush(CoreObject *c, PyObject *ep)
{
    if (c->packet_class == NULL || c->flush_event == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "QuicCore.bind() first");
        return NULL;
    }
    if (flush(c, ep) < 0)
        return NULL;
    Py_RETURN_NONE;
}

/* send_packet(endpoint, frames, size_bytes, probe) */
static PyObject *
Core_send_packet(CoreObject *c, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 4 || c->packet_class == NULL) {
        PyErr_SetString(PyExc_TypeError, "send_packet(endpoint, frames, size_bytes, probe), after bind()");
        return NULL;
    }
    long long size = PyLong_AsLongLong(args[2]);
    int probe = PyObject_IsTrue(args[3]);
    double now;
    if ((size == -1 && PyErr_Occurred()) || probe < 0 || sim_now(c, &now) < 0)
        return NULL;
    if (send_packet(c, args[0], args[1], NULL, size, probe, now) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *
Core_send_ack(CoreObject *c, PyObject *ep)
{
    double now;
    if (c->packet_class == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "QuicCore.bind() first");
        return NULL;
    }
    if (sim_now(c, &now) < 0 || send_ack(c, ep, now) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *
Core_set_loss_timer(CoreObject *c, PyObject *ep)
{
    if (set_loss_timer(c, ep) < 0)
        return NULL;
    Py_RETURN_NONE;
}

/* bind(QuicPacket, link.Packet, retx_queue, new_queue, send_streams, max_payload, recv_streams,
 *      RecvStream, ack_every_packets, sim, timers, on_loss_timeout, SendStream, is_client): the
 *      endpoint's objects the core works on */
static PyObject *
Core_bind(CoreObject *c, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 14 || !PyDict_Check(args[4]) || !PyDict_Check(args[6])) {
        PyErr_SetString(PyExc_TypeError, "bind(packet_class, link_packet_class, retx_queue, new_queue, "
                        "send_streams: dict, max_payload, recv_streams: dict, recv_stream_class, ack_every_packets, "
                        "sim, timers, on_loss_timeout, send_stream_class, is_client)");
        return NULL;
    }
    long long max_payload = PyLong_AsLongLong(args[5]);
    long long ack_every = PyLong_AsLongLong(args[8]);
    int is_client = PyObject_IsTrue(args[13]);
    if (((max_payload == -1 || ack_every == -1) && PyErr_Occurred()) || is_client < 0)
        return NULL;
    PyObject **fields[11] = {&c->packet_class, &c->link_packet_class, &c->retx_queue, &c->new_queue,
                             &c->send_streams, &c->recv_streams, &c->recv_stream_class, &c->sim, &c->timers,
                             &c->on_loss_timeout, &c->send_stream_class};
    PyObject *values[11] = {args[0], args[1], args[2], args[3], args[4], args[6], args[7], args[9], args[10],
                            args[11], args[12]};
    for (int i = 0; i < 11; i++) {
        Py_INCREF(values[i]);
        Py_XSETREF(*fields[i], values[i]);
    }
    c->max_payload = max_payload;
    c->ack_every_packets = ack_every;
    c->is_client = is_client;
    /* link.Packet's C twin: made by its C function (from the capsule in the type's own dict) */
    c->link_packet_new = NULL;
    if (PyType_Check(c->link_packet_class)) {
        PyObject *cap = PyDict_GetItemWithError(((PyTypeObject *)c->link_packet_class)->tp_dict, str_c_new);
        if (cap != NULL && PyCapsule_IsValid(cap, PACKET_NEW_CAPSULE))
            c->link_packet_new = (PyObject * (*)(long long, PyObject *)) PyCapsule_GetPointer(cap, PACKET_NEW_CAPSULE);
        else if (PyErr_Occurred())
            return NULL;
    }
    Py_RETURN_NONE;
}

/* connection.QuicEndpoint.write's first write on a peer's bidirectional stream (RFC 9000 2.1:
 * the low bit says who opened it, the next one whether it is unidirectional): its SendStream
 * made and kept in send_streams.  Borrowed; NULL without an error when the reference must
 * run instead (an own stream not opened, a peer's unidirectional stream: its errors). */
static PyObject *
peer_send_stream(CoreObject *c, PyObject *sid)
{
    if (!PyLong_CheckExact(sid) || c->send_stream_class == NULL)
        return NULL;
    long long id = PyLong_AsLongLong(sid);
    if (id == -1 && PyErr_Occurred())
        return NULL;
    if (id < 0 || (id & 1) == (c->is_client ? 0 : 1) || (id & 2))
        return NULL;
    PyObject *stream = PyObject_CallOneArg(c->send_stream_class, sid);
    if (stream == NULL)
        return NULL;
    int rc = PyDict_SetItem(c->send_streams, sid, stream);
    Py_DECREF(stream);                       /* the dict holds it */
    return rc < 0 ? NULL : stream;
}

/* -- the receiving path (connection.QuicEndpoint._on_packet for 1-RTT packets once the
 * handshake is confirmed, _on_stream_frame, ack._on_packet_number and _ack_now) -- */

static PyObject *heappush_fn, *heappop_fn;

static PyTypeObject BoundType;
static int bound_cfire(PyObject *bound, uint64_t gen);

/* self._schedule_flush(): one flush per instant (packet_builder).  sim.call_soon(self._flush),
 * as Simulator.call_soon does it: sim._push(sim.now, callback, ()); on the engine's C queue
 * as its C event (the same key and callable, run without a call through Python). */
static int
schedule_flush(CoreObject *c)
{
    if (c->flush_scheduled)
        return 0;
    c->flush_scheduled = 1;
    PyObject *push = SITE_GETATTR(c->sim, str_push);
    if (push == NULL)
        return -1;
    if (push != c->push) {                   /* sim._push seen first (or replaced): its C push? */
        Py_XSETREF(c->push, Py_NewRef(push));
        c->push_c = Py_IS_TYPE(c->flush_event, &BoundType) ? queue_push_c(push, &c->queue) : NULL;
        c->seq_c = c->push_c != NULL ? queue_seq_c(c->queue) : NULL;
    }
    if (c->flushing) {                       /* the pull writer's write during a flush: held */
        Py_DECREF(push);
        return hold_flush(c);
    }
    PyObject *now = SITE_GETATTR(c->sim, str_now);
    int rc = -1;
    if (now != NULL) {
        double t;
        if (c->push_c != NULL)
            rc = get_double(now, &t) < 0 ? -1 : c->push_c(c->queue, t, now, c->flush_event, bound_cfire, 0, 0);
        else {
            PyObject *r = call3(push, now, c->flush_event, empty_tuple);
            rc = r == NULL ? -1 : 0;
            Py_XDECREF(r);
        }
        Py_DECREF(now);
    }
    Py_DECREF(push);
    return rc;
}

/* schedule_flush(): the endpoint's _schedule_flush and want_to_send (the Python that stays
 * calls it: a stream's first write, the handshake, a lost packet's data queued again). */
static PyObject *
Core_schedule_flush(CoreObject *c, PyObject *Py_UNUSED(ignored))
{
    if (c->sim == NULL || c->flush_event == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "QuicCore.bind() first");
        return NULL;
    }
    if (schedule_flush(c) < 0)
        return NULL;
    Py_RETURN_NONE;
}

/* ack._ack_now: the ACK is due; it goes in the next packet or alone (RFC 9000 13.2). */
static int
ack_now(CoreObject *c)
{
    if (timers_cancel(c, str_ack) < 0)
        return -1;
    if (c->unacked_eliciting && !c->ack_due) {
        c->ack_due = 1;
        return schedule_flush(c);
    }
    return 0;
}

static Py_ssize_t
length_of(PyObject *data)
{
    return PyBytes_Check(data) ? PyBytes_GET_SIZE(data) : PyObject_Length(data);
}

/* data[start:] */
static PyObject *
tail_of(PyObject *data, Py_ssize_t start)
{
    if (PyBytes_Check(data))
        return PyBytes_FromStringAndSize(PyBytes_AS_STRING(data) + start, PyBytes_GET_SIZE(data) - start);
    return PySequence_GetSlice(data, start, PY_SSIZE_T_MAX);
}

/* The bytes one frame delivers, in order: the first part alone (the usual case: no list), a
 * list once there are more (joined as the reference joins them).  Steals part. */
static int
add_part(PyObject **first, PyObject **parts, PyObject *part)
{
    if (*first == NULL && *parts == NULL) {
        *first = part;
        return 0;
    }
    if (*parts == NULL) {
        if ((*parts = PyList_New(1)) == NULL) {
            Py_DECREF(part);
            return -1;
        }
        PyList_SET_ITEM(*parts, 0, *first);
        *first = NULL;
    }
    int rc = PyList_Append(*parts, part);
    Py_DECREF(part);
    return rc;
}

/* connection.QuicEndpoint._on_stream_frame: deliver a stream's bytes as soon as they are
 * contiguous in that stream's order (no head-of-line blocking across streams). */
static int
on_stream_frame(CoreObject *c, PyObject *ep, PyObject *sid, long long offset, PyObject *offset_o, PyObject *data,
                int fin, PyObject *now_o)
{
    PyObject *stream = PyDict_GetItemWithError(c->recv_streams, sid);   /* borrowed */
    if (stream == NULL) {
        if (PyErr_Occurred())
            return -1;
        stream = PyObject_CallNoArgs(c->recv_stream_class);
        if (stream == NULL)
            return -1;
        int rc = PyDict_SetItem(c->recv_streams, sid, stream);
        Py_DECREF(stream);                      /* the dict holds it */
        if (rc < 0)
            return -1;
    }
    Py_INCREF(stream);
    PyObject *parts = NULL, *first = NULL, *heap = NULL;
    int rc = -1;
    Py_ssize_t n = length_of(data);
    if (n < 0)
        goto done;
    long long end = offset + n;
    if (fin && RS_SET(stream, fin_offset, end) < 0)
        goto done;
    int finished = RS_BOOL(stream, finished);
    if (finished) {
        rc = finished < 0 ? -1 : 0;
        goto done;
    }
    long long delivered, fin_offset;
    if (RS_LONG(stream, delivered, &delivered) < 0)
        goto done;
    if ((heap = RS_OBJ(stream, heap)) == NULL)
        goto done;
    if (offset > delivered) {                  /* a hole before it: hold back (this stream only) */
        PyObject *item = offset_o != NULL ? PyTuple_Pack(2, offset_o, data)
            : STEAL_TUPLE(PyLong_FromLongLong(offset), Py_NewRef(data));
        PyObject *r = item == NULL ? NULL : call2(heappush_fn, heap, item);
        Py_XDECREF(item);
        if (r == NULL)
            goto done;
        Py_DECREF(r);
        if (RS_ADD(stream, heap_bytes, n) < 0)
            goto done;
        c->reorder_bytes += n;
        if (c->reorder_bytes > c->max_reorder_bytes)
            c->max_reorder_bytes = c->reorder_bytes;
        rc = 0;
        goto done;
    }
    long long start_delivered = delivered;
    if (end > delivered) {
        PyObject *part = offset == delivered ? (Py_INCREF(data), data) : tail_of(data, delivered - offset);
        if (part == NULL || add_part(&first, &parts, part) < 0)
            goto done;
        delivered = end;
    }
    while (PyList_GET_SIZE(heap) > 0) {
        PyObject *top = PyList_GET_ITEM(heap, 0);
        long long top_offset = PyLong_AsLongLong(PyTuple_GET_ITEM(top, 0));
        if (top_offset == -1 && PyErr_Occurred())
            goto done;
        if (top_offset > delivered)
            break;
        PyObject *popped = PyObject_CallOneArg(heappop_fn, heap);
        if (popped == NULL)
            goto done;
        PyObject *held = PyTuple_GET_ITEM(popped, 1);
        Py_ssize_t held_n = length_of(held);
        if (held_n < 0 || RS_ADD(stream, heap_bytes, -held_n) < 0) {
            Py_DECREF(popped);
            goto done;
        }
        c->reorder_bytes -= held_n;
        long long held_end = top_offset + held_n;
        if (held_end > delivered) {
            PyObject *part = tail_of(held, delivered - top_offset);
            if (part == NULL || add_part(&first, &parts, part) < 0) {
                Py_DECREF(popped);
                goto done;
            }
            delivered = held_end;
        }
        Py_DECREF(popped);
    }
    long long new_bytes = delivered - start_delivered;
    if (RS_SET(stream, delivered, delivered) < 0 || RS_LONG(stream, fin_offset, &fin_offset) < 0)
        goto done;
    int is_done = fin_offset >= 0 && delivered >= fin_offset;
    if (new_bytes || is_done) {
        if (is_done && RS_SET_TRUE(stream, finished) < 0)
            goto done;
        c->bytes_delivered += new_bytes;
        PyObject *on_data = SITE_GETATTR(ep, str_on_data);
        if (on_data == NULL)
            goto done;
        if (on_data != Py_None) {
            PyObject *chunk;
            if (first != NULL)
                chunk = Py_NewRef(first);
            else if (parts != NULL)
                chunk = PyObject_CallMethodOneArg(empty_bytes, str_join, parts);
            else                                /* nothing new: b"".join([]) */
                chunk = Py_NewRef(empty_bytes);
            PyObject *r = chunk == NULL ? NULL
                : call4(on_data, sid, chunk, is_done ? Py_True : Py_False, now_o);
            Py_XDECREF(chunk);
            if (r == NULL) {
                Py_DECREF(on_data);
                goto done;
            }
            Py_DECREF(r);
        }
        Py_DECREF(on_data);
    }
    rc = 0;
done:
    Py_XDECREF(first);
    Py_XDECREF(parts);
    Py_XDECREF(heap);
    Py_DECREF(stream);
    return rc;
}

/* write(endpoint, stream, stream_id, data, end): connection.QuicEndpoint.write on an open,
 * unfinished SendStream (the caller checks; opening and the errors stay the reference's):
 * the bytes kept for the stream, a chunk on the queue of new data (merged into the last one
 * when it continues it), a flush at this instant. */
static int
core_write(CoreObject *c, PyObject *stream, PyObject *sid, PyObject *data, PyObject *end)
{
    /* stream.append(data): the write kept by reference until a packet reads it (SendStream);
     * a mutable buffer is copied, as the reference does (the caller may reuse it). */
    long long offset;
    if (stream_written(stream, &offset) < 0)
        return -1;
    PyObject *kept = PyBytes_CheckExact(data) ? Py_NewRef(data) : PyBytes_FromObject(data);
    if (kept == NULL)
        return -1;
    Py_ssize_t n = length_of(kept);
    int rc = n < 0 ? -1 : stream_append(stream, kept, n);
    Py_DECREF(kept);
    if (rc < 0)
        return -1;
    long long after = offset + n;
    int is_end = PyObject_IsTrue(end);
    if (is_end < 0)
        return -1;
    if (is_end && (SS_SET_TRUE(stream, fin) < 0 || SS_SET(stream, fin_offset, after) < 0))
        return -1;
    if (n == 0 && !is_end)
        return 0;
    PyObject *queue = c->new_queue;
    Py_ssize_t qlen = queue_len(queue);
    if (qlen < 0)
        return -1;
    int merged = 0;
    if (qlen > 0) {
        PyObject *last = PySequence_GetItem(queue, qlen - 1);
        if (last == NULL)
            return -1;
        if (PyList_Check(last) && PyList_GET_SIZE(last) == 5) {
            int same = PyObject_RichCompareBool(PyList_GET_ITEM(last, 0), sid, Py_EQ);
            long long l_off = PyLong_AsLongLong(PyList_GET_ITEM(last, 1));
            long long l_len = PyLong_AsLongLong(PyList_GET_ITEM(last, 2));
            int l_fin = PyObject_IsTrue(PyList_GET_ITEM(last, 3));
            int l_retx = PyObject_IsTrue(PyList_GET_ITEM(last, 4));
            if (same < 0 || PyErr_Occurred() || l_fin < 0 || l_retx < 0) {
                Py_DECREF(last);
                return -1;
            }
            if (same && l_off + l_len == offset && !l_fin && !l_retx) {     /* same stream, contiguous */
                Py_INCREF(end);
                if (set_item_long(last, 2, l_len + n) < 0 || PyList_SetItem(last, 3, end) < 0) {
                    Py_DECREF(last);
                    return -1;
                }
                merged = 1;
            }
        }
        Py_DECREF(last);
    }
    if (!merged) {
        PyObject *chunk = STEAL_LIST(Py_NewRef(sid), PyLong_FromLongLong(offset), PyLong_FromSsize_t(n), Py_NewRef(end),
                                     Py_NewRef(Py_False));
        if (chunk == NULL)
            return -1;
        PyObject *r = deque_call(queue, deque_append, str_append, chunk);
        Py_DECREF(chunk);
        if (r == NULL)
            return -1;
        Py_DECREF(r);
    }
    return schedule_flush(c);
}

static PyObject *
Core_write(CoreObject *c, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 5 || c->new_queue == NULL || c->flush_event == NULL) {
        PyErr_SetString(PyExc_TypeError, "write(endpoint, stream, stream_id, data, end), after bind()");
        return NULL;
    }
    if (core_write(c, args[1], args[2], args[3], args[4]) < 0)   /* the endpoint's state is ours */
        return NULL;
    Py_RETURN_NONE;
}

/* -- an ACK frame received, whole (recovery._on_ack_frame): the core's half (on_ack,
 * after_ack) and the streams' half, on the endpoint's SendStreams and their RangeSets -- */

static Py_ssize_t
list_bisect(PyObject *list, long long x, int right, int *err)
{
    Py_ssize_t lo = 0, hi = PyList_GET_SIZE(list);
    while (lo < hi) {
        Py_ssize_t mid = lo + (hi - lo) / 2;
        long long v = PyLong_AsLongLong(PyList_GET_ITEM(list, mid));
        if (v == -1 && PyErr_Occurred()) {
            *err = 1;
            return 0;
        }
        if (right ? x < v : !(v < x))          /* bisect_right / bisect_left */
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

static int
list_set_long(PyObject *list, Py_ssize_t i, long long v)
{
    PyObject *x = PyLong_FromLongLong(v);
    return x == NULL ? -1 : PyList_SetItem(list, i, x);
}

/* rangeset.RangeSet.add(lo, hi) on its lists starts / ends. */
static int
rangeset_add(PyObject *rs, long long lo, long long hi)
{
    if (hi <= lo)
        return 0;
    PyObject *starts = SITE_GETATTR(rs, str_starts);
    PyObject *ends = starts == NULL ? NULL : SITE_GETATTR(rs, str_ends);
    int rc = -1, err = 0;
    if (ends == NULL || !PyList_Check(starts) || !PyList_Check(ends)) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_TypeError, "a RangeSet keeps lists");
        goto done;
    }
    Py_ssize_t n = PyList_GET_SIZE(starts);
    if (n) {                                   /* common case: extends the last range */
        long long last_start = PyLong_AsLongLong(PyList_GET_ITEM(starts, n - 1));
        long long last_end = PyLong_AsLongLong(PyList_GET_ITEM(ends, n - 1));
        if (PyErr_Occurred())
            goto done;
        if (last_start <= lo && lo <= last_end) {
            rc = hi > last_end ? list_set_long(ends, n - 1, hi) : 0;
            goto done;
        }
    }
    Py_ssize_t i = list_bisect(ends, lo, 0, &err);       /* first range that ends at or after lo */
    Py_ssize_t j = list_bisect(starts, hi, 1, &err);     /* ranges [i, j) touch [lo, hi) */
    if (err)
        goto done;
    if (i == j) {
        PyObject *a = PyLong_FromLongLong(lo), *b = PyLong_FromLongLong(hi);
        rc = (a == NULL || b == NULL || PyList_Insert(starts, i, a) < 0 || PyList_Insert(ends, i, b) < 0) ? -1 : 0;
        Py_XDECREF(a);
        Py_XDECREF(b);
        goto done;
    }
    long long s_i = PyLong_AsLongLong(PyList_GET_ITEM(starts, i));
    long long e_j = PyLong_AsLongLong(PyList_GET_ITEM(ends, j - 1));
    if (PyErr_Occurred())
        goto done;
    PyObject *a = STEAL_LIST(PyLong_FromLongLong(s_i < lo ? s_i : lo));        /* min(lo, starts[i]) */
    PyObject *b = STEAL_LIST(PyLong_FromLongLong(e_j > hi ? e_j : hi));        /* max(hi, ends[j - 1]) */
    rc = (a == NULL || b == NULL || PyList_SetSlice(starts, i, j, a) < 0 || PyList_SetSlice(ends, i, j, b) < 0)
        ? -1 : 0;
    Py_XDECREF(a);
    Py_XDECREF(b);
done:
    Py_XDECREF(starts);
    Py_XDECREF(ends);
    return rc;
}

/* rangeset.RangeSet.prefix(): the end of the range starting at 0 (0 if none). */
static int
rangeset_prefix(PyObject *rs, long long *out)
{
    PyObject *starts = SITE_GETATTR(rs, str_starts);
    PyObject *ends = starts == NULL ? NULL : SITE_GETATTR(rs, str_ends);
    int rc = -1;
    if (ends != NULL && PyList_Check(starts) && PyList_Check(ends)) {
        *out = 0;
        rc = 0;
        if (PyList_GET_SIZE(starts) > 0 && PyList_GET_SIZE(ends) > 0) {
            long long s0 = PyLong_AsLongLong(PyList_GET_ITEM(starts, 0));
            if (s0 == 0)
                *out = PyLong_AsLongLong(PyList_GET_ITEM(ends, 0));
            if (PyErr_Occurred())
                rc = -1;
        }
    }
    else if (!PyErr_Occurred())
        PyErr_SetString(PyExc_TypeError, "a RangeSet keeps lists");
    Py_XDECREF(starts);
    Py_XDECREF(ends);
    return rc;
}

/* The stream ids an ACK frame touched: each once (the first object seen), in ascending order
 * when read (the reference's sorted() of a set of ints); a handful per frame. */
typedef struct {
    Py_ssize_t n, cap;
    long long *vals;
    PyObject **ids;                /* the frames' stream ids (references held) */
    long long vals0[8];
    PyObject *ids0[8];
} SidSet;

static int
sidset_add(SidSet *set, PyObject *sid)
{
    long long v = PyLong_AsLongLong(sid);
    if (v == -1 && PyErr_Occurred())
        return -1;
    Py_ssize_t i = set->n;
    for (Py_ssize_t k = 0; k < set->n; k++)
        if (set->vals[k] == v)
            return 0;
    if (set->n == set->cap) {
        Py_ssize_t cap = set->cap * 2;
        long long *vals = PyMem_Malloc((size_t)cap * sizeof(long long));
        PyObject **ids = PyMem_Malloc((size_t)cap * sizeof(PyObject *));
        if (vals == NULL || ids == NULL) {
            PyMem_Free(vals);
            PyMem_Free(ids);
            PyErr_NoMemory();
            return -1;
        }
        memcpy(vals, set->vals, (size_t)set->n * sizeof(long long));
        memcpy(ids, set->ids, (size_t)set->n * sizeof(PyObject *));
        if (set->vals != set->vals0) {
            PyMem_Free(set->vals);
            PyMem_Free(set->ids);
        }
        set->vals = vals;
        set->ids = ids;
        set->cap = cap;
    }
    while (i > 0 && set->vals[i - 1] > v) {   /* kept sorted: insertion */
        set->vals[i] = set->vals[i - 1];
        set->ids[i] = set->ids[i - 1];
        i--;
    }
    set->vals[i] = v;
    set->ids[i] = Py_NewRef(sid);
    set->n++;
    return 0;
}

static void
sidset_init(SidSet *set)
{
    set->n = 0;
    set->cap = 8;
    set->vals = set->vals0;
    set->ids = set->ids0;
}

static void
sidset_free(SidSet *set)
{
    for (Py_ssize_t k = 0; k < set->n; k++)
        Py_DECREF(set->ids[k]);
    if (set->vals != set->vals0) {
        PyMem_Free(set->vals);
        PyMem_Free(set->ids);
    }
    set->n = 0;
}

/* One acknowledged STREAM frame (sid, offset, len, fin): its stream's acknowledged range, FIN,
 * the stream id into `acked`, the report's entry i (offset_o: the offset as an int, or NULL). */
static int
frame_acked(CoreObject *c, PyObject *sid, long long offset, PyObject *offset_o, Py_ssize_t len, int fin,
            SidSet *acked, PyObject *report, Py_ssize_t i)
{
    PyObject *stream = PyDict_GetItemWithError(c->send_streams, sid);     /* borrowed */
    if (stream == NULL) {
        if (!PyErr_Occurred())
            PyErr_SetObject(PyExc_KeyError, sid);
        return -1;
    }
    PyObject *rs = SS_OBJ(stream, acked);
    if (rs == NULL)
        return -1;
    int rc = rangeset_add(rs, offset, offset + len);
    Py_DECREF(rs);
    if (rc < 0 || (fin && SS_SET_TRUE(stream, fin_acked) < 0) || sidset_add(acked, sid) < 0)
        return -1;
    if (report != NULL) {
        PyObject *entry = STEAL_TUPLE(Py_NewRef(sid), offset_o != NULL ? Py_NewRef(offset_o) : PyLong_FromLongLong(offset),
                                      PyLong_FromSsize_t(len));
        if (entry == NULL)
            return -1;
        PyList_SET_ITEM(report, i, entry);
    }
    return 0;
}

/* The streams' half for one newly acknowledged packet: acknowledged ranges, FINs, the
 * on_packet_acked report; the stream ids touched go into `acked`. */
static int
packet_acked(CoreObject *c, PyObject *packet, SidSet *acked, PyObject *on_packet_acked)
{
    QPacketObject *qp = Py_IS_TYPE(packet, &QPacketType) ? (QPacketObject *)packet : NULL;
    if (qp != NULL)
        qp->done = 1;
    else if (fast_setattr(packet, str_done, Py_True) < 0)
        return -1;
    PyObject *report = NULL, *seq = NULL;
    if (qp != NULL && qp->cf != NULL) {        /* the core's frames, in C */
        if (on_packet_acked != Py_None && (report = PyList_New(qp->ncf)) == NULL)
            return -1;
        for (int i = 0; i < qp->ncf; i++) {
            CFrame *f = &qp->cf[i];
            Py_ssize_t len = length_of(f->data);
            if (len < 0 || frame_acked(c, f->sid, f->offset, NULL, len, f->fin, acked, report, i) < 0)
                goto error;
        }
    }
    else {
        PyObject *frames = qp != NULL ? Py_NewRef(qp->frames) : SITE_GETATTR(packet, str_frames);
        seq = frames == NULL ? NULL : PySequence_Fast(frames, "frames");
        Py_XDECREF(frames);
        if (seq == NULL)
            return -1;
        Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
        if (on_packet_acked != Py_None && (report = PyList_New(n)) == NULL)
            goto error;
        for (Py_ssize_t i = 0; i < n; i++) {
            PyObject *f = PySequence_Fast_GET_ITEM(seq, i);
            if (!PyTuple_Check(f) || PyTuple_GET_SIZE(f) != 4) {
                PyErr_SetString(PyExc_TypeError, "a STREAM frame is (stream_id, offset, data, fin)");
                goto error;
            }
            long long offset = PyLong_AsLongLong(PyTuple_GET_ITEM(f, 1));
            Py_ssize_t len = length_of(PyTuple_GET_ITEM(f, 2));
            int fin = PyObject_IsTrue(PyTuple_GET_ITEM(f, 3));
            if ((offset == -1 && PyErr_Occurred()) || len < 0 || fin < 0
                || frame_acked(c, PyTuple_GET_ITEM(f, 0), offset, PyTuple_GET_ITEM(f, 1), len, fin, acked, report, i) < 0)
                goto error;
        }
    }
    if (report != NULL) {
        PyObject *pn = qp != NULL ? PyLong_FromLongLong(qp->pn) : SITE_GETATTR(packet, str_pn);
        PyObject *r = pn == NULL ? NULL : call2(on_packet_acked, pn, report);
        Py_XDECREF(pn);
        if (r == NULL)
            goto error;
        Py_DECREF(r);
        Py_DECREF(report);
    }
    Py_XDECREF(seq);
    return 0;
error:
    Py_XDECREF(report);
    Py_XDECREF(seq);
    return -1;
}

/* ResponseWriter (below): its on_stream_acked, called in C when it is the endpoint's. */
struct WriterObject;
static PyTypeObject WriterType;
static PyObject *Writer_on_stream_acked(struct WriterObject *w, PyObject *const *args, Py_ssize_t nargs);
static int writer_stream_acked(struct WriterObject *w, PyObject *sid, long long acked_offset);

/* A stream's acknowledged prefix grew: it is never sent again (RFC 9000 13.3), so it is let
 * go (stream.SendStream.drop_acked), and the application hears of it. */
static int
stream_acked(PyObject *ep, PyObject *stream, PyObject *sid)
{
    PyObject *rs = SS_OBJ(stream, acked);
    if (rs == NULL)
        return -1;
    long long prefix = 0, acked_prefix, buf_offset;
    int rc = rangeset_prefix(rs, &prefix);
    Py_DECREF(rs);
    if (rc < 0 || SS_LONG(stream, acked_prefix, &acked_prefix) < 0)
        return -1;
    if (prefix <= acked_prefix)
        return 0;
    if (SS_SET(stream, acked_prefix, prefix) < 0 || SS_LONG(stream, buf_offset, &buf_offset) < 0)
        return -1;
    if (prefix - buf_offset > 0) {
        PyObject *buf = SS_OBJ(stream, buf);
        if (buf == NULL)
            return -1;
        int fin = SS_BOOL(stream, fin);
        long long fin_offset = -1;
        rc = fin < 0 || SS_LONG(stream, fin_offset, &fin_offset) < 0 ? -1
            : IS_SS(stream) ? ss_drop_front(SS(stream), prefix - buf_offset, fin && prefix >= fin_offset)
            : buf_drop_front(buf, (Py_ssize_t)(prefix - buf_offset), fin && prefix >= fin_offset);
        Py_DECREF(buf);
        if (rc < 0 || SS_SET(stream, buf_offset, prefix) < 0)
            return -1;
    }
    PyObject *cb = SITE_GETATTR(ep, str_on_stream_acked);
    if (cb == NULL)
        return -1;
    if (PyCFunction_CheckExact(cb) && PyCFunction_GET_FUNCTION(cb) == (PyCFunction)(void (*)(void))Writer_on_stream_acked
        && PyCFunction_GET_SELF(cb) != NULL && Py_IS_TYPE(PyCFunction_GET_SELF(cb), &WriterType)) {
        /* the C ResponseWriter's bound on_stream_acked: called without boxing the offset */
        rc = writer_stream_acked((struct WriterObject *)PyCFunction_GET_SELF(cb), sid, prefix);
        Py_DECREF(cb);
        return rc;
    }
    if (cb != Py_None) {
        PyObject *p = PyLong_FromLongLong(prefix);
        PyObject *r = p == NULL ? NULL : call2(cb, sid, p);
        Py_XDECREF(p);
        if (r == NULL) {
            Py_DECREF(cb);
            return -1;
        }
        Py_DECREF(r);
    }
    Py_DECREF(cb);
    return 0;
}

static PyObject *after_ack(CoreObject *c, double now);

/* recovery._on_ack_frame(ranges, ack_delay_s) on endpoint ep: the frame's ranges rg (nr low,
 * high pairs, highest first). */
static int
ack_frame_received(CoreObject *c, PyObject *ep, const long long *rg, Py_ssize_t nr, double ack_delay,
                   PyObject *now_o)
{
    double now;
    if (get_double(now_o, &now) < 0)
        return -1;
    PktBuf newly;
    if (on_ack(c, rg, nr, ack_delay, now, &newly) < 0)
        return -1;
    if (newly.n == 0)
        return 0;
    SidSet acked;
    sidset_init(&acked);
    PyObject *on_packet_acked = SITE_GETATTR(ep, str_on_packet_acked);
    if (on_packet_acked == NULL)
        goto error;
    for (Py_ssize_t i = 0; i < newly.n; i++)                  /* oldest first */
        if (packet_acked(c, newly.v[i], &acked, on_packet_acked) < 0)
            goto error;
    for (Py_ssize_t i = 0; i < acked.n; i++) {                  /* in stream id order */
        PyObject *sid = acked.ids[i];
        PyObject *stream = PyDict_GetItemWithError(c->send_streams, sid);
        if (stream == NULL) {
            if (!PyErr_Occurred())
                PyErr_SetObject(PyExc_KeyError, sid);
            goto error;
        }
        Py_INCREF(stream);
        int rc = stream_acked(ep, stream, sid);
        Py_DECREF(stream);
        if (rc < 0)
            goto error;
    }
    sidset_free(&acked);
    Py_CLEAR(on_packet_acked);
    pktbuf_release(&newly);
    PyObject *lost = after_ack(c, now);
    if (lost == NULL)
        return -1;
    if (lost != Py_None) {                     /* _on_packets_lost's Python half: queue the data again */
        PyObject *r = PyObject_CallMethodOneArg(ep, str_requeue_lost, lost);
        Py_DECREF(lost);
        if (r == NULL)
            return -1;
        Py_DECREF(r);
    }
    else
        Py_DECREF(lost);
    if (set_loss_timer(c, ep) < 0)
        return -1;
    Py_ssize_t queued = queue_len(c->retx_queue);
    if (queued == 0)
        queued = queue_len(c->new_queue);
    if (queued < 0)
        return -1;
    if (!queued) {
        PyObject *pull = SITE_GETATTR(ep, str_on_send_ready);
        if (pull == NULL)
            return -1;
        queued = pull != Py_None;
        Py_DECREF(pull);
    }
    return queued ? schedule_flush(c) : 0;
error:
    sidset_free(&acked);
    Py_XDECREF(on_packet_acked);
    pktbuf_release(&newly);
    return -1;
}

/* on_ack_frame(endpoint, ranges, ack_delay_s): recovery._on_ack_frame, whole. */
static PyObject *
Core_on_ack_frame(CoreObject *c, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3 || c->send_streams == NULL) {
        PyErr_SetString(PyExc_TypeError, "on_ack_frame(endpoint, ranges, ack_delay_s), after bind()");
        return NULL;
    }
    PyObject *sim = SITE_GETATTR(args[0], str_sim);
    PyObject *now_o = sim == NULL ? NULL : SITE_GETATTR(sim, str_now);
    Py_XDECREF(sim);
    if (now_o == NULL)
        return NULL;
    double ack_delay;
    Py_ssize_t nr;
    long long *rg = get_double(args[2], &ack_delay) < 0 ? NULL : parse_ranges(args[1], &nr);
    int rc = rg == NULL ? -1 : ack_frame_received(c, args[0], rg, nr, ack_delay, now_o);
    PyMem_Free(rg);
    Py_DECREF(now_o);
    if (rc < 0)
        return NULL;
    Py_RETURN_NONE;
}

/* receive(endpoint, packet): a 1-RTT packet once the handshake is confirmed
 * (connection.QuicEndpoint._on_packet): its ACK frame (the endpoint's _on_ack_frame), its
 * STREAM frames, then its packet number and whether to ACK (ack._on_packet_number). */
static PyObject *
Core_receive(CoreObject *c, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2 || c->recv_streams == NULL) {
        PyErr_SetString(PyExc_TypeError, "receive(endpoint, packet), after bind()");
        return NULL;
    }
    PyObject *ep = args[0], *packet = args[1];
    /* the core's own QuicPacket: its fields read in place (any other: through attributes) */
    QPacketObject *qp = Py_IS_TYPE(packet, &QPacketType) ? (QPacketObject *)packet : NULL;
    PyObject *ack = qp != NULL ? (qp->nack > 0 ? Py_NewRef(Py_None) : Py_NewRef(qp->ack)) : SITE_GETATTR(packet, str_ack);
    if (ack == NULL)
        return NULL;
    PyObject *now_o = SITE_GETATTR(c->sim, str_now);            /* the endpoint's simulator (bind) */
    if (now_o == NULL) {
        Py_DECREF(ack);
        return NULL;
    }
    if (qp != NULL && qp->nack > 0) {          /* the core's frame, in C */
        if (ack_frame_received(c, ep, qp->ack_ranges, qp->nack, qp->ack_delay_s, now_o) < 0) {
            Py_DECREF(ack);
            Py_DECREF(now_o);
            return NULL;
        }
    }
    else if (ack != Py_None) {
        if (!PyTuple_Check(ack) || PyTuple_GET_SIZE(ack) != 2 || !PyList_Check(PyTuple_GET_ITEM(ack, 0))) {
            PyErr_SetString(PyExc_TypeError, "an ACK frame is (ranges: list, ack_delay_s)");
            Py_DECREF(ack);
            Py_DECREF(now_o);
            return NULL;
        }
        double ack_delay;
        Py_ssize_t nr;
        long long *rg = get_double(PyTuple_GET_ITEM(ack, 1), &ack_delay) < 0 ? NULL
            : parse_ranges(PyTuple_GET_ITEM(ack, 0), &nr);
        int rc = rg == NULL ? -1 : ack_frame_received(c, ep, rg, nr, ack_delay, now_o);
        PyMem_Free(rg);
        if (rc < 0) {
            Py_DECREF(ack);
            Py_DECREF(now_o);
            return NULL;
        }
    }
    Py_DECREF(ack);
    double now;
    PyObject *frames = NULL, *seq = NULL, *pn_o = NULL;
    if (get_double(now_o, &now) < 0)
        goto error;
    if (qp != NULL && qp->cf != NULL) {        /* the core's frames, in C */
        for (int i = 0; i < qp->ncf; i++) {
            CFrame *f = &qp->cf[i];
            if (on_stream_frame(c, ep, f->sid, f->offset, NULL, f->data, f->fin, now_o) < 0)
                goto error;
        }
    }
    else {
        if ((frames = qp != NULL ? Py_NewRef(qp->frames) : SITE_GETATTR(packet, str_frames)) == NULL
            || (seq = PySequence_Fast(frames, "frames")) == NULL)
            goto error;
        for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq); i++) {
            PyObject *f = PySequence_Fast_GET_ITEM(seq, i);
            if (!PyTuple_Check(f) || PyTuple_GET_SIZE(f) != 4) {
                PyErr_SetString(PyExc_TypeError, "a STREAM frame is (stream_id, offset, data, fin)");
                goto error;
            }
            int fin = PyObject_IsTrue(PyTuple_GET_ITEM(f, 3));
            long long offset = PyLong_AsLongLong(PyTuple_GET_ITEM(f, 1));
            if (fin < 0 || (offset == -1 && PyErr_Occurred())
                || on_stream_frame(c, ep, PyTuple_GET_ITEM(f, 0), offset, PyTuple_GET_ITEM(f, 1), PyTuple_GET_ITEM(f, 2),
                                   fin, now_o) < 0)
                goto error;
        }
    }
    /* ack._on_packet_number */
    long long pn;
    if (qp != NULL)
        pn = qp->pn;
    else if ((pn_o = SITE_GETATTR(packet, str_pn)) == NULL || ((pn = PyLong_AsLongLong(pn_o)) == -1 && PyErr_Occurred()))
        goto error;
    int out_of_order = packet_number(c, pn, now);
    int eliciting = qp != NULL ? qp->ack_eliciting != 0 : attr_truthy(packet, str_ack_eliciting);
    if (eliciting < 0)
        goto error;
    if (eliciting) {
        c->unacked_eliciting += 1;
        if (out_of_order || c->unacked_eliciting >= c->ack_every_packets) {
            if (ack_now(c) < 0)
                goto error;
        }
        else {
            int unset;
            if (Py_IS_TYPE(c->timers, &TimersType))           /* the C slots: read in place */
                unset = ((TimersObject *)c->timers)->cb[fast_slot(str_ack)] == NULL;
            else {
                PyObject *expiry = call_timers(c, str_expiry, str_ack, NULL, NULL);
                if (expiry == NULL)
                    goto error;
                unset = expiry == Py_None;
                Py_DECREF(expiry);
            }
            if (unset) {
                PyObject *delay = SITE_GETATTR(ep, str_ack_delay_s);
                double d;
                if (delay == NULL)
                    goto error;
                int bad = get_double(delay, &d);
                Py_DECREF(delay);
                if (bad < 0 || timers_set(c, str_ack, now + d, c->ack_now_event) < 0)
                    goto error;
            }
        }
    }
    Py_XDECREF(pn_o);
    Py_XDECREF(seq);
    Py_XDECREF(frames);
    Py_DECREF(now_o);
    Py_RETURN_NONE;
error:
    Py_XDECREF(pn_o);
    Py_XDECREF(seq);
    Py_XDECREF(frames);
    Py_DECREF(now_o);
    return NULL;
}

/* -- an endpoint's flush and packet arrival as C callables ------------------------------------
 *
 * What the engine runs for a flush (sim.call_soon, the pace timer) and what a link hands each
 * arriving packet to: one call into C instead of a Python method that calls into C.  Each
 * carries the reference method's __qualname__, which is how a traced run labels its events. */

enum { BOUND_FLUSH = 0, BOUND_DELIVER = 1, BOUND_ACK_NOW = 2 };

typedef struct {
    PyObject_HEAD
    CoreObject *core;
    PyObject *endpoint;
    int kind;
    vectorcallfunc vectorcall;     /* Bound_vectorcall: the engine and links call it without a tuple */
} BoundObject;

static PyTypeObject BoundType;
static PyObject *Core_receive(CoreObject *c, PyObject *const *args, Py_ssize_t nargs);

static PyObject *
Bound_vectorcall(BoundObject *b, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    Py_ssize_t n = PyVectorcall_NARGS(nargsf);   /* keywords ignored, as the tuple call did */
    if (b->kind != BOUND_DELIVER) {
        if (n != 0) {
            PyErr_SetString(PyExc_TypeError, "takes no arguments");
            return NULL;
        }
        if ((b->kind == BOUND_FLUSH ? flush(b->core, b->endpoint) : ack_now(b->core)) < 0)
            return NULL;
        Py_RETURN_NONE;
    }
    if (n != 1) {
        PyErr_SetString(PyExc_TypeError, "_on_packet(link_packet)");
        return NULL;
    }
    /* NativeQuicEndpoint._on_packet: 1-RTT packets once the handshake is confirmed, in C */
    PyObject *ep = b->endpoint;
    PyObject *payload = SITE_GETATTR(args[0], str_payload);
    if (payload == NULL)
        return NULL;
    int fast = (PyObject *)Py_TYPE(payload) == b->core->packet_class;
    if (fast)
        fast = attr_truthy(ep, str_ready);
    if (fast > 0) {
        PyObject *done = SITE_GETATTR(ep, str_handshake_done_s);
        if (done == NULL)
            fast = -1;
        else {
            fast = done != Py_None;
            Py_DECREF(done);
        }
    }
    PyObject *r;
    if (fast < 0)
        r = NULL;
    else if (fast) {
        PyObject *argv[2] = {ep, payload};
        r = Core_receive(b->core, argv, 2);
    }
    else
        r = PyObject_CallMethodOneArg(ep, str_on_packet, args[0]);
    Py_DECREF(payload);
    return r;
}

/* The engine's C event of a flush (schedule_flush): what calling the _Bound with no
 * arguments does, without the call. */
static int
bound_cfire(PyObject *bound, uint64_t gen)
{
    BoundObject *b = (BoundObject *)bound;
    return b->kind == BOUND_FLUSH ? flush(b->core, b->endpoint) : ack_now(b->core);
}

/* A _Bound that bound_cfire runs as calling it with no arguments would (a flush, ack_now)? */
static int
bound_timer_kind(PyObject *callback)
{
    return Py_IS_TYPE(callback, &BoundType) && ((BoundObject *)callback)->kind != BOUND_DELIVER;
}

static PyObject *
Bound_get_qualname(BoundObject *b, void *x)
{
    static const char *names[] = {"PacketBuilder._flush", "QuicEndpoint._on_packet", "AckGeneration._ack_now"};
    return PyUnicode_FromString(names[b->kind]);
}

static int
Bound_traverse(BoundObject *b, visitproc visit, void *arg)
{
    Py_VISIT(b->core);
    Py_VISIT(b->endpoint);
    return 0;
}

static int
Bound_clear(BoundObject *b)
{
    Py_CLEAR(b->core);
    Py_CLEAR(b->endpoint);
    return 0;
}

static void
Bound_dealloc(BoundObject *b)
{
    PyObject_GC_UnTrack(b);
    Bound_clear(b);
    Py_TYPE(b)->tp_free((PyObject *)b);
}

static PyGetSetDef Bound_getset[] = {
    {"__qualname__", (getter)Bound_get_qualname, NULL, "the reference method's name (trace labels)", NULL},
    {NULL},
};

static PyTypeObject BoundType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = NET_MODULE "._Bound",
    .tp_doc = "An endpoint's flush or packet arrival, called from the engine or a link.",
    .tp_basicsize = sizeof(BoundObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_call = PyVectorcall_Call,
    .tp_vectorcall_offset = offsetof(BoundObject, vectorcall),
    .tp_traverse = (traverseproc)Bound_traverse,
    .tp_clear = (inquiry)Bound_clear,
    .tp_dealloc = (destructor)Bound_dealloc,
    .tp_getset = Bound_getset,
};

/* callables(endpoint): (flush, deliver, ack_now) for the endpoint this core serves. */
static PyObject *
Core_callables(CoreObject *c, PyObject *ep)
{
    PyObject *out = PyTuple_New(3);
    if (out == NULL)
        return NULL;
    for (int kind = 0; kind < 3; kind++) {
        BoundObject *b = PyObject_GC_New(BoundObject, &BoundType);
        if (b == NULL) {
            Py_DECREF(out);
            return NULL;
        }
        Py_INCREF(c);
        b->core = c;
        Py_INCREF(ep);
        b->endpoint = ep;
        b->kind = kind;
        b->vectorcall = (vectorcallfunc)Bound_vectorcall;
        PyObject_GC_Track(b);
        if (kind != BOUND_DELIVER) {
            Py_INCREF(b);
            Py_XSETREF(*(kind == BOUND_FLUSH ? &c->flush_event : &c->ack_now_event), (PyObject *)b);
        }
        PyTuple_SET_ITEM(out, kind, (PyObject *)b);
    }
    return out;
}

static PyObject *
Core_get_cwnd_log(CoreObject *c, void *x)
{
    Py_INCREF(c->cwnd_log);
    return c->cwnd_log;
}

static int
Core_set_cwnd_log(CoreObject *c, PyObject *v, void *x)
{
    if (v == NULL || (v != Py_None && !PyList_Check(v))) {
        PyErr_SetString(PyExc_TypeError, "cwnd_log is a list or None");
        return -1;
    }
    Py_INCREF(v);
    Py_XSETREF(c->cwnd_log, v);
    return 0;
}

static PyObject *
Core_get_loss_time(CoreObject *c, void *x)
{
    if (!c->has_loss_time)
        Py_RETURN_NONE;
    return PyFloat_FromDouble(c->loss_time);
}

static PyObject *
Core_get_in_flight(CoreObject *c, void *x)
{
    return PyLong_FromSsize_t(c->outstanding);
}

static PyMethodDef Core_methods[] = {
    {"on_sent", (PyCFunction)(void (*)(void))Core_on_sent, METH_FASTCALL, "on_sent(packet, pn, time_sent_s, size)"},
    {"on_ack", (PyCFunction)(void (*)(void))Core_on_ack, METH_FASTCALL, "on_ack(ranges, ack_delay_s, now)"},
    {"after_ack", (PyCFunction)Core_after_ack, METH_O, "after_ack(now): packets lost, or None"},
    {"loss_deadline", (PyCFunction)Core_loss_deadline, METH_NOARGS, "the loss timer's time, or None"},
    {"on_loss_timeout", (PyCFunction)Core_on_loss_timeout, METH_O, "on_loss_timeout(now)"},
    {"outstanding", (PyCFunction)Core_outstanding, METH_O, "outstanding(index): a packet in flight"},
    {"rtt_sample", (PyCFunction)(void (*)(void))Core_rtt_sample, METH_FASTCALL, "rtt_sample(sample_s, now)"},
    {"cwnd_open", (PyCFunction)Core_cwnd_open, METH_NOARGS, "bytes in flight < cwnd"},
    {"pace", (PyCFunction)Core_pace, METH_O, "pace(now): when the next packet may leave, or None"},
    {"paced", (PyCFunction)Core_paced, METH_O, "paced(now): a packet left"},
    {"on_packet_number", (PyCFunction)(void (*)(void))Core_on_packet_number, METH_FASTCALL,
     "on_packet_number(pn, now): True if out of order"},
    {"ack_frame", (PyCFunction)Core_ack_frame, METH_O, "ack_frame(now): ((ranges, ack_delay_s), size)"},
    {"ack_frame_size", (PyCFunction)Core_ack_frame_size, METH_O, "ack_frame_size(now)"},
    {"bind", (PyCFunction)(void (*)(void))Core_bind, METH_FASTCALL,
     "bind(packet_class, link_packet_class, retx_queue, new_queue, send_streams, max_payload, recv_streams, "
     "recv_stream_class, ack_every_packets, sim, timers, on_loss_timeout)"},
    {"callables", (PyCFunction)Core_callables, METH_O, "callables(endpoint): its (flush, deliver, ack_now) in C"},
    {"write", (PyCFunction)(void (*)(void))Core_write, METH_FASTCALL,
     "write(endpoint, stream, stream_id, data, end): connection.QuicEndpoint.write on an open stream"},
    {"on_ack_frame", (PyCFunction)(void (*)(void))Core_on_ack_frame, METH_FASTCALL,
     "on_ack_frame(endpoint, ranges, ack_delay_s): recovery._on_ack_frame"},
    {"receive", (PyCFunction)(void (*)(void))Core_receive, METH_FASTCALL,
     "receive(endpoint, packet): a 1-RTT packet (connection.QuicEndpoint._on_packet)"},
    {"flush", (PyCFunction)Core_flush, METH_O, "flush(endpoint): packet_builder._flush"},
    {"schedule_flush", (PyCFunction)Core_schedule_flush, METH_NOARGS,
     "schedule_flush(): packet_builder._schedule_flush (one flush per instant)"},
    {"send_packet", (PyCFunction)(void (*)(void))Core_send_packet, METH_FASTCALL,
     "send_packet(endpoint, frames, size_bytes, probe): packet_builder._send_packet"},
    {"send_ack", (PyCFunction)Core_send_ack, METH_O, "send_ack(endpoint): ack._send_ack"},
    {"set_loss_timer", (PyCFunction)Core_set_loss_timer, METH_O,
     "set_loss_timer(endpoint): recovery._set_loss_detection_timer"},
    {NULL},
};

static PyMemberDef Core_members[] = {
    {"rtt", T_OBJECT, offsetof(CoreObject, rtt), READONLY, NULL},
    {"cc", T_OBJECT, offsetof(CoreObject, cc), READONLY, NULL},
    {"bytes_in_flight", T_LONGLONG, offsetof(CoreObject, bytes_in_flight), READONLY, NULL},
    {"largest_acked", T_LONGLONG, offsetof(CoreObject, largest_acked), READONLY, NULL},
    {"pto_count", T_LONGLONG, offsetof(CoreObject, pto_count), READONLY, NULL},
    {"ack_ranges", T_INT, offsetof(CoreObject, nranges), READONLY, NULL},
    {"largest_recv_pn", T_LONGLONG, offsetof(CoreObject, largest_recv_pn), READONLY, NULL},
    {"packets_lost", T_LONGLONG, offsetof(CoreObject, packets_lost), 0, NULL},
    {"lost_by_packet_threshold", T_LONGLONG, offsetof(CoreObject, lost_by_packet_threshold), 0, NULL},
    {"lost_by_time_threshold", T_LONGLONG, offsetof(CoreObject, lost_by_time_threshold), 0, NULL},
    {"ptos", T_LONGLONG, offsetof(CoreObject, ptos), 0, NULL},
    {"spurious_ptos", T_LONGLONG, offsetof(CoreObject, spurious_ptos), 0, NULL},
    {"congestion_events", T_LONGLONG, offsetof(CoreObject, congestion_events), 0, NULL},
    {"credit_s", T_DOUBLE, offsetof(CoreObject, credit_s), READONLY, "the pacer's (pacer.Pacer)"},
    {"credit_max_s", T_DOUBLE, offsetof(CoreObject, credit_max_s), READONLY, "the pacer's (pacer.Pacer)"},
    {"updated_s", T_DOUBLE, offsetof(CoreObject, updated_s), READONLY, "the pacer's (pacer.Pacer)"},
    {"max_datagram_bytes", T_LONGLONG, offsetof(CoreObject, max_datagram), READONLY, NULL},
    {"next_pn", T_LONGLONG, offsetof(CoreObject, next_pn), 0, "the endpoint's _next_pn"},
    {"packets_sent", T_LONGLONG, offsetof(CoreObject, packets_sent), 0, NULL},
    {"probe_packets_sent", T_LONGLONG, offsetof(CoreObject, probe_packets_sent), 0, NULL},
    {"ack_packets_sent", T_LONGLONG, offsetof(CoreObject, ack_packets_sent), 0, NULL},
    {"bytes_sent", T_LONGLONG, offsetof(CoreObject, bytes_sent), 0, NULL},
    {"stream_bytes_sent", T_LONGLONG, offsetof(CoreObject, stream_bytes_sent), 0, NULL},
    {"stream_bytes_retransmitted", T_LONGLONG, offsetof(CoreObject, stream_bytes_retransmitted), 0, NULL},
    {"bytes_delivered", T_LONGLONG, offsetof(CoreObject, bytes_delivered), 0, NULL},
    {"reorder_bytes", T_LONGLONG, offsetof(CoreObject, reorder_bytes), 0, NULL},
    {"max_reorder_bytes", T_LONGLONG, offsetof(CoreObject, max_reorder_bytes), 0, NULL},
    {"unacked_eliciting", T_LONGLONG, offsetof(CoreObject, unacked_eliciting), 0, "the endpoint's _unacked_eliciting"},
    {"ack_due", T_BOOL, offsetof(CoreObject, ack_due), 0, "the endpoint's _ack_due"},
    {"flush_scheduled", T_BOOL, offsetof(CoreObject, flush_scheduled), 0, "the endpoint's _flush_scheduled"},
    {NULL},
};

static PyObject *
Core_get_interval(CoreObject *c, void *x)
{
    if (!c->has_interval)
        Py_RETURN_NONE;
    return PyFloat_FromDouble(c->interval_s);
}

static PyGetSetDef Core_getset[] = {
    {"interval_s", (getter)Core_get_interval, NULL, "the pacer's time per packet, or None (pacer.Pacer)", NULL},
    {"cwnd_log", (getter)Core_get_cwnd_log, (setter)Core_set_cwnd_log, "list of (time_s, cwnd_bytes), or None", NULL},
    {"loss_time_s", (getter)Core_get_loss_time, NULL, "the loss timer's time, or None", NULL},
    {"packets_in_flight", (getter)Core_get_in_flight, NULL, "ack-eliciting packets not yet settled", NULL},
    {NULL},
};

static PyTypeObject CoreType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = NET_MODULE ".QuicCore",
    .tp_doc = "A QUIC endpoint's loss recovery, ACK ranges, pacer and window (recovery.LossRecovery's C twin).",
    .tp_basicsize = sizeof(CoreObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Core_init,
    .tp_traverse = (traverseproc)Core_traverse,
    .tp_clear = (inquiry)Core_clear,
    .tp_dealloc = (destructor)Core_dealloc,
    .tp_methods = Core_methods,
    .tp_members = Core_members,
    .tp_getset = Core_getset,
};

/* -- ResponseWriter (writer.ResponseWriter's twin for a NativeQuicEndpoint) -----------------
 *
 * Responses in turns (_writer_turns.h, shared with the TCP writer: rotations per urgency level,
 * RFC 9218: the lowest level first, round-robin among equals, up to a packet's worth per turn;
 * or a scheduler of http.priority through its hooks or the RFC 7540 tree's twin), written as
 * the transport pulls them: pull() is ResponseWriter.pull, what the endpoint's on_send_ready
 * calls each time a packet may leave.  A write on an open stream goes to the endpoint's core as
 * NativeQuicEndpoint.write sends it (core_write), any other (a stream's first write) through
 * the endpoint's write; the padding is b"r" bytes, as writer._pad's.  The same writes in the
 * same order as the reference, so the same events (tests/test_net_quic_native.py, and
 * tests/test_priority_quic_native.py for the schedulers). */

#include "_stride_tree.h"   /* StrideTree: the RFC 7540 5.3 tree of priority_tree.py in C */
#include "_writer_turns.h"

typedef struct WriterObject {
    PyObject_HEAD
    WriterTurns t;                 /* first: WRITER_TURNS reads it there */
    PyObject *endpoint, *acked, *pad;
    CoreObject *core;
    char fill_on_ack;
} WriterObject;

static PyTypeObject WriterType;

/* endpoint.write(stream_id, b"r" * n, end): NativeQuicEndpoint.write, its open-stream case here. */
static int
writer_write(PyObject *self, PyObject *sid, long long n, int end)
{
    WriterObject *w = (WriterObject *)self;
    PyObject *data;
    if (n == PyBytes_GET_SIZE(w->pad))
        data = Py_NewRef(w->pad);
    else if ((data = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)n)) != NULL)
        memset(PyBytes_AS_STRING(data), 'r', (size_t)n);
    if (data == NULL)
        return -1;
    PyObject *end_o = end ? Py_True : Py_False;
    int rc;
    PyObject *stream = PyDict_GetItemWithError(w->core->send_streams, sid);   /* borrowed */
    if (stream == NULL && !PyErr_Occurred())
        stream = peer_send_stream(w->core, sid);                            /* a response's first write */
    int fin = stream == NULL ? (PyErr_Occurred() ? -1 : 1) : SS_BOOL(stream, fin);
    if (fin < 0)
        rc = -1;
    else if (!fin)
        rc = core_write(w->core, stream, sid, data, end_o);
    else {                                     /* a new or ended stream: as the reference */
        PyObject *argv[4] = {w->endpoint, sid, data, end_o};
        PyObject *r = PyObject_VectorcallMethod(str_write, argv, 4, NULL);
        rc = r == NULL ? -1 : 0;
        Py_XDECREF(r);
    }
    Py_DECREF(data);
    return rc;
}

static PyObject *
Writer_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    PyObject *endpoint, *written, *on_written, *core;
    long long chunk;
    int fill_on_ack;
    if (!PyArg_ParseTuple(args, "OLO!Op:ResponseWriter", &endpoint, &chunk, &PyDict_Type, &written, &on_written,
                          &fill_on_ack))
        return NULL;
    if (chunk <= 0) {
        PyErr_SetString(PyExc_ValueError, "chunk_bytes must be > 0");
        return NULL;
    }
    if ((core = PyObject_GetAttrString(endpoint, "_core")) == NULL)
        return NULL;
    if (!PyObject_TypeCheck(core, &CoreType) || ((CoreObject *)core)->send_streams == NULL) {
        Py_DECREF(core);
        PyErr_SetString(PyExc_TypeError, "the endpoint is a NativeQuicEndpoint (its _core bound)");
        return NULL;
    }
    WriterObject *w = (WriterObject *)type->tp_alloc(type, 0);
    if (w == NULL) {
        Py_DECREF(core);
        return NULL;
    }
    w->core = (CoreObject *)core;
    w->endpoint = Py_NewRef(endpoint);
    w->t.written = Py_NewRef(written);
    w->t.on_written = Py_NewRef(on_written);
    w->t.chunk = chunk;
    w->t.write = writer_write;
    w->fill_on_ack = (char)fill_on_ack;
    w->acked = PyDict_New();
    w->pad = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)chunk);
    if (w->acked == NULL || w->pad == NULL) {
        Py_DECREF(w);
        return NULL;
    }
    memset(PyBytes_AS_STRING(w->pad), 'r', (size_t)chunk);
    return (PyObject *)w;
}

static int
Writer_traverse(WriterObject *w, visitproc visit, void *arg)
{
    Py_VISIT(w->endpoint);
    Py_VISIT((PyObject *)w->core);
    Py_VISIT(w->acked);
    return turns_traverse(&w->t, visit, arg);
}

static int
Writer_clear(WriterObject *w)
{
    Py_CLEAR(w->endpoint);
    Py_CLEAR(w->core);
    Py_CLEAR(w->acked);
    turns_clear(&w->t);
    return 0;
}

static void
Writer_dealloc(WriterObject *w)
{
    PyObject_GC_UnTrack(w);
    Writer_clear(w);
    Py_CLEAR(w->pad);
    Py_TYPE(w)->tp_free((PyObject *)w);
}

/* ResponseWriter.fill: the window kept written (max(endpoint.cwnd_bytes, 2 chunks)). */
static int
writer_fill(WriterObject *w)
{
    if (!turns_waiting(&w->t))
        return 0;
    PyObject *cwnd = SITE_GETATTR(w->endpoint, str_cwnd_bytes);
    if (cwnd == NULL)
        return -1;
    double window;
    int rc = get_double(cwnd, &window);
    Py_DECREF(cwnd);
    if (rc < 0)
        return -1;
    double floor_bytes = (double)(2 * w->t.chunk);
    window = floor_bytes > window ? floor_bytes : window;   /* Python's max(cwnd_bytes, 2 * chunk) */
    while ((double)w->t.unacked < window) {
        long long n = turns_next(&w->t, (PyObject *)w, w->t.chunk);
        if (n < 0)
            return -1;
        if (n == 0)
            break;
    }
    return 0;
}

/* ResponseWriter.pull: a packet may leave now: about one packet's worth (chunk_bytes) from the
 * turns, as aioquic builds a packet from its streams' send buffers (RFC 9000 section 2.2: the
 * sender chooses which stream's data goes; a packet may carry frames of several streams); False
 * if nothing waits.  With a scheduler the same as http.network_server._ServerSide._pull over
 * ScheduledWriter.write_next. */
static PyObject *
Writer_pull(WriterObject *w, PyObject *unused)
{
    long long wrote = 0;
    while (wrote < w->t.chunk) {
        long long n = turns_next(&w->t, (PyObject *)w, w->t.chunk - wrote);
        if (n < 0)
            return NULL;
        if (!n)
            break;
        wrote += n;
    }
    return PyBool_FromLong(wrote > 0);
}

static PyObject *
Writer_fill(WriterObject *w, PyObject *unused)
{
    if (writer_fill(w) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static int
dict_long(PyObject *dict, PyObject *key, long long *out)   /* dict.get(key, 0) */
{
    *out = 0;
    PyObject *v = PyDict_GetItemWithError(dict, key);
    if (v == NULL)
        return PyErr_Occurred() ? -1 : 0;
    *out = PyLong_AsLongLong(v);
    return (*out == -1 && PyErr_Occurred()) ? -1 : 0;
}

/* on_stream_acked(stream_id, acked_offset), as stream_acked calls it in C. */
static int
writer_stream_acked(WriterObject *w, PyObject *sid, long long acked_offset)
{
    long long written, before;
    if (dict_long(w->t.written, sid, &written) < 0 || dict_long(w->acked, sid, &before) < 0)
        return -1;
    long long acked = acked_offset < written ? acked_offset : written;
    w->t.unacked -= acked - before;
    PyObject *acked_obj = PyLong_FromLongLong(acked);
    if (acked_obj == NULL)
        return -1;
    int rc = PyDict_SetItem(w->acked, sid, acked_obj);
    Py_DECREF(acked_obj);
    if (rc < 0 || (w->fill_on_ack && writer_fill(w) < 0))
        return -1;
    return 0;
}

static PyObject *
Writer_on_stream_acked(WriterObject *w, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "on_stream_acked(stream_id, acked_offset)");
        return NULL;
    }
    long long acked_offset = PyLong_AsLongLong(args[1]);
    if ((acked_offset == -1 && PyErr_Occurred()) || writer_stream_acked(w, args[0], acked_offset) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyMethodDef Writer_methods[] = {
    WRITER_TURNS_METHODS,
    {"pull", (PyCFunction)Writer_pull, METH_NOARGS, "pull() -> whether a packet's worth (or less) was written."},
    {"fill", (PyCFunction)Writer_fill, METH_NOARGS, "Keep the congestion window written."},
    {"on_stream_acked", (PyCFunction)(void (*)(void))Writer_on_stream_acked, METH_FASTCALL,
     "on_stream_acked(stream_id, acked_offset): the transport's acknowledgement."},
    {NULL},
};

static PyMemberDef Writer_members[] = {
    WRITER_TURNS_MEMBERS(WriterObject),
    {"endpoint", T_OBJECT, offsetof(WriterObject, endpoint), READONLY, NULL},
    {"fill_on_ack", T_BOOL, offsetof(WriterObject, fill_on_ack), READONLY, NULL},
    {NULL},
};

static PyGetSetDef Writer_getset[] = {
    {"waiting", (getter)Writer_get_waiting, NULL, "some response still has bytes to write", NULL},
    {NULL},
};

static PyTypeObject WriterType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = NET_MODULE ".ResponseWriter",
    .tp_doc = "ResponseWriter(endpoint, chunk_bytes, written, on_written, fill_on_ack): writer.ResponseWriter's C "
              "twin on a NativeQuicEndpoint.",
    .tp_basicsize = sizeof(WriterObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_new = Writer_new,
    .tp_traverse = (traverseproc)Writer_traverse,
    .tp_clear = (inquiry)Writer_clear,
    .tp_dealloc = (destructor)Writer_dealloc,
    .tp_methods = Writer_methods,
    .tp_members = Writer_members,
    .tp_getset = Writer_getset,
};

/* -- module -------------------------------------------------------------------------- */

/* Every SITE_GETATTR above has its own cache entry. */
typedef char site_caches_suffice[__COUNTER__ < SITE_CACHES ? 1 : -1];

static struct PyModuleDef quic_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "simulator.net._quic",
    .m_doc = "The QUIC model's per-packet recovery path in C: the twin of net/quic/recovery.py and ack.py.",
    .m_size = -1,
};

#define INTERN(var, text) if ((var = PyUnicode_InternFromString(text)) == NULL) return NULL

PyMODINIT_FUNC
PyInit__quic(void)
{
    INTERN(str_ready, "ready");
    INTERN(str_on_send_ready, "on_send_ready");
    INTERN(str_flush_scheduled, "_flush_scheduled");
    INTERN(str_ack_due, "_ack_due");
    INTERN(str_unacked_eliciting, "_unacked_eliciting");
    INTERN(str_next_pn, "_next_pn");
    INTERN(str_packets_sent, "packets_sent");
    INTERN(str_probe_packets_sent, "probe_packets_sent");
    INTERN(str_ack_packets_sent, "ack_packets_sent");
    INTERN(str_bytes_sent, "bytes_sent");
    INTERN(str_stream_bytes_sent, "stream_bytes_sent");
    INTERN(str_stream_bytes_retransmitted, "stream_bytes_retransmitted");
    INTERN(str_timers, "timers");
    INTERN(str_set, "set");
    INTERN(str_cancel, "cancel");
    INTERN(str_loss, "loss");
    INTERN(str_pace, "pace");
    INTERN(str_ack, "ack");
    INTERN(str_flush, "_flush");
    INTERN(str_on_loss_timeout, "_on_loss_detection_timeout");
    INTERN(str_link, "link");
    INTERN(str_send, "send");
    INTERN(str_c_send, "_c_send");
    INTERN(str_c_push, "_c_push");
    INTERN(str_c_new, "_c_new");
    INTERN(str_peer, "peer");
    INTERN(str_on_packet, "_on_packet");
    INTERN(str_sim, "sim");
    INTERN(str_now, "now");
    INTERN(str_acked_prefix, "acked_prefix");
    INTERN(str_fin_acked, "fin_acked");
    INTERN(str_buf, "buf");
    INTERN(str_buf_offset, "buf_offset");
    INTERN(str_popleft, "popleft");
    INTERN(str_call_soon, "call_soon");
    INTERN(str_fin_offset, "fin_offset");
    INTERN(str_written, "written");
    INTERN(str_finished, "finished");
    INTERN(str_delivered, "delivered");
    INTERN(str_heap, "heap");
    INTERN(str_heap_bytes, "heap_bytes");
    INTERN(str_on_data, "on_data");
    INTERN(str_on_ack_frame, "_on_ack_frame");
    INTERN(str_frames, "frames");
    INTERN(str_pn, "pn");
    INTERN(str_ack_eliciting, "ack_eliciting");
    INTERN(str_expiry, "expiry");
    INTERN(str_ack_delay_s, "_ack_delay_s");
    INTERN(str_ack_now, "_ack_now");
    INTERN(str_ack_now_event, "_ack_now_event");
    INTERN(str_join, "join");
    INTERN(str_payload, "payload");
    INTERN(str_handshake_done_s, "handshake_done_s");
    INTERN(str_deliver, "_deliver");
    INTERN(str_flush_event, "_flush_event");
    INTERN(str_starts, "starts");
    INTERN(str_ends, "ends");
    INTERN(str_done, "done");
    INTERN(str_acked, "acked");
    INTERN(str_on_packet_acked, "on_packet_acked");
    INTERN(str_on_stream_acked, "on_stream_acked");
    INTERN(str_requeue_lost, "_requeue_lost");
    INTERN(str_fin, "fin");
    INTERN(str_append, "append");
    INTERN(str_push, "_push");
    INTERN(str_queue, "_queue");
    INTERN(str_c_seq, "_c_seq");
    INTERN(str_reserve, "reserve");
    INTERN(str_push_at, "push_at");
    INTERN(str_next_s, "next_s");
    INTERN(str_later, "later");
    INTERN(str_later_bytes, "later_bytes");
    INTERN(str_appendleft, "appendleft");
    INTERN(str_write, "write");
    INTERN(str_cwnd_bytes, "cwnd_bytes");
    if ((empty_tuple = PyTuple_New(0)) == NULL)
        return NULL;
    if ((empty_bytes = PyBytes_FromStringAndSize(NULL, 0)) == NULL)
        return NULL;
    PyObject *heapq = PyImport_ImportModule("heapq");
    if (heapq == NULL)
        return NULL;
    heappush_fn = PyObject_GetAttrString(heapq, "heappush");
    heappop_fn = PyObject_GetAttrString(heapq, "heappop");
    Py_DECREF(heapq);
    if (heappush_fn == NULL || heappop_fn == NULL)
        return NULL;
    PyObject *collections = PyImport_ImportModule("collections");
    if (collections == NULL)
        return NULL;
    deque_type = PyObject_GetAttrString(collections, "deque");
    Py_DECREF(collections);
    if (deque_type == NULL || (deque_append = PyObject_GetAttrString(deque_type, "append")) == NULL
        || (deque_appendleft = PyObject_GetAttrString(deque_type, "appendleft")) == NULL
        || (deque_popleft = PyObject_GetAttrString(deque_type, "popleft")) == NULL)
        return NULL;
    PyTypeObject *types[] = {&RttType, &CcType, &CoreType, &TimersType, &BoundType, &QPacketType, &WriterType,
                             &TreeType, &SendStreamType, &RecvStreamType};
    for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
        if (PyType_Ready(types[i]) < 0)
            return NULL;
    PyObject *m = PyModule_Create(&quic_module);
    if (m == NULL)
        return NULL;
    const char *names[] = {"RttEstimator", "CongestionControl", "QuicCore", "TimerSlots", "_Bound", "QuicPacket",
                           "ResponseWriter", "StrideTree", "SendStream", "RecvStream"};
    for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
        if (PyModule_AddObjectRef(m, names[i], (PyObject *)types[i]) < 0) {
            Py_DECREF(m);
            return NULL;
        }
    }
    return m;
}
