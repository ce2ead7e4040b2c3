/* The TCP model's per-packet path in C: simulator.net._tcp.
 *
 * Written by hand: no library models TCP the way this workbench does (a SACK or NewReno
 * sender and a cumulative-ACK and SACK receiver whose every packet, ACK and timer is an event of the
 * workbench's own engine, on links with a drop-tail byte queue and the engine's seeded
 * random streams), so there is nothing to wrap.  This is the C twin of the Python
 * reference, which defines the behaviour and stays selectable (simulator/net/native.py):
 *
 *   Link, LinkStats, Packet   simulator/net/link.py   Link, LinkStats, Packet
 *   DelayedLink               simulator/net/link.py   _DelayedLink (a DelayedPath's direction)
 *   TcpEndpoint               simulator/net/tcp.py    TcpEndpoint
 *   TcpSegment, TcpAck, TcpControl                    the packets' payloads
 *   RttEstimator, CongestionControl  simulator/net/cc.py  RttEstimator, Reno, Cubic (as TCP uses them)
 *   TimerSlots                simulator/engine.py     TimerSlots (the endpoint's "rto" and "delack")
 *   ResponseWriter            simulator/net/writer.py ResponseWriter (a server's responses in turns)
 *   StrideTree                simulator/http/priority_tree.py  TreeScheduler's tree (_stride_tree.h)
 *
 * Why C: a page load of the page-load model sends about 20,000 packets, each a few
 * Python calls on the way out (write, segment, transmit, link) and in (arrival, receiver,
 * ACK, sender, congestion control, timers); those calls were most of a load's time.
 *
 * Same results, by construction:
 * - every event goes onto the engine's queue (sim._push) at the same point of the same
 *   computation, with the same time and a callback of the same name (Link._arrive,
 *   TimerSlots._fire, TcpEndpoint._flush, TcpEndpoint._on_segment, ...), so the queue's
 *   order, the events counted and a traced run's labels are the Python code's;
 * - the application's callbacks (on_data, on_stream_acked, on_received, on_established), a link's
 *   observers and loss model, and the random streams are called in the same order with
 *   the same arguments;
 * - every float is computed by the same IEEE operations in the same order as Python's
 *   (C doubles; built with -ffp-contract=off so no multiply-add is fused; Python's
 *   min()/max() tie rules; CPython's float ** for CUBIC's powers); where Python's types
 *   can make a value an int (a window set from ssthresh), the int-ness is kept so what a
 *   caller reads prints the same.
 * tests/test_net_native.py runs both implementations side by side and compares the
 * events, deliveries and counters exactly.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "_fastattr.h"    /* fast_getattr: a slot (sim.now, a Bernoulli's p) read at its offset */

#define NET_MODULE "simulator.net._tcp"
#define LINK_SEND_CAPSULE "simulator.net._tcp.any_link_send"   /* Link._c_send, for _quic.c */
#define PACKET_NEW_CAPSULE "simulator.net._tcp.packet_c_new"    /* Packet._c_new, for _quic.c */
#define MAX_BACKOFF (1LL << 16)
enum { SLOT_RTO = 0, SLOT_DELACK = 1 };
enum { CC_RENO = 0, CC_CUBIC = 1 };
enum { CTL_SYN = 0, CTL_SYN_ACK = 1, CTL_ACK = 2 };
/* a sent segment's mark on the SACK scoreboard (tcp_endpoint._SACKED, _LOST, _RESENT) */
enum { MARK_SACKED = 1, MARK_LOST = 2, MARK_RESENT = 3 };
#define MAX_SACK_BLOCKS 4      /* RFC 2018 section 3: 4 blocks in 40 bytes of options */

static PyObject *str_now, *str_push, *str_send, *str_lost, *str_random, *str_prob, *str_max_s,
    *str_size_bytes, *str_link_seq, *str_sent_s, *str_arrived_s, *str_payload, *str_ack, *str_kind,
    *str_sim, *str_config, *str_name, *str_flush, *str_on_segment, *str_on_ack, *str_on_control,
    *str_fire, *str_arrive, *str_start_handshake, *str_syn, *str_syn_ack, *str_ack_kind,
    *str_mss_bytes, *str_header_overhead_bytes, *str_cc, *str_initial_window_segments, *str_min_rto_s,
    *str_initial_rtt_s, *str_echo_s, *str_timestamps, *str_sack, *str_ack_every_packets, *str_max_ack_delay_s, *str_packet_threshold, *str_mtu_bytes,
    *str_cwnd_in_packets, *str_hystart, *str_bernoulli_p, *str_bernoulli_random;
static PyObject *empty_bytes, *empty_tuple;
static PyObject *no_loss_type;       /* link.NoLoss, registered by link.py: never loses, not called */
static PyObject *bernoulli_type;     /* link.Bernoulli, registered by link.py: its lost() drawn here */

/* -- helpers ---------------------------------------------------------------------- */

/* sim.now as a new reference, and its value in *now. */
static PyObject *
get_now(PyObject *sim, double *now)
{
    PyObject *o = fast_getattr(sim, str_now);
    if (o == NULL)
        return NULL;
    *now = PyFloat_AsDouble(o);
    if (*now == -1.0 && PyErr_Occurred()) {
        Py_DECREF(o);
        return NULL;
    }
    return o;
}

/* push(time_s, callback, args) on the engine's queue (args: a tuple, borrowed). */
static int
push_event(PyObject *push, PyObject *t_obj, PyObject *callback, PyObject *args)
{
    PyObject *argv[3] = {t_obj, callback, args};
    PyObject *r = PyObject_Vectorcall(push, argv, 3, NULL);
    if (r == NULL)
        return -1;
    Py_DECREF(r);
    return 0;
}

static int
push_at(PyObject *push, double t, PyObject *callback, PyObject *args)
{
    PyObject *t_obj = PyFloat_FromDouble(t);
    if (t_obj == NULL)
        return -1;
    int rc = push_event(push, t_obj, callback, args);
    Py_DECREF(t_obj);
    return rc;
}

#include "_cc.h"          /* py_max, py_min, py_float_pow, number; RttEstimator, CongestionControl */

static int
get_long_attr(PyObject *o, PyObject *name, long long *out)
{
    PyObject *v = PyObject_GetAttr(o, name);
    if (v == NULL)
        return -1;
    *out = PyLong_AsLongLong(v);
    Py_DECREF(v);
    return (*out == -1 && PyErr_Occurred()) ? -1 : 0;
}

static int
get_double_attr(PyObject *o, PyObject *name, double *out)
{
    PyObject *v = PyObject_GetAttr(o, name);
    if (v == NULL)
        return -1;
    *out = PyFloat_AsDouble(v);
    Py_DECREF(v);
    return (*out == -1.0 && PyErr_Occurred()) ? -1 : 0;
}

static int
get_bool_attr(PyObject *o, PyObject *name, char *out)
{
    PyObject *v = PyObject_GetAttr(o, name);
    if (v == NULL)
        return -1;
    int on = PyObject_IsTrue(v);
    Py_DECREF(v);
    if (on < 0)
        return -1;
    *out = (char)on;
    return 0;
}

/* link.Bernoulli.lost: `self.p > 0.0 and self._random() < self.p`, the same draw from the same
 * stream without a Python frame per packet.  1 lost, 0 not, -1 on error. */
static int
bernoulli_lost(PyObject *loss)
{
    PyObject *p = fast_getattr(loss, str_bernoulli_p);
    if (p == NULL)
        return -1;
    double prob = PyFloat_AsDouble(p);
    Py_DECREF(p);
    if (prob == -1.0 && PyErr_Occurred())
        return -1;
    if (!(prob > 0.0))
        return 0;
    PyObject *random = fast_getattr(loss, str_bernoulli_random);
    PyObject *r = random == NULL ? NULL : PyObject_CallNoArgs(random);
    Py_XDECREF(random);
    if (r == NULL)
        return -1;
    double x = PyFloat_AsDouble(r);
    Py_DECREF(r);
    if (x == -1.0 && PyErr_Occurred())
        return -1;
    return x < prob;
}

/* -- Packet ------------------------------------------------------------------------ */

typedef struct {
    PyObject_HEAD
    long long size_bytes;
    PyObject *payload;
    long long link_seq;
    double sent_s;
    double arrived_s;
    char has_arrived;
    char lost;
} PacketObject;

static PyTypeObject PacketType;

static PacketObject *
packet_new(long long size_bytes, PyObject *payload)
{
    PacketObject *p = PyObject_GC_New(PacketObject, &PacketType);
    if (p == NULL)
        return NULL;
    p->size_bytes = size_bytes;
    p->payload = Py_NewRef(payload);
    p->link_seq = 0;
    p->sent_s = 0.0;
    p->arrived_s = 0.0;
    p->has_arrived = 0;
    p->lost = 0;
    PyObject_GC_Track(p);
    return p;
}

static PyObject *
Packet_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"size_bytes", "payload", "link_seq", "sent_s", "arrived_s", "lost", NULL};
    long long size_bytes, link_seq = 0;
    PyObject *payload = Py_None, *arrived = Py_None;
    double sent_s = 0.0;
    int lost = 0;
    if (kwds == NULL && PyTuple_GET_SIZE(args) == 2 && PyLong_CheckExact(PyTuple_GET_ITEM(args, 0))) {
        /* Packet(size_bytes, payload), as a transport sends one: no format to parse */
        size_bytes = PyLong_AsLongLong(PyTuple_GET_ITEM(args, 0));
        if (size_bytes == -1 && PyErr_Occurred())
            return NULL;
        payload = PyTuple_GET_ITEM(args, 1);
    }
    else if (!PyArg_ParseTupleAndKeywords(args, kwds, "L|OLdOp:Packet", kwlist, &size_bytes, &payload,
                                          &link_seq, &sent_s, &arrived, &lost))
        return NULL;
    PacketObject *p = (PacketObject *)type->tp_alloc(type, 0);
    if (p == NULL)
        return NULL;
    p->size_bytes = size_bytes;
    p->payload = Py_NewRef(payload);
    p->link_seq = link_seq;
    p->sent_s = sent_s;
    if (arrived != Py_None) {
        p->arrived_s = PyFloat_AsDouble(arrived);
        if (p->arrived_s == -1.0 && PyErr_Occurred()) {
            Py_DECREF(p);
            return NULL;
        }
        p->has_arrived = 1;
    }
    p->lost = (char)lost;
    return (PyObject *)p;
}

static int
Packet_traverse(PacketObject *p, visitproc visit, void *arg)
{
    Py_VISIT(p->payload);
    return 0;
}

static int
Packet_clear(PacketObject *p)
{
    Py_CLEAR(p->payload);
    return 0;
}

static void
Packet_dealloc(PacketObject *p)
{
    PyObject_GC_UnTrack(p);
    Py_CLEAR(p->payload);
    Py_TYPE(p)->tp_free((PyObject *)p);
}

static PyObject *
Packet_get_arrived(PacketObject *p, void *closure)
{
    if (!p->has_arrived)
        Py_RETURN_NONE;
    return PyFloat_FromDouble(p->arrived_s);
}

static int
Packet_set_arrived(PacketObject *p, PyObject *v, void *closure)
{
    if (v == NULL || v == Py_None) {
        p->has_arrived = 0;
        return 0;
    }
    double d = PyFloat_AsDouble(v);
    if (d == -1.0 && PyErr_Occurred())
        return -1;
    p->arrived_s = d;
    p->has_arrived = 1;
    return 0;
}

static PyObject *
Packet_get_lost(PacketObject *p, void *closure)
{
    return PyBool_FromLong(p->lost);
}

static int
Packet_set_lost(PacketObject *p, PyObject *v, void *closure)
{
    int b = v == NULL ? 0 : PyObject_IsTrue(v);
    if (b < 0)
        return -1;
    p->lost = (char)b;
    return 0;
}

static PyObject *
Packet_repr(PacketObject *p)
{
    PyObject *sent = PyFloat_FromDouble(p->sent_s);
    PyObject *arrived = Packet_get_arrived(p, NULL);
    PyObject *r = NULL;
    if (sent && arrived)
        r = PyUnicode_FromFormat("Packet(size_bytes=%lld, payload=%R, link_seq=%lld, sent_s=%R, arrived_s=%R, lost=%s)",
                                 p->size_bytes, p->payload, p->link_seq, sent, arrived, p->lost ? "True" : "False");
    Py_XDECREF(sent);
    Py_XDECREF(arrived);
    return r;
}

static PyMemberDef Packet_members[] = {
    {"size_bytes", T_LONGLONG, offsetof(PacketObject, size_bytes), 0, "bytes on the wire"},
    {"payload", T_OBJECT, offsetof(PacketObject, payload), 0, "the transport's own object"},
    {"link_seq", T_LONGLONG, offsetof(PacketObject, link_seq), 0, "index on its link"},
    {"sent_s", T_DOUBLE, offsetof(PacketObject, sent_s), 0, "time it was put on its link"},
    {NULL},
};

static PyGetSetDef Packet_getset[] = {
    {"arrived_s", (getter)Packet_get_arrived, (setter)Packet_set_arrived, "arrival time (None: lost or not sent)", NULL},
    {"lost", (getter)Packet_get_lost, (setter)Packet_set_lost, "lost on the wire or dropped at the queue", NULL},
    {NULL},
};

/* Packet(size_bytes, payload) by vectorcall, as a transport sends one (the QUIC core for every
 * packet): no argument tuple; any other call as Packet_new. */
static PyObject *
Packet_vectorcall(PyObject *type, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (kwnames == NULL && nargs == 2 && PyLong_CheckExact(args[0])) {
        long long size_bytes = PyLong_AsLongLong(args[0]);
        if (size_bytes == -1 && PyErr_Occurred())
            return NULL;
        PacketObject *p = (PacketObject *)((PyTypeObject *)type)->tp_alloc((PyTypeObject *)type, 0);
        if (p == NULL)
            return NULL;
        p->size_bytes = size_bytes;  /* the rest as Packet_new leaves it: 0, 0.0, not arrived, not lost */
        p->payload = Py_NewRef(args[1]);
        p->link_seq = 0;
        p->sent_s = 0.0;
        p->lost = 0;
        return (PyObject *)p;
    }
    Py_ssize_t nkw = kwnames == NULL ? 0 : PyTuple_GET_SIZE(kwnames);
    PyObject *tuple = PyTuple_New(nargs), *kw = nkw ? PyDict_New() : NULL;
    if (tuple == NULL || (nkw && kw == NULL)) {
        Py_XDECREF(tuple);
        Py_XDECREF(kw);
        return NULL;
    }
    for (Py_ssize_t i = 0; i < nargs; i++)
        PyTuple_SET_ITEM(tuple, i, Py_NewRef(args[i]));
    for (Py_ssize_t i = 0; i < nkw; i++)
        if (PyDict_SetItem(kw, PyTuple_GET_ITEM(kwnames, i), args[nargs + i]) < 0) {
            Py_DECREF(tuple);
            Py_DECREF(kw);
            return NULL;
        }
    PyObject *r = Packet_new((PyTypeObject *)type, tuple, kw);
    Py_DECREF(tuple);
    Py_XDECREF(kw);
    return r;
}

/* A Packet(size_bytes, payload) made in C, for the QUIC twin (_quic.c's send_on_link, from the
 * capsule Packet._c_new): what the vectorcall above makes, without the int and the call. */
static PyObject *
packet_c_new(long long size_bytes, PyObject *payload)
{
    PacketObject *p = (PacketObject *)PacketType.tp_alloc(&PacketType, 0);
    if (p == NULL)
        return NULL;
    p->size_bytes = size_bytes;
    p->payload = Py_NewRef(payload);
    p->link_seq = 0;
    p->sent_s = 0.0;
    p->lost = 0;
    return (PyObject *)p;
}

static PyTypeObject PacketType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "simulator.net._tcp.Packet",
    .tp_vectorcall = Packet_vectorcall,
    .tp_doc = "A packet on a link (link.Packet's C twin).",
    .tp_basicsize = sizeof(PacketObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_new = Packet_new,
    .tp_dealloc = (destructor)Packet_dealloc,
    .tp_traverse = (traverseproc)Packet_traverse,
    .tp_clear = (inquiry)Packet_clear,
    .tp_repr = (reprfunc)Packet_repr,
    .tp_members = Packet_members,
    .tp_getset = Packet_getset,
};

/* Packet fields of any packet object: the C Packet directly, another (link.Packet) by
 * its attributes. */
static int
packet_size(PyObject *packet, long long *size)
{
    if (Py_IS_TYPE(packet, &PacketType)) {
        *size = ((PacketObject *)packet)->size_bytes;
        return 0;
    }
    return get_long_attr(packet, str_size_bytes, size);
}

static int
packet_set_sent(PyObject *packet, long long link_seq, PyObject *now_obj, double now)
{
    if (Py_IS_TYPE(packet, &PacketType)) {
        ((PacketObject *)packet)->link_seq = link_seq;
        ((PacketObject *)packet)->sent_s = now;
        return 0;
    }
    PyObject *seq = PyLong_FromLongLong(link_seq);
    if (seq == NULL)
        return -1;
    int rc = PyObject_SetAttr(packet, str_link_seq, seq);
    Py_DECREF(seq);
    if (rc < 0)
        return -1;
    return PyObject_SetAttr(packet, str_sent_s, now_obj);
}

static int
packet_set_lost(PyObject *packet)
{
    if (Py_IS_TYPE(packet, &PacketType)) {
        ((PacketObject *)packet)->lost = 1;
        return 0;
    }
    return PyObject_SetAttrString(packet, "lost", Py_True);
}

static int
packet_set_arrived(PyObject *packet, double arrive_s)
{
    if (Py_IS_TYPE(packet, &PacketType)) {
        ((PacketObject *)packet)->arrived_s = arrive_s;
        ((PacketObject *)packet)->has_arrived = 1;
        return 0;
    }
    PyObject *v = PyFloat_FromDouble(arrive_s);
    if (v == NULL)
        return -1;
    int rc = PyObject_SetAttr(packet, str_arrived_s, v);
    Py_DECREF(v);
    return rc;
}

/* -- LinkStats ----------------------------------------------------------------------- */

typedef struct {
    PyObject_HEAD
    long long packets_sent, packets_lost, packets_dropped, bytes_sent, bytes_delivered, max_queue_bytes;
} LinkStatsObject;

static PyObject *
LinkStats_repr(LinkStatsObject *s)
{
    return PyUnicode_FromFormat("LinkStats(packets_sent=%lld, packets_lost=%lld, packets_dropped=%lld, "
                                "bytes_sent=%lld, bytes_delivered=%lld, max_queue_bytes=%lld)",
                                s->packets_sent, s->packets_lost, s->packets_dropped, s->bytes_sent,
                                s->bytes_delivered, s->max_queue_bytes);
}

static PyMemberDef LinkStats_members[] = {
    {"packets_sent", T_LONGLONG, offsetof(LinkStatsObject, packets_sent), 0, NULL},
    {"packets_lost", T_LONGLONG, offsetof(LinkStatsObject, packets_lost), 0, "lost on the wire (loss model)"},
    {"packets_dropped", T_LONGLONG, offsetof(LinkStatsObject, packets_dropped), 0, "dropped at the full queue"},
    {"bytes_sent", T_LONGLONG, offsetof(LinkStatsObject, bytes_sent), 0, NULL},
    {"bytes_delivered", T_LONGLONG, offsetof(LinkStatsObject, bytes_delivered), 0, NULL},
    {"max_queue_bytes", T_LONGLONG, offsetof(LinkStatsObject, max_queue_bytes), 0, NULL},
    {NULL},
};

static PyTypeObject LinkStatsType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "simulator.net._tcp.LinkStats",
    .tp_doc = "A link's counters (link.LinkStats's C twin).",
    .tp_basicsize = sizeof(LinkStatsObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = PyType_GenericNew,
    .tp_repr = (reprfunc)LinkStats_repr,
    .tp_members = LinkStats_members,
};

/* -- Link ---------------------------------------------------------------------------- */

typedef struct {
    double start_s;
    long long size;
} Queued;

typedef struct {
    PyObject_HEAD
    PyObject *dict;             /* instance attributes: a hooked send (the pcap writer's) */
    PyObject *sim, *push, *name, *loss, *jitter, *jitter_rng, *observers;
    PyObject *delay_obj, *bandwidth_obj, *queue_obj;
    LinkStatsObject *stats;
    PyObject *arrive;           /* self._arrive, bound once */
    double delay_s, bandwidth_bps, busy_until_s, queue_bytes;
    long long mtu_bytes, queued_bytes;
    char has_bandwidth, has_queue;
    Queued *queue;              /* ring: (departure start, size) of queued packets */
    Py_ssize_t q_head, q_size, q_cap;
} LinkObject;

static PyTypeObject LinkType;

static PyObject *
Link_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    /* Link(sim, name, delay_s, bandwidth_bps, queue_bytes, mtu_bytes, loss, jitter, jitter_rng):
     * link.py's make_link checks the values and supplies the defaults. */
    PyObject *sim, *name, *delay, *bandwidth, *queue, *loss, *jitter, *jitter_rng;
    long long mtu;
    if (!PyArg_ParseTuple(args, "OOOOOLOOO:Link", &sim, &name, &delay, &bandwidth, &queue, &mtu,
                          &loss, &jitter, &jitter_rng))
        return NULL;
    LinkObject *l = (LinkObject *)type->tp_alloc(type, 0);
    if (l == NULL)
        return NULL;
    l->sim = Py_NewRef(sim);
    l->name = Py_NewRef(name);
    l->delay_obj = Py_NewRef(delay);
    l->bandwidth_obj = Py_NewRef(bandwidth);
    l->queue_obj = Py_NewRef(queue);
    l->loss = Py_NewRef(loss);
    l->jitter = Py_NewRef(jitter);
    l->jitter_rng = Py_NewRef(jitter_rng);
    l->mtu_bytes = mtu;
    l->delay_s = PyFloat_AsDouble(delay);
    if (l->delay_s == -1.0 && PyErr_Occurred())
        goto fail;
    if (bandwidth != Py_None) {
        l->has_bandwidth = 1;
        l->bandwidth_bps = PyFloat_AsDouble(bandwidth);
        if (l->bandwidth_bps == -1.0 && PyErr_Occurred())
            goto fail;
    }
    if (queue != Py_None) {
        l->has_queue = 1;
        l->queue_bytes = PyFloat_AsDouble(queue);
        if (l->queue_bytes == -1.0 && PyErr_Occurred())
            goto fail;
    }
    l->push = PyObject_GetAttr(sim, str_push);
    if (l->push == NULL)
        goto fail;
    l->observers = PyList_New(0);
    l->stats = (LinkStatsObject *)PyType_GenericNew(&LinkStatsType, NULL, NULL);
    l->arrive = PyObject_GetAttr((PyObject *)l, str_arrive);
    if (l->observers == NULL || l->stats == NULL || l->arrive == NULL)
        goto fail;
    return (PyObject *)l;
fail:
    Py_DECREF(l);
    return NULL;
}

static int
Link_traverse(LinkObject *l, visitproc visit, void *arg)
{
    Py_VISIT(l->dict);
    Py_VISIT(l->sim);
    Py_VISIT(l->push);
    Py_VISIT(l->name);
    Py_VISIT(l->loss);
    Py_VISIT(l->jitter);
    Py_VISIT(l->jitter_rng);
    Py_VISIT(l->observers);
    Py_VISIT(l->delay_obj);
    Py_VISIT(l->bandwidth_obj);
    Py_VISIT(l->queue_obj);
    Py_VISIT((PyObject *)l->stats);
    Py_VISIT(l->arrive);
    return 0;
}

static int
Link_clear(LinkObject *l)
{
    Py_CLEAR(l->dict);
    Py_CLEAR(l->sim);
    Py_CLEAR(l->push);
    Py_CLEAR(l->name);
    Py_CLEAR(l->loss);
    Py_CLEAR(l->jitter);
    Py_CLEAR(l->jitter_rng);
    Py_CLEAR(l->observers);
    Py_CLEAR(l->delay_obj);
    Py_CLEAR(l->bandwidth_obj);
    Py_CLEAR(l->queue_obj);
    Py_CLEAR(l->stats);
    Py_CLEAR(l->arrive);
    return 0;
}

static void
Link_dealloc(LinkObject *l)
{
    PyObject_GC_UnTrack(l);
    Link_clear(l);
    PyMem_Free(l->queue);
    Py_TYPE(l)->tp_free((PyObject *)l);
}

static int
observe(PyObject *observers, PyObject *packet)
{
    if (observers == NULL || (PyList_CheckExact(observers) && PyList_GET_SIZE(observers) == 0))
        return 0;
    PyObject *it = PyObject_GetIter(observers);
    if (it == NULL)
        return -1;
    PyObject *observer;
    while ((observer = PyIter_Next(it)) != NULL) {
        PyObject *r = PyObject_CallOneArg(observer, packet);
        Py_DECREF(observer);
        if (r == NULL) {
            Py_DECREF(it);
            return -1;
        }
        Py_DECREF(r);
    }
    Py_DECREF(it);
    return PyErr_Occurred() ? -1 : 0;
}

static int
queue_append(LinkObject *l, double start_s, long long size)
{
    if (l->q_size == l->q_cap) {
        Py_ssize_t cap = l->q_cap ? l->q_cap * 2 : 16;
        Queued *grown = PyMem_Malloc((size_t)cap * sizeof(Queued));
        if (grown == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        for (Py_ssize_t i = 0; i < l->q_size; i++)
            grown[i] = l->queue[(l->q_head + i) % l->q_cap];
        PyMem_Free(l->queue);
        l->queue = grown;
        l->q_cap = cap;
        l->q_head = 0;
    }
    Queued *slot = &l->queue[(l->q_head + l->q_size) % l->q_cap];
    slot->start_s = start_s;
    slot->size = size;
    l->q_size++;
    return 0;
}

/* Link.send: 1 sent (perhaps lost on the wire), 0 dropped at the queue, -1 error.
 * now_in: sim.now when the caller has it (the same event), else NULL. */
static int
link_send(LinkObject *l, PyObject *packet, PyObject *deliver, const double *now_in)
{
    long long size_bytes;
    if (packet_size(packet, &size_bytes) < 0)
        return -1;
    if (size_bytes > l->mtu_bytes) {
        PyErr_Format(PyExc_ValueError, "%U: packet of %lld B exceeds MTU %lld B", l->name, size_bytes, l->mtu_bytes);
        return -1;
    }
    double now;
    LinkStatsObject *stats = l->stats;
    int rc;
    if (now_in != NULL && Py_IS_TYPE(packet, &PacketType)) {
        now = *now_in;
        rc = packet_set_sent(packet, stats->packets_sent, NULL, now);
    }
    else {
        PyObject *now_obj = get_now(l->sim, &now);
        if (now_obj == NULL)
            return -1;
        rc = packet_set_sent(packet, stats->packets_sent, now_obj, now);
        Py_DECREF(now_obj);
    }
    if (rc < 0)
        return -1;
    stats->packets_sent += 1;
    stats->bytes_sent += size_bytes;
    double depart_s;
    if (!l->has_bandwidth)
        depart_s = now;
    else {
        while (l->q_size > 0 && l->queue[l->q_head].start_s <= now) {   /* started transmitting */
            l->queued_bytes -= l->queue[l->q_head].size;
            l->q_head = (l->q_head + 1) % l->q_cap;
            l->q_size--;
        }
        double start_s = l->busy_until_s;
        if (start_s > now) {                    /* the link is busy: wait in the queue */
            if (l->has_queue && (double)(l->queued_bytes + size_bytes) > l->queue_bytes) {
                stats->packets_dropped += 1;
                if (packet_set_lost(packet) < 0 || observe(l->observers, packet) < 0)
                    return -1;
                return 0;
            }
            if (queue_append(l, start_s, size_bytes) < 0)
                return -1;
            l->queued_bytes += size_bytes;
            if (l->queued_bytes > stats->max_queue_bytes)
                stats->max_queue_bytes = l->queued_bytes;
        }
        else
            start_s = now;
        depart_s = start_s + size_bytes * 8.0 / l->bandwidth_bps;
        l->busy_until_s = depart_s;
    }
    if ((PyObject *)Py_TYPE(l->loss) != no_loss_type) {
        int lost = (PyObject *)Py_TYPE(l->loss) == bernoulli_type ? bernoulli_lost(l->loss) : -2;
        if (lost == -2) {                      /* any other loss model: its lost() */
            PyObject *r = PyObject_CallMethodNoArgs(l->loss, str_lost);
            if (r == NULL)
                return -1;
            lost = PyObject_IsTrue(r);
            Py_DECREF(r);
        }
        if (lost < 0)
            return -1;
        if (lost) {
            stats->packets_lost += 1;
            if (packet_set_lost(packet) < 0 || observe(l->observers, packet) < 0)
                return -1;
            return 1;
        }
    }
    double arrive_s = depart_s + l->delay_s;
    if (l->jitter != Py_None) {
        double prob, max_s;
        if (get_double_attr(l->jitter, str_prob, &prob) < 0)
            return -1;
        if (prob > 0) {
            PyObject *r = PyObject_CallMethodNoArgs(l->jitter_rng, str_random);
            if (r == NULL)
                return -1;
            double draw = PyFloat_AsDouble(r);
            Py_DECREF(r);
            if (draw == -1.0 && PyErr_Occurred())
                return -1;
            if (draw < prob) {
                r = PyObject_CallMethodNoArgs(l->jitter_rng, str_random);
                if (r == NULL)
                    return -1;
                draw = PyFloat_AsDouble(r);
                Py_DECREF(r);
                if ((draw == -1.0 && PyErr_Occurred()) || get_double_attr(l->jitter, str_max_s, &max_s) < 0)
                    return -1;
                arrive_s += draw * max_s;
            }
        }
    }
    if (packet_set_arrived(packet, arrive_s) < 0)
        return -1;
    PyObject *args = PyTuple_Pack(2, packet, deliver);
    if (args == NULL)
        return -1;
    rc = push_at(l->push, arrive_s, l->arrive, args);
    Py_DECREF(args);
    return rc < 0 ? -1 : 1;
}

static PyObject *
Link_send(LinkObject *l, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "send(packet, deliver) takes 2 arguments");
        return NULL;
    }
    int rc = link_send(l, args[0], args[1], NULL);
    if (rc < 0)
        return NULL;
    return PyBool_FromLong(rc);
}

static PyObject *
Link_arrive(LinkObject *l, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "_arrive(packet, deliver) takes 2 arguments");
        return NULL;
    }
    long long size;
    if (packet_size(args[0], &size) < 0)
        return NULL;
    l->stats->bytes_delivered += size;
    if (observe(l->observers, args[0]) < 0)
        return NULL;
    PyObject *r = PyObject_CallOneArg(args[1], args[0]);
    if (r == NULL)
        return NULL;
    Py_DECREF(r);
    Py_RETURN_NONE;
}

static PyObject *
Link_observe(LinkObject *l, PyObject *packet)
{
    if (observe(l->observers, packet) < 0)
        return NULL;
    Py_RETURN_NONE;
}

/* A send hooked on the instance (the pcap writer replaces link.send): NULL if none. */
static inline PyObject *
hooked_send(PyObject *link)
{
    PyObject *dict = ((LinkObject *)link)->dict;
    if (dict == NULL || PyDict_GET_SIZE(dict) == 0)
        return NULL;
    return PyDict_GetItemWithError(dict, str_send);
}

static PyObject *
Link_get_busy(LinkObject *l, void *c) { return PyFloat_FromDouble(l->busy_until_s); }

static PyObject *
Link_get_stats(LinkObject *l, void *c) { return Py_NewRef((PyObject *)l->stats); }

static PyMethodDef Link_methods[] = {
    {"send", (PyCFunction)(void (*)(void))Link_send, METH_FASTCALL,
     "send(packet, deliver) -> False if dropped at the queue; deliver(packet) on arrival."},
    {"_arrive", (PyCFunction)(void (*)(void))Link_arrive, METH_FASTCALL, "_arrive(packet, deliver): the packet arrives."},
    {"_observe", (PyCFunction)Link_observe, METH_O, "_observe(packet): tell the observers."},
    {NULL},
};

static PyMemberDef Link_members[] = {
    {"sim", T_OBJECT, offsetof(LinkObject, sim), READONLY, NULL},
    {"name", T_OBJECT, offsetof(LinkObject, name), READONLY, NULL},
    {"delay_s", T_OBJECT, offsetof(LinkObject, delay_obj), READONLY, NULL},
    {"bandwidth_bps", T_OBJECT, offsetof(LinkObject, bandwidth_obj), READONLY, NULL},
    {"queue_bytes", T_OBJECT, offsetof(LinkObject, queue_obj), READONLY, NULL},
    {"mtu_bytes", T_LONGLONG, offsetof(LinkObject, mtu_bytes), READONLY, NULL},
    {"loss", T_OBJECT_EX, offsetof(LinkObject, loss), 0, "the loss model"},
    {"jitter", T_OBJECT, offsetof(LinkObject, jitter), 0, NULL},
    {"_jitter_rng", T_OBJECT, offsetof(LinkObject, jitter_rng), READONLY, NULL},
    {"observers", T_OBJECT_EX, offsetof(LinkObject, observers), 0, "called with every packet once its fate is known"},
    {"_queued_bytes", T_LONGLONG, offsetof(LinkObject, queued_bytes), READONLY, NULL},
    {"__dictoffset__", T_PYSSIZET, offsetof(LinkObject, dict), READONLY},
    {NULL},
};

static PyGetSetDef Link_getset[] = {
    {"_busy_until_s", (getter)Link_get_busy, NULL, NULL, NULL},
    {"stats", (getter)Link_get_stats, NULL, "the link's LinkStats", NULL},
    {"__dict__", PyObject_GenericGetDict, PyObject_GenericSetDict, NULL, NULL},
    {NULL},
};

static PyTypeObject LinkType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "simulator.net._tcp.Link",
    .tp_doc = "One direction of a path (link.Link's C twin); built by link.make_link.",
    .tp_basicsize = sizeof(LinkObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_new = Link_new,
    .tp_dealloc = (destructor)Link_dealloc,
    .tp_traverse = (traverseproc)Link_traverse,
    .tp_clear = (inquiry)Link_clear,
    .tp_methods = Link_methods,
    .tp_members = Link_members,
    .tp_getset = Link_getset,
    .tp_dictoffset = offsetof(LinkObject, dict),
    .tp_getattro = PyObject_GenericGetAttr,
    .tp_setattro = PyObject_GenericSetAttr,
};

/* -- DelayedLink --------------------------------------------------------------------- */

/* The deliver callback a DelayedLink hands its link: on arrival, sim.call_later(extra_s,
 * deliver, packet), as the Python _DelayedLink's lambda. */
typedef struct {
    PyObject_HEAD
    PyObject *sim, *push, *deliver;
    double extra_s;
    vectorcallfunc vectorcall;
} LaterObject;

static PyTypeObject LaterType;

static PyObject *
Later_call(LaterObject *w, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    if (PyVectorcall_NARGS(nargsf) != 1 || kwnames != NULL) {
        PyErr_SetString(PyExc_TypeError, "takes one packet");
        return NULL;
    }
    double now;
    PyObject *now_obj = get_now(w->sim, &now);
    if (now_obj == NULL)
        return NULL;
    Py_DECREF(now_obj);
    PyObject *call_args = PyTuple_Pack(1, args[0]);
    if (call_args == NULL)
        return NULL;
    int rc = push_at(w->push, now + w->extra_s, w->deliver, call_args);
    Py_DECREF(call_args);
    if (rc < 0)
        return NULL;
    Py_RETURN_NONE;
}

static int
Later_traverse(LaterObject *w, visitproc visit, void *arg)
{
    Py_VISIT(w->sim);
    Py_VISIT(w->push);
    Py_VISIT(w->deliver);
    return 0;
}

static int
Later_clear(LaterObject *w)
{
    Py_CLEAR(w->sim);
    Py_CLEAR(w->push);
    Py_CLEAR(w->deliver);
    return 0;
}

static void
Later_dealloc(LaterObject *w)
{
    PyObject_GC_UnTrack(w);
    Later_clear(w);
    Py_TYPE(w)->tp_free((PyObject *)w);
}

static PyTypeObject LaterType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "simulator.net._tcp._Later",
    .tp_doc = "deliver(packet) extra_s after it arrives (a DelayedLink's wrapper).",
    .tp_basicsize = sizeof(LaterObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_dealloc = (destructor)Later_dealloc,
    .tp_traverse = (traverseproc)Later_traverse,
    .tp_clear = (inquiry)Later_clear,
    .tp_call = PyVectorcall_Call,
    .tp_vectorcall_offset = offsetof(LaterObject, vectorcall),
};

typedef struct {
    PyObject_HEAD
    PyObject *link, *extra_obj, *sim, *push;
    long long mtu_bytes;
    double extra_s;
    LaterObject *later[2];     /* wrappers of the last two deliver callbacks (a connection's
                                  segments and its ACKs), reused */
    int next_later;
} DelayedLinkObject;

static PyTypeObject DelayedLinkType;

static PyObject *
DelayedLink_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    PyObject *link, *extra;
    if (!PyArg_ParseTuple(args, "OO:DelayedLink", &link, &extra))
        return NULL;
    DelayedLinkObject *d = (DelayedLinkObject *)type->tp_alloc(type, 0);
    if (d == NULL)
        return NULL;
    d->link = Py_NewRef(link);
    d->extra_obj = Py_NewRef(extra);
    d->extra_s = PyFloat_AsDouble(extra);
    if (d->extra_s == -1.0 && PyErr_Occurred())
        goto fail;
    d->sim = PyObject_GetAttr(link, str_sim);
    if (d->sim == NULL)
        goto fail;
    d->push = PyObject_GetAttr(d->sim, str_push);
    if (d->push == NULL || get_long_attr(link, str_mtu_bytes, &d->mtu_bytes) < 0)
        goto fail;
    return (PyObject *)d;
fail:
    Py_DECREF(d);
    return NULL;
}

static int
DelayedLink_traverse(DelayedLinkObject *d, visitproc visit, void *arg)
{
    Py_VISIT(d->link);
    Py_VISIT(d->extra_obj);
    Py_VISIT(d->sim);
    Py_VISIT(d->push);
    Py_VISIT((PyObject *)d->later[0]);
    Py_VISIT((PyObject *)d->later[1]);
    return 0;
}

static int
DelayedLink_clear(DelayedLinkObject *d)
{
    Py_CLEAR(d->link);
    Py_CLEAR(d->extra_obj);
    Py_CLEAR(d->sim);
    Py_CLEAR(d->push);
    Py_CLEAR(d->later[0]);
    Py_CLEAR(d->later[1]);
    return 0;
}

static void
DelayedLink_dealloc(DelayedLinkObject *d)
{
    PyObject_GC_UnTrack(d);
    DelayedLink_clear(d);
    Py_TYPE(d)->tp_free((PyObject *)d);
}

/* Any link's send (C fast path for a C Link not hooked): 1 sent, 0 dropped, -1 error. */
static int any_link_send(PyObject *link, PyObject *packet, PyObject *deliver, const double *now);

static int
delayed_send(DelayedLinkObject *d, PyObject *packet, PyObject *deliver, const double *now)
{
    LaterObject *w = d->later[0];
    if (w == NULL || w->deliver != deliver)
        w = d->later[1];
    if (w == NULL || w->deliver != deliver) {
        w = PyObject_GC_New(LaterObject, &LaterType);
        if (w == NULL)
            return -1;
        w->sim = Py_NewRef(d->sim);
        w->push = Py_NewRef(d->push);
        w->deliver = Py_NewRef(deliver);
        w->extra_s = d->extra_s;
        w->vectorcall = (vectorcallfunc)Later_call;
        PyObject_GC_Track(w);
        Py_XSETREF(d->later[d->next_later], w);
        d->next_later ^= 1;
    }
    Py_INCREF(w);
    int rc = any_link_send(d->link, packet, (PyObject *)w, now);
    Py_DECREF(w);
    return rc;
}

static PyObject *
DelayedLink_send(DelayedLinkObject *d, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "send(packet, deliver) takes 2 arguments");
        return NULL;
    }
    int rc = delayed_send(d, args[0], args[1], NULL);
    if (rc < 0)
        return NULL;
    return PyBool_FromLong(rc);
}

static PyMethodDef DelayedLink_methods[] = {
    {"send", (PyCFunction)(void (*)(void))DelayedLink_send, METH_FASTCALL,
     "send(packet, deliver): through the shared link, delivered extra_s after it arrives."},
    {NULL},
};

static PyMemberDef DelayedLink_members[] = {
    {"link", T_OBJECT, offsetof(DelayedLinkObject, link), READONLY, NULL},
    {"extra_s", T_OBJECT, offsetof(DelayedLinkObject, extra_obj), READONLY, NULL},
    {"sim", T_OBJECT, offsetof(DelayedLinkObject, sim), READONLY, NULL},
    {"mtu_bytes", T_LONGLONG, offsetof(DelayedLinkObject, mtu_bytes), READONLY, NULL},
    {NULL},
};

static PyTypeObject DelayedLinkType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "simulator.net._tcp.DelayedLink",
    .tp_doc = "DelayedLink(link, extra_s): one direction of a DelayedPath (link._DelayedLink's C twin).",
    .tp_basicsize = sizeof(DelayedLinkObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_new = DelayedLink_new,
    .tp_dealloc = (destructor)DelayedLink_dealloc,
    .tp_traverse = (traverseproc)DelayedLink_traverse,
    .tp_clear = (inquiry)DelayedLink_clear,
    .tp_methods = DelayedLink_methods,
    .tp_members = DelayedLink_members,
};

static int
any_link_send(PyObject *link, PyObject *packet, PyObject *deliver, const double *now)
{
    if (Py_IS_TYPE(link, &LinkType)) {
        PyObject *hook = hooked_send(link);
        if (hook == NULL && PyErr_Occurred())
            return -1;
        if (hook == NULL)
            return link_send((LinkObject *)link, packet, deliver, now);
    }
    else if (Py_IS_TYPE(link, &DelayedLinkType))
        return delayed_send((DelayedLinkObject *)link, packet, deliver, now);
    PyObject *r = PyObject_CallMethodObjArgs(link, str_send, packet, deliver, NULL);
    if (r == NULL)
        return -1;
    int sent = PyObject_IsTrue(r);
    Py_DECREF(r);
    return sent;
}

/* -- TcpSegment, TcpAck, TcpControl ---------------------------------------------------- */

typedef struct {
    PyObject *data;          /* a bytes object (owned); the piece is data[off:off + len] */
    Py_ssize_t off, len;
    long long stream_id, offset;
    int end;
} Piece;

typedef struct {
    PyObject_HEAD
    long long seq, length, payload_bytes;
    double sent_s;
    char retransmitted;
    char mark;               /* 0 in flight, MARK_SACKED, MARK_LOST, MARK_RESENT */
    Py_ssize_t npieces;
    Piece *pieces;           /* &one, or an array of npieces */
    Piece one;
} SegmentObject;

static PyTypeObject SegmentType;

static SegmentObject *
segment_new(long long seq, Py_ssize_t npieces)
{
    SegmentObject *s = PyObject_New(SegmentObject, &SegmentType);
    if (s == NULL)
        return NULL;
    s->seq = seq;
    s->length = s->payload_bytes = 0;
    s->sent_s = 0.0;
    s->retransmitted = 0;
    s->mark = 0;
    s->npieces = 0;
    if (npieces <= 1)
        s->pieces = &s->one;
    else {
        s->pieces = PyMem_Malloc((size_t)npieces * sizeof(Piece));
        if (s->pieces == NULL) {
            s->pieces = &s->one;
            Py_DECREF(s);
            PyErr_NoMemory();
            return NULL;
        }
    }
    return s;
}

static void
Segment_dealloc(SegmentObject *s)
{
    for (Py_ssize_t i = 0; i < s->npieces; i++)
        Py_XDECREF(s->pieces[i].data);
    if (s->pieces != &s->one)
        PyMem_Free(s->pieces);
    PyObject_Free(s);
}

static PyObject *
piece_view(const Piece *p)
{
    /* (stream_id, stream_offset, memoryview slice, end), as the Python segment holds it */
    PyObject *mv = PyMemoryView_FromObject(p->data);
    if (mv == NULL)
        return NULL;
    PyObject *view = PySequence_GetSlice(mv, p->off, p->off + p->len);
    Py_DECREF(mv);
    if (view == NULL)
        return NULL;
    return Py_BuildValue("(LLNO)", p->stream_id, p->offset, view, p->end ? Py_True : Py_False);
}

static PyObject *
Segment_get_pieces(SegmentObject *s, void *c)
{
    PyObject *t = PyTuple_New(s->npieces);
    if (t == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < s->npieces; i++) {
        PyObject *v = piece_view(&s->pieces[i]);
        if (v == NULL) {
            Py_DECREF(t);
            return NULL;
        }
        PyTuple_SET_ITEM(t, i, v);
    }
    return t;
}

static PyObject *
Segment_get_retransmitted(SegmentObject *s, void *c)
{
    return PyBool_FromLong(s->retransmitted);
}

static PyObject *
Segment_get_mark(SegmentObject *s, void *c)
{
    return PyLong_FromLong(s->mark);
}

static PyObject *
Segment_repr(SegmentObject *s)
{
    return PyUnicode_FromFormat("TcpSegment(seq=%lld, len=%lld)", s->seq, s->length);
}

static PyObject *
Segment_new_py(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    /* TcpSegment(seq, length, payload_bytes, pieces), pieces as (stream_id, offset, data, end) */
    long long seq, length, payload;
    PyObject *pieces;
    if (!PyArg_ParseTuple(args, "LLLO:TcpSegment", &seq, &length, &payload, &pieces))
        return NULL;
    PyObject *fast = PySequence_Fast(pieces, "pieces must be a sequence");
    if (fast == NULL)
        return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
    SegmentObject *s = segment_new(seq, n);
    if (s == NULL) {
        Py_DECREF(fast);
        return NULL;
    }
    s->length = length;
    s->payload_bytes = payload;
    for (Py_ssize_t i = 0; i < n; i++) {
        long long sid, off;
        PyObject *data;
        int end;
        if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(fast, i), "LLOp", &sid, &off, &data, &end))
            goto fail;
        PyObject *b = PyBytes_FromObject(data);
        if (b == NULL)
            goto fail;
        Piece *p = &s->pieces[s->npieces++];
        p->data = b;
        p->off = 0;
        p->len = PyBytes_GET_SIZE(b);
        p->stream_id = sid;
        p->offset = off;
        p->end = end;
    }
    Py_DECREF(fast);
    return (PyObject *)s;
fail:
    Py_DECREF(fast);
    Py_DECREF(s);
    return NULL;
}

static PyMemberDef Segment_members[] = {
    {"seq", T_LONGLONG, offsetof(SegmentObject, seq), READONLY, "first sequence number"},
    {"length", T_LONGLONG, offsetof(SegmentObject, length), READONLY, "sequence numbers it takes"},
    {"payload_bytes", T_LONGLONG, offsetof(SegmentObject, payload_bytes), READONLY, NULL},
    {"sent_s", T_DOUBLE, offsetof(SegmentObject, sent_s), READONLY, "last (re)transmission"},
    {NULL},
};

static PyGetSetDef Segment_getset[] = {
    {"pieces", (getter)Segment_get_pieces, NULL, "(stream_id, stream_offset, data, end) carried", NULL},
    {"retransmitted", (getter)Segment_get_retransmitted, NULL, NULL, NULL},
    {"mark", (getter)Segment_get_mark, NULL, "scoreboard: 0 in flight, 1 SACKed, 2 lost, 3 lost and resent", NULL},
    {NULL},
};

static PyTypeObject SegmentType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "simulator.net._tcp.TcpSegment",
    .tp_doc = "A data segment (tcp.TcpSegment's C twin).",
    .tp_basicsize = sizeof(SegmentObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = Segment_new_py,
    .tp_dealloc = (destructor)Segment_dealloc,
    .tp_repr = (reprfunc)Segment_repr,
    .tp_members = Segment_members,
    .tp_getset = Segment_getset,
};

typedef struct {
    PyObject_HEAD
    long long ack;
    double echo_s;           /* the timestamp echo (RFC 7323 TSecr) */
    int nsack;               /* SACK blocks (RFC 2018), most recently changed first */
    long long sack[MAX_SACK_BLOCKS][2];
} AckObject;

static PyTypeObject AckType;

/* Up to MAX_SACK_BLOCKS (left, right) pairs from a sequence into out; their count, or -1. */
static int
parse_sack(PyObject *seq, long long out[][2])
{
    PyObject *fast = PySequence_Fast(seq, "sack must be a sequence of (left, right) pairs");
    if (fast == NULL)
        return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
    if (n > MAX_SACK_BLOCKS) {
        Py_DECREF(fast);
        PyErr_SetString(PyExc_ValueError, "at most 4 SACK blocks (RFC 2018 section 3)");
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(fast, i), "LL", &out[i][0], &out[i][1])) {
            Py_DECREF(fast);
            return -1;
        }
    }
    Py_DECREF(fast);
    return (int)n;
}

static PyObject *
Ack_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    long long ack;
    double echo_s = 0.0;
    PyObject *sack = NULL;
    long long blocks[MAX_SACK_BLOCKS][2];
    int nsack = 0;
    if (!PyArg_ParseTuple(args, "L|dO:TcpAck", &ack, &echo_s, &sack))
        return NULL;
    if (sack != NULL && (nsack = parse_sack(sack, blocks)) < 0)
        return NULL;
    AckObject *a = (AckObject *)type->tp_alloc(type, 0);
    if (a != NULL) {
        a->ack = ack;
        a->echo_s = echo_s;
        a->nsack = nsack;
        memcpy(a->sack, blocks, (size_t)nsack * sizeof(blocks[0]));
    }
    return (PyObject *)a;
}

static PyObject *
Ack_get_sack(AckObject *a, void *c)
{
    PyObject *t = PyTuple_New(a->nsack);
    if (t == NULL)
        return NULL;
    for (int i = 0; i < a->nsack; i++) {
        PyObject *pair = Py_BuildValue("(LL)", a->sack[i][0], a->sack[i][1]);
        if (pair == NULL) {
            Py_DECREF(t);
            return NULL;
        }
        PyTuple_SET_ITEM(t, i, pair);
    }
    return t;
}

static PyObject *
Ack_repr(AckObject *a)
{
    if (a->nsack == 0)
        return PyUnicode_FromFormat("TcpAck(%lld)", a->ack);
    PyObject *sack = Ack_get_sack(a, NULL);
    if (sack == NULL)
        return NULL;
    PyObject *r = PyUnicode_FromFormat("TcpAck(%lld, sack=%R)", a->ack, sack);
    Py_DECREF(sack);
    return r;
}

static PyGetSetDef Ack_getset[] = {
    {"sack", (getter)Ack_get_sack, NULL, "SACK blocks (left, right), most recently changed first", NULL},
    {NULL},
};

static PyMemberDef Ack_members[] = {
    {"ack", T_LONGLONG, offsetof(AckObject, ack), READONLY, "every sequence number below it was received"},
    {"echo_s", T_DOUBLE, offsetof(AckObject, echo_s), READONLY, "the timestamp echo: TS.Recent's send time"},
    {NULL},
};

static PyTypeObject AckType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "simulator.net._tcp.TcpAck",
    .tp_doc = "A pure cumulative ACK (tcp.TcpAck's C twin).",
    .tp_basicsize = sizeof(AckObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = Ack_new,
    .tp_repr = (reprfunc)Ack_repr,
    .tp_members = Ack_members,
    .tp_getset = Ack_getset,
};

typedef struct {
    PyObject_HEAD
    PyObject *kind;          /* "SYN", "SYN-ACK" or "ACK" */
    int code;
} ControlObject;

static PyTypeObject ControlType;

static int
control_code(PyObject *kind)
{
    if (PyUnicode_Compare(kind, str_syn) == 0)
        return CTL_SYN;
    if (PyUnicode_Compare(kind, str_syn_ack) == 0)
        return CTL_SYN_ACK;
    if (PyUnicode_Compare(kind, str_ack_kind) == 0)
        return CTL_ACK;
    return -1;
}

static PyObject *
control_new(int code)
{
    ControlObject *c = PyObject_New(ControlObject, &ControlType);
    if (c == NULL)
        return NULL;
    c->kind = Py_NewRef(code == CTL_SYN ? str_syn : code == CTL_SYN_ACK ? str_syn_ack : str_ack_kind);
    c->code = code;
    return (PyObject *)c;
}

static PyObject *
Control_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    PyObject *kind;
    if (!PyArg_ParseTuple(args, "U:TcpControl", &kind))
        return NULL;
    ControlObject *c = (ControlObject *)type->tp_alloc(type, 0);
    if (c == NULL)
        return NULL;
    c->kind = Py_NewRef(kind);
    c->code = control_code(kind);
    return (PyObject *)c;
}

static void
Control_dealloc(ControlObject *c)
{
    Py_XDECREF(c->kind);
    Py_TYPE(c)->tp_free((PyObject *)c);
}

static PyObject *
Control_repr(ControlObject *c)
{
    return PyUnicode_FromFormat("TcpControl(%U)", c->kind);
}

static PyMemberDef Control_members[] = {
    {"kind", T_OBJECT, offsetof(ControlObject, kind), READONLY, "SYN, SYN-ACK or ACK"},
    {NULL},
};

static PyTypeObject ControlType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "simulator.net._tcp.TcpControl",
    .tp_doc = "A handshake packet (tcp.TcpControl's C twin).",
    .tp_basicsize = sizeof(ControlObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = Control_new,
    .tp_dealloc = (destructor)Control_dealloc,
    .tp_repr = (reprfunc)Control_repr,
    .tp_members = Control_members,
};

/* -- TcpEndpoint and its TimerSlots ------------------------------------------------------ */

typedef struct EndpointObject EndpointObject;

typedef struct {
    PyObject_HEAD
    EndpointObject *endpoint;
    PyObject *owner, *sim, *push, *fire;
    double when[2];             /* SLOT_RTO, SLOT_DELACK */
    char armed[2];
    double scheduled;
    char has_scheduled;
    long long gen;
} TimersObject;

static PyTypeObject TimersType;

typedef struct {
    Piece *buf;
    Py_ssize_t head, size, cap;
} PieceRing;

typedef struct {
    SegmentObject **buf;
    Py_ssize_t head, size, cap;
} SegRing;

/* What has been written on a stream: its next offset and whether it ended.  Stream ids
 * are dense per kind (RFC 9000 section 2.1: kind = id & 3, index = id >> 2), so a C array
 * per kind holds them; other labels (negative, huge) go to a dict and a set. */
typedef struct {
    long long offset;
    char ended;
} StreamSend;

#define DENSE_STREAMS (1 << 20)

struct EndpointObject {
    PyObject_HEAD
    PyObject *sim, *push, *conn, *name, *peer, *out_link, *config;
    TimersObject *timers;
    CcObject *cc;
    RttObject *rtt;
    PyObject *on_data, *on_stream_acked, *on_received, *on_established, *cwnd_log;
    PyObject *deliver_segment, *deliver_ack, *flush;
    char is_client, established, flush_scheduled, in_recovery, handshake_retransmitted;
    long long mss, header_bytes, ack_every, packet_threshold;
    double max_ack_delay_s;
    long long next_stream_index[2];
    StreamSend *streams[4];                 /* per kind, by index */
    Py_ssize_t nstreams[4];
    PyObject *send_offset, *ended;          /* other labels: dict stream -> offset written, set of ended */
    long long snd_una, snd_nxt, snd_max, pending_len;
    PieceRing pending;                      /* writes not yet cut into segments */
    SegRing unacked;                        /* sent, not cumulatively acked, in seq order */
    long long dupacks, recover, partial_acks, rto_backoff, rto_seq;
    double inflation, handshake_sent_s;
    /* F-RTO (RFC 5682) and the undo of a spurious timeout's reduction */
    char frto, undo_marker, prior_cwnd_int, prior_ssthresh_int, timestamps;
    /* SACK (RFC 2018), its recovery (RFC 6675, RFC 6937 PRR) and RACK's loss marks (RFC 8985) */
    char sack;
    int sack_report;                        /* blocks an ACK carries: 3 beside timestamps, else 4 */
    long long sacked_bytes, lost_hint, rack_end, pipe, prr_delivered, prr_out, recover_fs;
    double rack_xmit_s;
    long long (*sack_blocks)[2];            /* receiver: held blocks, most recently changed first */
    Py_ssize_t nblocks, blocks_cap;
    long long high_seq, frto_held, last_ack_sent;
    double prior_cwnd, prior_ssthresh, retrans_stamp_s, ts_recent_s;
    long long rcv_nxt, ooo_bytes, max_ooo_bytes, segments_since_ack;
    SegmentObject **ooo;                    /* out-of-order segments, sorted by seq */
    Py_ssize_t ooo_size, ooo_cap;
    long long segments_sent, segments_retransmitted, rtos, spurious_rtos, undone_reductions,
        fast_retransmits, bytes_sent, bytes_delivered, acks_sent;
    /* Linux's window in segments (tcp_window.py; config.cwnd_in_packets) and TCP_NODELAY */
    char packets, nodelay, is_cwnd_limited;
    long long max_packets_out, cwnd_usage_seq;
    /* Linux CUBIC's HyStart (cc.LinuxHyStart; config.hystart with CUBIC) */
    char hystart, hs_found;
    double hs_delay_min, hs_round_start, hs_last_ack, hs_curr_rtt;
    long long hs_end_seq, hs_sample_cnt;
};

static PyTypeObject EndpointType;

/* ring buffers */
static int
piece_ring_push(PieceRing *r, const Piece *p)
{
    if (r->size == r->cap) {
        Py_ssize_t cap = r->cap ? r->cap * 2 : 16;
        Piece *grown = PyMem_Malloc((size_t)cap * sizeof(Piece));
        if (grown == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        for (Py_ssize_t i = 0; i < r->size; i++)
            grown[i] = r->buf[(r->head + i) % r->cap];
        PyMem_Free(r->buf);
        r->buf = grown;
        r->cap = cap;
        r->head = 0;
    }
    r->buf[(r->head + r->size) % r->cap] = *p;
    r->size++;
    return 0;
}

static inline Piece *
piece_ring_front(PieceRing *r)
{
    return &r->buf[r->head];
}

static inline void
piece_ring_pop(PieceRing *r)          /* the caller took over the front's reference */
{
    r->head = (r->head + 1) % r->cap;
    r->size--;
}

static int
seg_ring_push(SegRing *r, SegmentObject *s)
{
    if (r->size == r->cap) {
        Py_ssize_t cap = r->cap ? r->cap * 2 : 16;
        SegmentObject **grown = PyMem_Malloc((size_t)cap * sizeof(SegmentObject *));
        if (grown == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        for (Py_ssize_t i = 0; i < r->size; i++)
            grown[i] = r->buf[(r->head + i) % r->cap];
        PyMem_Free(r->buf);
        r->buf = grown;
        r->cap = cap;
        r->head = 0;
    }
    r->buf[(r->head + r->size) % r->cap] = s;
    r->size++;
    return 0;
}

static inline SegmentObject *
seg_ring_at(SegRing *r, Py_ssize_t i)
{
    return r->buf[(r->head + i) % r->cap];
}

/* The unacked segment starting at seq (by_seq.get(seq) in Python), borrowed; NULL if none. */
static SegmentObject *
find_seg(EndpointObject *e, long long seq)
{
    Py_ssize_t lo = 0, hi = e->unacked.size;
    while (lo < hi) {
        Py_ssize_t mid = (lo + hi) / 2;
        SegmentObject *s = seg_ring_at(&e->unacked, mid);
        if (s->seq == seq)
            return s;
        if (s->seq < seq)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

/* The unacked segment starting at seq (by_seq[seq] in Python), borrowed; KeyError if none. */
static SegmentObject *
by_seq(EndpointObject *e, long long seq)
{
    SegmentObject *found = find_seg(e, seq);
    if (found != NULL)
        return found;
    PyObject *key = PyLong_FromLongLong(seq);
    if (key != NULL) {
        PyErr_SetObject(PyExc_KeyError, key);
        Py_DECREF(key);
    }
    return NULL;
}

/* Index of seq in the out-of-order buffer, or -(insertion point) - 1. */
static Py_ssize_t
ooo_find(EndpointObject *e, long long seq)
{
    Py_ssize_t lo = 0, hi = e->ooo_size;
    while (lo < hi) {
        Py_ssize_t mid = (lo + hi) / 2;
        long long s = e->ooo[mid]->seq;
        if (s == seq)
            return mid;
        if (s < seq)
            lo = mid + 1;
        else
            hi = mid;
    }
    return -lo - 1;
}

/* -- timers -- */

static int timers_schedule(TimersObject *t, double when);

/* TimerSlots.set(slot, when_s, callback) at time now. */
static int
timers_set(TimersObject *t, int slot, double when, double now)
{
    if (when < now)
        when = now;
    t->when[slot] = when;
    t->armed[slot] = 1;
    if (!t->has_scheduled || when < t->scheduled)
        return timers_schedule(t, when);
    return 0;
}

static inline void
timers_cancel(TimersObject *t, int slot)
{
    t->armed[slot] = 0;      /* lazy: the heap entry stays, as in TimerSlots */
}

static int
timers_schedule(TimersObject *t, double when)
{
    t->gen += 1;
    t->scheduled = when;
    t->has_scheduled = 1;
    PyObject *gen = PyLong_FromLongLong(t->gen);
    if (gen == NULL)
        return -1;
    PyObject *args = PyTuple_Pack(1, gen);
    Py_DECREF(gen);
    if (args == NULL)
        return -1;
    int rc = push_at(t->push, when, t->fire, args);
    Py_DECREF(args);
    return rc;
}

static int endpoint_on_rto(EndpointObject *e, double now);
static int endpoint_send_ack(EndpointObject *e, double now);

static int
timers_run_slot(TimersObject *t, int slot, double now)
{
    EndpointObject *e = t->endpoint;
    if (e == NULL)
        return 0;
    return slot == SLOT_RTO ? endpoint_on_rto(e, now) : endpoint_send_ack(e, now);
}

static PyObject *
Timers_fire(TimersObject *t, PyObject *gen_obj)
{
    long long gen = PyLong_AsLongLong(gen_obj);
    if (gen == -1 && PyErr_Occurred())
        return NULL;
    if (gen != t->gen)
        Py_RETURN_NONE;               /* superseded by an earlier expiry */
    t->has_scheduled = 0;
    double now;
    PyObject *now_obj = get_now(t->sim, &now);
    if (now_obj == NULL)
        return NULL;
    Py_DECREF(now_obj);
    /* The slots due now, earliest first; equal times in name order ("delack" < "rto"). */
    int order[2], n = 0;
    double due[2];
    if (t->armed[SLOT_RTO] && t->when[SLOT_RTO] <= now) {
        due[n] = t->when[SLOT_RTO];
        order[n++] = SLOT_RTO;
    }
    if (t->armed[SLOT_DELACK] && t->when[SLOT_DELACK] <= now) {
        due[n] = t->when[SLOT_DELACK];
        order[n++] = SLOT_DELACK;
    }
    if (n == 2 && due[1] <= due[0]) {     /* (when, "delack") sorts before (when, "rto") */
        double w = due[0];
        due[0] = due[1];
        due[1] = w;
        order[0] = SLOT_DELACK;
        order[1] = SLOT_RTO;
    }
    for (int i = 0; i < n; i++) {
        int slot = order[i];
        if (!t->armed[slot] || t->when[slot] != due[i])
            continue;                 /* cancelled or re-armed by an earlier callback */
        t->armed[slot] = 0;
        if (timers_run_slot(t, slot, now) < 0)
            return NULL;
    }
    if (!t->has_scheduled) {
        int any = 0;
        double later = 0.0;
        for (int slot = 0; slot < 2; slot++) {
            if (t->armed[slot] && (!any || t->when[slot] < later)) {
                later = t->when[slot];
                any = 1;
            }
        }
        if (any && timers_schedule(t, later) < 0)
            return NULL;
    }
    Py_RETURN_NONE;
}

static int
slot_index(PyObject *name)
{
    if (PyUnicode_Check(name)) {
        if (PyUnicode_CompareWithASCIIString(name, "rto") == 0)
            return SLOT_RTO;
        if (PyUnicode_CompareWithASCIIString(name, "delack") == 0)
            return SLOT_DELACK;
    }
    PyErr_Format(PyExc_KeyError, "no timer slot %R", name);
    return -1;
}

static PyObject *
Timers_expiry(TimersObject *t, PyObject *name)
{
    int slot = slot_index(name);
    if (slot < 0)
        return NULL;
    if (!t->armed[slot])
        Py_RETURN_NONE;
    return PyFloat_FromDouble(t->when[slot]);
}

static PyObject *
Timers_cancel(TimersObject *t, PyObject *name)
{
    int slot = slot_index(name);
    if (slot < 0)
        return NULL;
    timers_cancel(t, slot);
    Py_RETURN_NONE;
}

static PyObject *
Timers_armed(TimersObject *t, PyObject *unused)
{
    PyObject *d = PyDict_New();
    if (d == NULL)
        return NULL;
    const char *names[2] = {"rto", "delack"};
    for (int slot = 0; slot < 2; slot++) {
        if (!t->armed[slot])
            continue;
        PyObject *v = PyFloat_FromDouble(t->when[slot]);
        if (v == NULL || PyDict_SetItemString(d, names[slot], v) < 0) {
            Py_XDECREF(v);
            Py_DECREF(d);
            return NULL;
        }
        Py_DECREF(v);
    }
    return d;
}

static int
Timers_traverse(TimersObject *t, visitproc visit, void *arg)
{
    Py_VISIT((PyObject *)t->endpoint);
    Py_VISIT(t->owner);
    Py_VISIT(t->sim);
    Py_VISIT(t->push);
    Py_VISIT(t->fire);
    return 0;
}

static int
Timers_clear(TimersObject *t)
{
    Py_CLEAR(t->endpoint);
    Py_CLEAR(t->owner);
    Py_CLEAR(t->sim);
    Py_CLEAR(t->push);
    Py_CLEAR(t->fire);
    return 0;
}

static void
Timers_dealloc(TimersObject *t)
{
    PyObject_GC_UnTrack(t);
    Timers_clear(t);
    Py_TYPE(t)->tp_free((PyObject *)t);
}

static PyMethodDef Timers_methods[] = {
    {"_fire", (PyCFunction)Timers_fire, METH_O, "_fire(gen): the heap entry of generation gen popped."},
    {"expiry", (PyCFunction)Timers_expiry, METH_O, "expiry(slot) -> the time it holds, or None."},
    {"cancel", (PyCFunction)Timers_cancel, METH_O, "cancel(slot): empty the slot."},
    {"armed", (PyCFunction)Timers_armed, METH_NOARGS, "armed() -> {slot: expiry} of the armed slots."},
    {NULL},
};

static PyMemberDef Timers_members[] = {
    {"owner", T_OBJECT, offsetof(TimersObject, owner), READONLY, NULL},
    {"sim", T_OBJECT, offsetof(TimersObject, sim), READONLY, NULL},
    {NULL},
};

static PyTypeObject TimersType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "simulator.net._tcp.TimerSlots",
    .tp_doc = "A TCP endpoint's rto and delack timer slots (engine.TimerSlots's C twin, for TCP).",
    .tp_basicsize = sizeof(TimersObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_dealloc = (destructor)Timers_dealloc,
    .tp_traverse = (traverseproc)Timers_traverse,
    .tp_clear = (inquiry)Timers_clear,
    .tp_methods = Timers_methods,
    .tp_members = Timers_members,
};

/* -- the endpoint: sender -- */

static inline double
endpoint_rto(EndpointObject *e)
{
    return py_min(rtt_rto(e->rtt) * (double)e->rto_backoff, e->rtt->max_rto_s);
}

/* cwnd_bytes: max(cc.cwnd_bytes + inflation, mss); an int only when mss is larger. */
static PyObject *
endpoint_cwnd_obj(EndpointObject *e)
{
    double w = e->cc->cwnd + e->inflation;
    if ((double)e->mss > w)
        return PyLong_FromLongLong(e->mss);
    return PyFloat_FromDouble(w);
}

static int
log_cwnd(EndpointObject *e, PyObject *now_obj)
{
    if (e->cwnd_log == NULL || e->cwnd_log == Py_None)
        return 0;
    PyObject *w = endpoint_cwnd_obj(e);
    if (w == NULL)
        return -1;
    PyObject *entry = PyTuple_Pack(2, now_obj, w);
    Py_DECREF(w);
    if (entry == NULL)
        return -1;
    int rc = PyList_Append(e->cwnd_log, entry);
    Py_DECREF(entry);
    return rc;
}

static int
endpoint_transmit(EndpointObject *e, SegmentObject *seg, int retransmission, double now)
{
    if (e->packets && e->timers->armed[SLOT_DELACK] && endpoint_send_ack(e, now) < 0)
        return -1;                            /* tcp_window: the ACK rides on this segment */
    seg->sent_s = now;
    if (retransmission) {
        seg->retransmitted = 1;               /* Karn: never an RTT sample from it */
        e->segments_retransmitted += 1;
    }
    e->segments_sent += 1;
    e->bytes_sent += seg->payload_bytes;
    PacketObject *packet = packet_new(seg->payload_bytes + e->header_bytes, (PyObject *)seg);
    if (packet == NULL)
        return -1;
    int rc = any_link_send(e->out_link, (PyObject *)packet, e->deliver_segment, &now);
    Py_DECREF(packet);
    if (rc < 0)
        return -1;
    if (!e->timers->armed[SLOT_RTO])          /* RFC 6298 (5.1) */
        return timers_set(e->timers, SLOT_RTO, now + endpoint_rto(e), now);
    return 0;
}

/* Cut up to one MSS off the pending writes (new reference). */
static SegmentObject *
new_segment(EndpointObject *e, long long seq)
{
    long long room = e->mss;
    PieceRing *pending = &e->pending;
    /* count the pieces first: at most one per pending entry until the room is used */
    Py_ssize_t count = 0;
    long long r = room;
    for (Py_ssize_t i = 0; i < pending->size && r > 0; i++) {
        Piece *p = &pending->buf[(pending->head + i) % pending->cap];
        count++;
        r -= p->len == 0 ? 1 : (p->len <= r ? p->len : r);
    }
    SegmentObject *seg = segment_new(seq, count);
    if (seg == NULL)
        return NULL;
    long long length = 0, payload = 0;
    while (pending->size > 0 && room > 0) {
        Piece *entry = piece_ring_front(pending);
        Piece *out = &seg->pieces[seg->npieces++];
        Py_ssize_t n = entry->len;
        if (n == 0) {                         /* empty end mark: one sequence number */
            *out = *entry;
            piece_ring_pop(pending);
            room -= 1;
            length += 1;
        }
        else if (n <= room) {
            *out = *entry;
            piece_ring_pop(pending);
            room -= n;
            length += n;
            payload += n;
        }
        else {
            out->data = Py_NewRef(entry->data);
            out->off = entry->off;
            out->len = (Py_ssize_t)room;
            out->stream_id = entry->stream_id;
            out->offset = entry->offset;
            out->end = 0;
            entry->offset += room;
            entry->off += (Py_ssize_t)room;
            entry->len -= (Py_ssize_t)room;
            length += room;
            payload += room;
            room = 0;
        }
    }
    e->pending_len -= length;
    seg->length = length;
    seg->payload_bytes = payload;
    return seg;
}

/* Cut the next segment of new data at nxt (= SND.NXT = SND.MAX) and send it
 * (tcp_endpoint._send_new_segment); the segment, borrowed from the unacked ring, or NULL. */
static SegmentObject *
send_new_segment(EndpointObject *e, long long nxt, double now)
{
    long long mss = e->mss, pending_len = e->pending_len;
    Piece *entry = piece_ring_front(&e->pending);
    long long n = entry->len;
    SegmentObject *seg;
    if (n == mss || (0 < n && n == pending_len && pending_len < mss)) {
        /* one whole write fills the segment, or is all there is */
        seg = segment_new(nxt, 1);
        if (seg == NULL)
            return NULL;
        seg->pieces[0] = *entry;
        seg->npieces = 1;
        piece_ring_pop(&e->pending);
        e->pending_len = pending_len - n;
        seg->length = seg->payload_bytes = n;
    }
    else {
        seg = new_segment(e, nxt);
        if (seg == NULL)
            return NULL;
    }
    if (seg_ring_push(&e->unacked, seg) < 0) {
        Py_DECREF(seg);
        return NULL;
    }
    e->snd_nxt = e->snd_max = nxt + seg->length;
    Py_INCREF(seg);
    int rc = endpoint_transmit(e, seg, 0, now);
    Py_DECREF(seg);
    return rc < 0 ? NULL : seg;
}

/* Linux tcp_cwnd_validate (tcp_window.LinuxWindow._cwnd_validate): per window of data,
 * whether the window held the sender back, else the most segments it had in flight. */
static void
cwnd_validate(EndpointObject *e, int is_cwnd_limited)
{
    long long packets_out = e->unacked.size;
    if (e->snd_una >= e->cwnd_usage_seq || is_cwnd_limited
        || (!e->is_cwnd_limited && packets_out > e->max_packets_out)) {
        e->is_cwnd_limited = (char)is_cwnd_limited;
        e->max_packets_out = packets_out;
        e->cwnd_usage_seq = e->snd_nxt;
    }
}

/* Linux tcp_is_cwnd_limited (tcp_window.LinuxWindow._may_grow): may an ACK grow the window
 * (RFC 7661 section 4.3: only while it limited the sender). */
static int
may_grow(EndpointObject *e)
{
    if (e->is_cwnd_limited)
        return 1;
    if (e->cc->cwnd < e->cc->ssthresh)
        return e->cc->cwnd < (double)(2 * e->max_packets_out * e->mss);
    return 0;
}

/* RFC 6675 step (C) with NextSeg() rules 1 and 2 (tcp_endpoint._send_recovery): the first
 * segment marked lost and not resent since, else new data, while pipe leaves room in cwnd. */
static int
send_recovery(EndpointObject *e, double now)
{
    double cwnd = e->cc->cwnd;
    for (;;) {
        long long seq = e->lost_hint > e->snd_una ? e->lost_hint : e->snd_una;
        long long snd_max = e->snd_max;
        SegmentObject *seg = NULL;
        while (seq < snd_max) {
            SegmentObject *candidate = by_seq(e, seq);
            if (candidate == NULL)
                return -1;
            if (candidate->mark == MARK_LOST) {
                seg = candidate;
                break;
            }
            seq += candidate->length;
        }
        e->lost_hint = seq;
        if (seg != NULL) {
            if ((double)(e->pipe + seg->length) > cwnd)
                break;
            seg->mark = MARK_RESENT;
            Py_INCREF(seg);
            int rc = endpoint_transmit(e, seg, 1, now);
            Py_DECREF(seg);
            if (rc < 0)
                return -1;
        }
        else if (e->pending_len && e->established) {
            long long pending_len = e->pending_len;
            if ((double)(e->pipe + (e->mss < pending_len ? e->mss : pending_len)) > cwnd)
                break;
            seg = send_new_segment(e, e->snd_nxt, now);
            if (seg == NULL)
                return -1;
        }
        else
            break;
        e->pipe += seg->length;
        e->prr_out += seg->length;
    }
    return 0;
}

/* Send what the congestion window allows: go-back-N resends first, then new data. */
/* Send what the window allows (has_window: the given one, else the congestion window). */
static int
send_more_window(EndpointObject *e, double now, int has_window, double window)
{
    if (e->in_recovery && e->sack)
        return send_recovery(e, now);
    if (!e->established || (!e->pending_len && e->snd_nxt >= e->snd_max))
        return 0;
    long long mss = e->mss;
    if (!has_window) {
        window = e->cc->cwnd + e->inflation;
        if (0 < e->dupacks && e->dupacks < e->packet_threshold && !e->in_recovery)
            window += (double)(e->dupacks * mss);   /* RFC 3042 limited transmit */
        if (window < (double)mss)
            window = (double)mss;
    }
    long long snd_una = e->snd_una;
    int packets = e->packets, limited = 0;
    for (;;) {
        long long nxt = e->snd_nxt;
        long long flight = nxt - snd_una;
        if (nxt < e->snd_max) {               /* resending after a timeout */
            SegmentObject *seg = by_seq(e, nxt);
            if (seg == NULL)
                return -1;
            if ((double)(flight + seg->length) > window) {
                limited = 1;
                break;
            }
            e->snd_nxt = nxt + seg->length;
            Py_INCREF(seg);
            int rc = endpoint_transmit(e, seg, 1, now);
            Py_DECREF(seg);
            if (rc < 0)
                return -1;
        }
        else if (e->pending_len) {
            long long pending_len = e->pending_len;
            /* with packets (tcp_window) a segment takes one of the window's, whatever its size */
            if ((double)(packets ? (e->unacked.size + 1) * mss : flight + (mss < pending_len ? mss : pending_len))
                > window) {
                limited = 1;
                break;
            }
            if (send_new_segment(e, nxt, now) == NULL)
                return -1;
        }
        else
            break;
    }
    if (packets)
        cwnd_validate(e, limited || (double)((e->unacked.size + 1) * mss) > window);
    return 0;
}

static inline int
send_more(EndpointObject *e, double now)
{
    return send_more_window(e, now, 0, 0.0);
}

typedef struct {
    long long stream_id, offset;
} Acked;

/* The timeout was spurious: restore the window it cut (tcp_endpoint._undo_timeout). */
static void
undo_timeout(EndpointObject *e)
{
    e->spurious_rtos += 1;
    e->frto = 0;
    e->high_seq = -1;
    if (e->undo_marker) {
        CcObject *cc = e->cc;
        if (e->prior_cwnd > cc->cwnd) {
            cc->cwnd = e->prior_cwnd;
            cc->cwnd_int = e->prior_cwnd_int;
        }
        if (e->prior_ssthresh > cc->ssthresh) {
            cc->ssthresh = e->prior_ssthresh;
            cc->ssthresh_int = e->prior_ssthresh_int;
        }
        e->undo_marker = 0;
        e->undone_reductions += 1;
    }
    e->recover = e->snd_max;                /* RFC 5682 step 3b */
    e->snd_nxt = e->snd_max;
}

static inline void
save_undo(EndpointObject *e)
{
    e->prior_cwnd = e->cc->cwnd;
    e->prior_cwnd_int = e->cc->cwnd_int;
    e->prior_ssthresh = e->cc->ssthresh;
    e->prior_ssthresh_int = e->cc->ssthresh_int;
    e->undo_marker = 1;
}

/* -- the SACK scoreboard (tcp_endpoint: _rack_note ... _prr_ack) -- */

/* RFC 8985 section 6.2 step 2: the latest sent segment delivered; a resent one whose RTT is
 * under the minimum may answer its original and is skipped. */
static inline void
rack_note(EndpointObject *e, SegmentObject *seg, double now)
{
    double sent = seg->sent_s;
    if (seg->retransmitted && now - sent < e->rtt->min_rtt_s)
        return;
    long long end = seg->seq + seg->length;
    if (sent > e->rack_xmit_s || (sent == e->rack_xmit_s && end > e->rack_end)) {
        e->rack_xmit_s = sent;
        e->rack_end = end;
    }
}

/* Mark the unacked segments the blocks cover (RFC 6675 Update()); the bytes newly SACKed. */
static long long
take_sack(EndpointObject *e, long long blocks[][2], int nblocks, double now)
{
    long long newly = 0;
    for (int i = 0; i < nblocks; i++) {
        long long start = blocks[i][0], end = blocks[i][1];
        long long seq = start > e->snd_una ? start : e->snd_una;
        while (seq < end) {
            SegmentObject *seg = find_seg(e, seq);
            if (seg == NULL || seq + seg->length > end)
                break;
            if (seg->mark != MARK_SACKED) {
                seg->mark = MARK_SACKED;
                newly += seg->length;
                rack_note(e, seg, now);
            }
            seq += seg->length;
        }
    }
    e->sacked_bytes += newly;
    return newly;
}

/* RFC 6675 IsLost() in segments: the seq below which an unSACKed segment has DupThresh
 * SACKed segments above it, or -1. */
static long long
lost_boundary(EndpointObject *e)
{
    long long count = 0;
    for (Py_ssize_t i = e->unacked.size - 1; i >= 0; i--) {
        SegmentObject *seg = seg_ring_at(&e->unacked, i);
        if (seg->mark == MARK_SACKED) {
            count++;
            if (count >= e->packet_threshold)
                return seg->seq;
        }
    }
    return -1;
}

/* RFC 8985 section 6.2 outside a recovery, at an ACK (tcp_endpoint._rack_head_lost): the first
 * unacked segment was sent at least min RTT / 4 before the latest sent one known delivered. */
static int
rack_head_lost(EndpointObject *e)
{
    SegmentObject *head = by_seq(e, e->snd_una);
    if (head == NULL)
        return -1;
    return head->mark != MARK_SACKED && e->rack_xmit_s - head->sent_s >= e->rtt->min_rtt_s / 4;
}

/* Loss marks (DupThresh and RACK with a zero reordering window), then RFC 6675 SetPipe(). */
static long long
mark_lost_and_pipe(EndpointObject *e, int dupthresh)
{
    long long boundary = dupthresh ? lost_boundary(e) : -1;
    double rack_s = e->rack_xmit_s;
    long long rack_end = e->rack_end, hint = e->lost_hint, pipe = 0;
    for (Py_ssize_t i = 0; i < e->unacked.size; i++) {
        SegmentObject *seg = seg_ring_at(&e->unacked, i);
        char mark = seg->mark;
        if (mark == MARK_SACKED || mark == MARK_LOST)
            continue;
        double sent = seg->sent_s;
        if ((mark == 0 && seg->seq < boundary) || rack_s > sent
            || (rack_s == sent && rack_end > seg->seq + seg->length)) {
            seg->mark = MARK_LOST;
            if (seg->seq < hint)
                hint = seg->seq;
        }
        else
            pipe += seg->length;
    }
    e->lost_hint = hint;
    return pipe;
}

/* RFC 6675 section 5 (4.1-4.3) with RFC 6937's initialisation. */
static int
enter_sack_recovery(EndpointObject *e, double now)
{
    e->in_recovery = 1;
    e->partial_acks = 0;
    e->recover = e->snd_max;
    save_undo(e);
    e->retrans_stamp_s = now;
    cc_on_congestion_event(e->cc);
    e->fast_retransmits += 1;
    e->prr_delivered = e->prr_out = 0;
    e->recover_fs = e->snd_nxt - e->snd_una;
    SegmentObject *head = by_seq(e, e->snd_una);
    if (head == NULL)
        return -1;
    if (head->mark == 0)
        head->mark = MARK_LOST;
    e->lost_hint = e->snd_una;
    return 0;
}

/* RFC 6937 section 3: cwnd = ssthresh; lost marks left on data sent in the recovery dropped. */
static void
leave_sack_recovery(EndpointObject *e)
{
    e->cc->cwnd = e->cc->ssthresh;
    e->cc->cwnd_int = e->cc->ssthresh_int;
    for (Py_ssize_t i = 0; i < e->unacked.size; i++) {
        SegmentObject *seg = seg_ring_at(&e->unacked, i);
        if (seg->mark != MARK_SACKED)
            seg->mark = 0;
    }
}

/* An ACK in a SACK recovery: marks, pipe, then RFC 6937 PRR-SSRB: cwnd = pipe + sndcnt. */
static int
prr_ack(EndpointObject *e, long long delivered, int dupthresh, int entering)
{
    e->prr_delivered += delivered;
    long long pipe = mark_lost_and_pipe(e, dupthresh);
    e->pipe = pipe;
    double ssthresh = e->cc->ssthresh;
    double sndcnt;
    if ((double)pipe > ssthresh)
        sndcnt = (double)((long long)ceil((double)e->prr_delivered * ssthresh / (double)e->recover_fs / (double)e->mss)
                          * e->mss - e->prr_out);   /* whole segments, as Linux counts PRR in packets */
    else {
        long long a = e->prr_delivered - e->prr_out;
        long long limit = (a >= delivered ? a : delivered) + e->mss;
        double room = ssthresh - (double)pipe;
        sndcnt = (double)limit < room ? (double)limit : room;
    }
    if (entering) {
        SegmentObject *head = by_seq(e, e->snd_una);
        if (head == NULL)
            return -1;
        if (sndcnt < (double)head->length)
            sndcnt = (double)head->length;
    }
    else if (sndcnt < 0)
        sndcnt = 0;
    e->cc->cwnd = (double)pipe + sndcnt;
    e->cc->cwnd_int = 0;
    return 0;
}

/* Linux CUBIC's HyStart, the twin of cc.LinuxHyStart (which says what it tests and why) */
#define HYSTART_LOW_WINDOW 16
#define HYSTART_MIN_SAMPLES 8
#define HYSTART_ACK_DELTA_S 0.002
#define HYSTART_ACK_DELAY_S 0.001
#define HYSTART_DELAY_MIN_S 0.004
#define HYSTART_DELAY_MAX_S 0.016

static void
hystart_round(EndpointObject *e, double now, long long snd_nxt)
{
    e->hs_round_start = e->hs_last_ack = now;
    e->hs_end_seq = snd_nxt;
    e->hs_curr_rtt = INFINITY;
    e->hs_sample_cnt = 0;
}

static void
hystart_restart(EndpointObject *e, double now, long long snd_nxt)
{
    e->hs_found = 0;
    e->hs_delay_min = 0.0;
    hystart_round(e, now, snd_nxt);
}

static int
hystart_sample(EndpointObject *e, double now, double rtt_s, long long snd_una)
{
    CcObject *c = e->cc;
    if (c->has_epoch && now - c->epoch_start < 1.0)
        return 0;
    if (e->hs_delay_min == 0.0 || e->hs_delay_min > rtt_s)
        e->hs_delay_min = rtt_s;
    if (e->hs_found || !(c->cwnd < c->ssthresh) || c->cwnd / (double)e->mss < HYSTART_LOW_WINDOW)
        return 0;
    if (snd_una > e->hs_end_seq)
        hystart_round(e, now, e->snd_max);
    if (now - e->hs_last_ack <= HYSTART_ACK_DELTA_S) {
        e->hs_last_ack = now;
        if (now - e->hs_round_start > (e->hs_delay_min + HYSTART_ACK_DELAY_S) / 2)
            e->hs_found = 1;
    }
    if (e->hs_curr_rtt > rtt_s)
        e->hs_curr_rtt = rtt_s;
    if (e->hs_sample_cnt < HYSTART_MIN_SAMPLES)
        e->hs_sample_cnt++;
    else if (e->hs_curr_rtt > e->hs_delay_min
             + py_min(py_max(e->hs_delay_min / 8, HYSTART_DELAY_MIN_S), HYSTART_DELAY_MAX_S))
        e->hs_found = 1;
    return e->hs_found;
}

static int
on_new_ack(EndpointObject *e, long long ack, double echo_s, long long sack[][2], int nsack,
           PyObject *now_obj, double now)
{
    long long mss = e->mss;
    long long old_una = e->snd_una, sacked_before = e->sacked_bytes;
    int sack_on = e->sack;
    /* RFC 3522 Eifel detection (Linux tcp_packet_delayed) */
    int delayed = e->timestamps && e->snd_una < e->high_seq && e->undo_marker && echo_s < e->retrans_stamp_s;
    long long newly_acked = ack - e->snd_una;
    e->snd_una = ack;
    if (e->snd_nxt < ack)           /* the receiver already held what go-back-N would resend */
        e->snd_nxt = ack;
    PyObject *report = e->on_stream_acked;
    int reporting = report != NULL && report != Py_None;
    Acked small[8];
    Acked *acked = small;
    Py_ssize_t nacked = 0, acked_cap = 8;
    if (e->unacked.size == 0) {
        PyErr_SetString(PyExc_IndexError, "deque index out of range");
        return -1;
    }
    double first_sent_s = seg_ring_at(&e->unacked, 0)->sent_s, last_sent_s = first_sent_s;
    int any_retransmitted = 0;
    int frto = e->frto;
    long long original = 0;              /* never-retransmitted segments sent before the timeout */
    int rc = 0;
    long long acked_segments = e->unacked.size;
    while (e->unacked.size > 0 && seg_ring_at(&e->unacked, 0)->seq < ack) {
        SegmentObject *seg = seg_ring_at(&e->unacked, 0);
        e->unacked.head = (e->unacked.head + 1) % e->unacked.cap;
        e->unacked.size--;
        if (seg->mark == MARK_SACKED)
            e->sacked_bytes -= seg->length;
        else if (sack_on)
            rack_note(e, seg, now);
        last_sent_s = seg->sent_s;
        if (seg->retransmitted)
            any_retransmitted = 1;
        else if (frto && seg->seq + seg->length <= e->high_seq)
            original += 1;
        if (reporting) {
            for (Py_ssize_t i = 0; i < seg->npieces; i++) {
                Piece *p = &seg->pieces[i];
                Py_ssize_t j = 0;
                while (j < nacked && acked[j].stream_id != p->stream_id)
                    j++;
                if (j == nacked) {
                    if (nacked == acked_cap) {
                        Py_ssize_t cap = acked_cap * 2;
                        Acked *grown = PyMem_Malloc((size_t)cap * sizeof(Acked));
                        if (grown == NULL) {
                            Py_DECREF(seg);
                            rc = -1;
                            PyErr_NoMemory();
                            goto done;
                        }
                        memcpy(grown, acked, (size_t)nacked * sizeof(Acked));
                        if (acked != small)
                            PyMem_Free(acked);
                        acked = grown;
                        acked_cap = cap;
                    }
                    acked[j].stream_id = p->stream_id;
                    nacked++;
                }
                acked[j].offset = p->offset + p->len;
            }
        }
        Py_DECREF(seg);
    }
    acked_segments -= e->unacked.size;
    long long newly_sacked = nsack && sack_on ? take_sack(e, sack, nsack, now) : 0;
    /* RFC 6298 section 3 and Karn's algorithm: a sample from the oldest newly acked
     * segment unless one was retransmitted; a fresh sample ends a backoff. */
    if (!any_retransmitted) {
        rtt_update(e->rtt, now - first_sent_s, 0.0, 0);
        e->rto_backoff = 1;
        /* Linux's congestion control is given the RTT of the latest sent segment acked */
        if (e->hystart && hystart_sample(e, now, now - last_sent_s, ack)) {
            e->cc->ssthresh = e->cc->cwnd;        /* tcp_cubic.c: snd_ssthresh = snd_cwnd */
            e->cc->ssthresh_int = e->cc->cwnd_int;
        }
    }
    e->dupacks = 0;
    int restart_timer = 1;
    int frto_new_data = 0;
    if (delayed)
        undo_timeout(e);                   /* Linux tcp_try_undo_loss, before F-RTO's tests */
    else if (frto) {
        if (original > e->frto_held)
            undo_timeout(e);               /* RFC 5682 step 3b as Linux applies it */
        else if (ack < e->high_seq && e->high_seq == e->snd_max && e->pending_len)
            frto_new_data = 1;             /* step 2b */
        else {                             /* conventional RTO recovery */
            e->frto = 0;
            if (ack < e->high_seq)
                e->snd_nxt = ack;
        }
        e->frto_held -= original <= e->frto_held ? original : e->frto_held;
    }
    CcObject *cc = e->cc;
    if (e->in_recovery) {
        if (ack >= e->recover && sack_on) {
            e->in_recovery = 0;
            e->inflation = 0.0;
            leave_sack_recovery(e);
        }
        else if (ack >= e->recover) {
            /* RFC 6582 3.2 step 3, full ACK: cwnd = min(ssthresh, max(FlightSize, SMSS) + SMSS) */
            e->in_recovery = 0;
            e->inflation = 0.0;
            long long flight = e->snd_nxt - ack;
            long long w = (mss > flight ? mss : flight) + mss;
            if ((double)w < cc->ssthresh) {
                cc->cwnd = (double)w;
                cc->cwnd_int = 1;
            }
            else {
                cc->cwnd = cc->ssthresh;
                cc->cwnd_int = cc->ssthresh_int;
            }
        }
        else if (sack_on) {
            /* a partial ACK: the recovery goes on, RACK marks what it shows lost */
            if (prr_ack(e, ack - old_una + e->sacked_bytes - sacked_before, newly_sacked > 0, 0) < 0) {
                rc = -1;
                goto done;
            }
        }
        else {
            /* step 4, partial ACK: retransmit the next hole, deflate, timer reset once */
            SegmentObject *seg = by_seq(e, ack);
            if (seg == NULL) {
                rc = -1;
                goto done;
            }
            if (e->snd_nxt < ack + seg->length)
                e->snd_nxt = ack + seg->length;
            Py_INCREF(seg);
            rc = endpoint_transmit(e, seg, 1, now);
            Py_DECREF(seg);
            if (rc < 0)
                goto done;
            e->inflation -= (double)newly_acked;
            if (newly_acked >= mss)
                e->inflation += (double)mss;
            e->partial_acks += 1;
            restart_timer = e->partial_acks == 1;
        }
    }
    else if (!e->packets) {
        if (cc_on_ack(cc, newly_acked, now, rtt_smoothed(e->rtt)) < 0) {
            rc = -1;
            goto done;
        }
    }
    else if (may_grow(e)) {
        /* Linux counts what an ACK delivers in segments (tcp_slow_start, tcp_cong_avoid_ai) */
        if (cc_on_ack(cc, acked_segments * mss, now, rtt_smoothed(e->rtt)) < 0) {
            rc = -1;
            goto done;
        }
    }
    /* RFC 6298 (5.2) stop the timer when all is acked, (5.3) else restart it */
    if (e->snd_una >= e->snd_max)
        timers_cancel(e->timers, SLOT_RTO);
    else if (restart_timer && timers_set(e->timers, SLOT_RTO, now + endpoint_rto(e), now) < 0) {
        rc = -1;
        goto done;
    }
    if (log_cwnd(e, now_obj) < 0) {
        rc = -1;
        goto done;
    }
    if (reporting && nacked) {
        Py_INCREF(report);
        for (Py_ssize_t j = 0; j < nacked && rc == 0; j++) {
            PyObject *argv[2];
            argv[0] = PyLong_FromLongLong(acked[j].stream_id);
            argv[1] = PyLong_FromLongLong(acked[j].offset);
            PyObject *r = (argv[0] && argv[1]) ? PyObject_Vectorcall(report, argv, 2, NULL) : NULL;
            Py_XDECREF(argv[0]);
            Py_XDECREF(argv[1]);
            if (r == NULL)
                rc = -1;
            else
                Py_DECREF(r);
        }
        Py_DECREF(report);
        if (rc < 0)
            goto done;
    }
    if (e->sacked_bytes && !e->in_recovery && ack > e->recover) {
        /* RFC 6675 section 5: IsLost(HighACK + 1) on an ACK that moved SND.UNA too, or RACK */
        int enter = lost_boundary(e) > ack;
        if (!enter && (enter = rack_head_lost(e)) < 0) {
            rc = -1;
            goto done;
        }
        if (enter && (enter_sack_recovery(e, now) < 0
                      || prr_ack(e, ack - old_una + e->sacked_bytes - sacked_before, 1, 1) < 0
                      || log_cwnd(e, now_obj) < 0)) {
            rc = -1;
            goto done;
        }
    }
    if (frto_new_data && e->frto) {
        /* RFC 5682 step 2b: up to two new segments, whatever the window */
        e->snd_nxt = e->snd_max;
        rc = send_more_window(e, now, 1, (double)(e->snd_max - e->snd_una + 2 * mss));
    }
    else
        rc = send_more(e, now);
done:
    if (acked != small)
        PyMem_Free(acked);
    return rc;
}

static int
on_duplicate_ack(EndpointObject *e, long long ack, long long sack[][2], int nsack, PyObject *now_obj, double now)
{
    long long newly_sacked = nsack && e->sack ? take_sack(e, sack, nsack, now) : 0;
    if (e->frto) {
        if (e->snd_max == e->high_seq)
            return 0;                      /* step 2: nothing to learn */
        /* RFC 5682 step 3a: the loss is real; cwnd at most 3 * SMSS, go-back-N */
        e->frto = 0;
        if (e->cc->cwnd > (double)(3 * e->mss)) {
            e->cc->cwnd = (double)(3 * e->mss);
            e->cc->cwnd_int = 1;
        }
        e->snd_nxt = e->snd_una;
    }
    e->dupacks += 1;
    long long threshold = e->packet_threshold;
    if (e->sack) {
        if (e->in_recovery) {
            if (prr_ack(e, newly_sacked, newly_sacked > 0, 0) < 0 || log_cwnd(e, now_obj) < 0)
                return -1;
        }
        else if (ack > e->recover) {
            /* RFC 6675 section 5: DupThresh duplicate ACKs or IsLost(HighACK + 1), or RACK */
            int enter = e->dupacks >= threshold || (e->sacked_bytes && lost_boundary(e) > ack);
            if (!enter && e->sacked_bytes && (enter = rack_head_lost(e)) < 0)
                return -1;
            if (enter && (enter_sack_recovery(e, now) < 0 || prr_ack(e, newly_sacked, 1, 1) < 0
                          || log_cwnd(e, now_obj) < 0))
                return -1;
        }
    }
    else if (e->in_recovery) {
        e->inflation += (double)e->mss;            /* RFC 6582 step 3 / RFC 5681 step 4 */
        if (log_cwnd(e, now_obj) < 0)
            return -1;
    }
    else if (e->dupacks == threshold && ack > e->recover) {
        /* RFC 5681 3.2 / RFC 6582 3.2 step 2: fast retransmit, enter fast recovery */
        e->in_recovery = 1;
        e->partial_acks = 0;
        e->recover = e->snd_max;
        save_undo(e);
        e->retrans_stamp_s = now;
        cc_on_congestion_event(e->cc);
        e->inflation = (double)(threshold * e->mss);
        e->fast_retransmits += 1;
        SegmentObject *seg = by_seq(e, ack);
        if (seg == NULL)
            return -1;
        if (e->snd_nxt < ack + seg->length)
            e->snd_nxt = ack + seg->length;
        Py_INCREF(seg);
        int rc = endpoint_transmit(e, seg, 1, now);
        Py_DECREF(seg);
        if (rc < 0 || log_cwnd(e, now_obj) < 0)
            return -1;
    }
    return send_more(e, now);
}

static PyObject *
Endpoint_on_ack(EndpointObject *e, PyObject *packet)
{
    long long ack;
    double echo_s;
    long long sack[MAX_SACK_BLOCKS][2];
    int nsack = 0;
    PyObject *payload = Py_IS_TYPE(packet, &PacketType) ? Py_NewRef(((PacketObject *)packet)->payload)
                                                        : PyObject_GetAttr(packet, str_payload);
    if (payload == NULL)
        return NULL;
    if (Py_IS_TYPE(payload, &AckType)) {
        AckObject *a = (AckObject *)payload;
        ack = a->ack;
        echo_s = a->echo_s;
        nsack = a->nsack;
        memcpy(sack, a->sack, (size_t)nsack * sizeof(sack[0]));
    }
    else {
        PyObject *blocks = NULL;
        if (get_long_attr(payload, str_ack, &ack) < 0 || get_double_attr(payload, str_echo_s, &echo_s) < 0
            || (blocks = PyObject_GetAttr(payload, str_sack)) == NULL
            || (nsack = parse_sack(blocks, sack)) < 0) {
            Py_XDECREF(blocks);
            Py_DECREF(payload);
            return NULL;
        }
        Py_DECREF(blocks);
    }
    Py_DECREF(payload);
    int rc = 0;
    if (ack > e->snd_una || (ack == e->snd_una && e->snd_max > ack)) {
        double now;
        PyObject *now_obj = get_now(e->sim, &now);
        if (now_obj == NULL)
            return NULL;
        if (ack > e->snd_una)
            rc = on_new_ack(e, ack, echo_s, sack, nsack, now_obj, now);
        else
            rc = on_duplicate_ack(e, ack, sack, nsack, now_obj, now);
        Py_DECREF(now_obj);
    }
    /* else: an old ACK overtaken by a newer one */
    if (rc < 0)
        return NULL;
    Py_RETURN_NONE;
}

/* -- handshake -- */

static int
send_control(EndpointObject *e, int code, double now)
{
    PyObject *control = control_new(code);
    if (control == NULL)
        return -1;
    PacketObject *packet = packet_new(e->header_bytes, control);
    Py_DECREF(control);
    if (packet == NULL)
        return -1;
    PyObject *deliver = PyObject_GetAttr(e->peer, str_on_control);
    if (deliver == NULL) {
        Py_DECREF(packet);
        return -1;
    }
    int rc = any_link_send(e->out_link, (PyObject *)packet, deliver, &now);
    Py_DECREF(deliver);
    Py_DECREF(packet);
    return rc < 0 ? -1 : 0;
}

static int
establish(EndpointObject *e, double now)
{
    e->established = 1;
    timers_cancel(e->timers, SLOT_RTO);
    if (!e->handshake_retransmitted)               /* Karn: no sample from a retransmitted SYN */
        rtt_update(e->rtt, now - e->handshake_sent_s, 0.0, 0);
    e->rto_backoff = 1;
    if (send_more(e, now) < 0)
        return -1;
    if (e->on_established != NULL && e->on_established != Py_None) {
        PyObject *r = PyObject_CallNoArgs(e->on_established);
        if (r == NULL)
            return -1;
        Py_DECREF(r);
    }
    return 0;
}

static int
handshake_timeout(EndpointObject *e, double now)
{
    /* RFC 6298 (5.5): retransmit the SYN (client) or SYN-ACK (server) with backoff */
    e->rtos += 1;
    e->handshake_retransmitted = 1;
    e->rto_backoff = e->rto_backoff * 2 < MAX_BACKOFF ? e->rto_backoff * 2 : MAX_BACKOFF;
    if (send_control(e, e->is_client ? CTL_SYN : CTL_SYN_ACK, now) < 0)
        return -1;
    return timers_set(e->timers, SLOT_RTO, now + endpoint_rto(e), now);
}

static PyObject *
Endpoint_start_handshake(EndpointObject *e, PyObject *unused)
{
    double now;
    PyObject *now_obj = get_now(e->sim, &now);
    if (now_obj == NULL)
        return NULL;
    Py_DECREF(now_obj);
    e->handshake_sent_s = now;
    if (send_control(e, CTL_SYN, now) < 0 || timers_set(e->timers, SLOT_RTO, now + endpoint_rto(e), now) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *
Endpoint_on_control(EndpointObject *e, PyObject *packet)
{
    PyObject *payload = Py_IS_TYPE(packet, &PacketType) ? Py_NewRef(((PacketObject *)packet)->payload)
                                                        : PyObject_GetAttr(packet, str_payload);
    if (payload == NULL)
        return NULL;
    int code;
    if (Py_IS_TYPE(payload, &ControlType))
        code = ((ControlObject *)payload)->code;
    else {
        PyObject *kind = PyObject_GetAttr(payload, str_kind);
        if (kind == NULL) {
            Py_DECREF(payload);
            return NULL;
        }
        code = PyUnicode_Check(kind) ? control_code(kind) : -1;
        Py_DECREF(kind);
    }
    Py_DECREF(payload);
    double now;
    PyObject *now_obj = get_now(e->sim, &now);
    if (now_obj == NULL)
        return NULL;
    Py_DECREF(now_obj);
    if (code == CTL_SYN) {
        if (!e->established) {       /* server: answer every SYN (ours may have been lost) */
            if (!e->timers->armed[SLOT_RTO]) {
                e->handshake_sent_s = now;
                if (timers_set(e->timers, SLOT_RTO, now + endpoint_rto(e), now) < 0)
                    return NULL;
            }
            else
                e->handshake_retransmitted = 1;   /* Karn: the ACK may answer either SYN-ACK */
            if (send_control(e, CTL_SYN_ACK, now) < 0)
                return NULL;
        }
    }
    else if (code == CTL_SYN_ACK) {
        if (send_control(e, CTL_ACK, now) < 0)         /* also re-ACK a retransmitted SYN-ACK */
            return NULL;
        if (!e->established && establish(e, now) < 0)
            return NULL;
    }
    else if (code == CTL_ACK && !e->established) {
        if (establish(e, now) < 0)
            return NULL;
    }
    Py_RETURN_NONE;
}

static int
endpoint_on_rto(EndpointObject *e, double now)
{
    PyObject *now_obj = PyFloat_FromDouble(now);      /* sim.now's value, for the cwnd log */
    if (now_obj == NULL)
        return -1;
    int rc = 0;
    if (!e->established)
        rc = handshake_timeout(e, now);
    else if (e->snd_una < e->snd_max) {
        e->rtos += 1;
        int repeated = e->rto_seq == e->snd_una;
        if (!(repeated || e->in_recovery))
            e->retrans_stamp_s = now;                 /* the episode's first retransmission */
        /* F-RTO (RFC 5682 step 1): not at the end of a fast or RTO recovery, unless repeated */
        int frto = repeated || !(e->in_recovery || e->snd_una < e->high_seq);
        if (repeated || e->in_recovery) {
            /* the same segment timed out again, or a timeout ends a fast recovery: hold ssthresh */
            e->cc->cwnd = (double)e->mss;
            e->cc->cwnd_int = 0;
        }
        else {
            save_undo(e);
            cc_on_timeout(e->cc, e->snd_nxt - e->snd_una);   /* RFC 5681 (4) */
        }
        if (e->sack) {
            /* RFC 2018 section 8: the scoreboard is cleared after a timeout */
            for (Py_ssize_t i = 0; i < e->unacked.size; i++)
                seg_ring_at(&e->unacked, i)->mark = 0;
            e->sacked_bytes = 0;
        }
        e->rto_seq = e->snd_una;
        e->frto = (char)frto;
        e->frto_held = e->dupacks;
        e->high_seq = e->snd_max;
        e->in_recovery = 0;
        e->inflation = 0.0;
        e->dupacks = 0;
        e->recover = e->snd_max;                  /* RFC 6582 section 4 */
        e->rto_backoff = e->rto_backoff * 2 < MAX_BACKOFF ? e->rto_backoff * 2 : MAX_BACKOFF;  /* RFC 6298 (5.5) */
        if (e->hystart)
            hystart_restart(e, now, e->snd_max);
        e->snd_nxt = e->snd_una;                  /* go-back-N from the first hole */
        rc = log_cwnd(e, now_obj);
        if (rc == 0)
            rc = send_more(e, now);
    }
    Py_DECREF(now_obj);
    return rc;
}

/* -- receiver -- */

static PyObject *
piece_bytes(const Piece *p)
{
    if (p->off == 0 && p->len == PyBytes_GET_SIZE(p->data))
        return Py_NewRef(p->data);
    return PyBytes_FromStringAndSize(PyBytes_AS_STRING(p->data) + p->off, p->len);
}

static int
call_on_data(PyObject *callback, long long stream_id, PyObject *data, int end, PyObject *now_obj)
{
    PyObject *sid = PyLong_FromLongLong(stream_id);
    if (sid == NULL)
        return -1;
    PyObject *argv[4] = {sid, data, end ? Py_True : Py_False, now_obj};
    PyObject *r = PyObject_Vectorcall(callback, argv, 4, NULL);
    Py_DECREF(sid);
    if (r == NULL)
        return -1;
    Py_DECREF(r);
    return 0;
}

/* Hand in-order bytes to the application, one call per run of the same stream. */
static int
deliver(EndpointObject *e, Piece **pieces, Py_ssize_t n, PyObject *now_obj)
{
    PyObject *callback = e->on_data;
    if (callback == NULL || callback == Py_None) {
        for (Py_ssize_t i = 0; i < n; i++)
            e->bytes_delivered += pieces[i]->len;
        return 0;
    }
    Py_INCREF(callback);
    int rc = 0;
    if (n == 1) {
        e->bytes_delivered += pieces[0]->len;
        PyObject *data = piece_bytes(pieces[0]);
        rc = data == NULL ? -1 : call_on_data(callback, pieces[0]->stream_id, data, pieces[0]->end, now_obj);
        Py_XDECREF(data);
        Py_DECREF(callback);
        return rc;
    }
    Py_ssize_t run_start = 0;
    long long run_stream = -1;
    for (Py_ssize_t i = 0; i <= n && rc == 0; i++) {
        if (i < n)
            e->bytes_delivered += pieces[i]->len;
        if (i == n || pieces[i]->stream_id != run_stream) {
            if (run_stream >= 0) {
                PyObject *data;
                if (i - run_start == 1)
                    data = piece_bytes(pieces[run_start]);
                else {
                    Py_ssize_t total = 0;
                    for (Py_ssize_t j = run_start; j < i; j++)
                        total += pieces[j]->len;
                    data = PyBytes_FromStringAndSize(NULL, total);
                    if (data != NULL) {
                        char *out = PyBytes_AS_STRING(data);
                        for (Py_ssize_t j = run_start; j < i; j++) {
                            memcpy(out, PyBytes_AS_STRING(pieces[j]->data) + pieces[j]->off, (size_t)pieces[j]->len);
                            out += pieces[j]->len;
                        }
                    }
                }
                rc = data == NULL ? -1 : call_on_data(callback, run_stream, data, pieces[i - 1]->end, now_obj);
                Py_XDECREF(data);
            }
            if (i < n) {
                run_stream = pieces[i]->stream_id;
                run_start = i;
            }
        }
    }
    Py_DECREF(callback);
    return rc;
}

/* RFC 2018 section 4 (tcp_endpoint._sack_note): the block holding the segment just received
 * goes first, merged with the held blocks it touches; the others keep their order. */
static int
sack_note(EndpointObject *e, long long start, long long end)
{
    if (e->nblocks == e->blocks_cap) {
        Py_ssize_t cap = e->blocks_cap ? e->blocks_cap * 2 : 8;
        long long (*grown)[2] = PyMem_Realloc(e->sack_blocks, (size_t)cap * sizeof(e->sack_blocks[0]));
        if (grown == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        e->sack_blocks = grown;
        e->blocks_cap = cap;
    }
    Py_ssize_t kept = 0;
    for (Py_ssize_t i = 0; i < e->nblocks; i++) {
        long long b0 = e->sack_blocks[i][0], b1 = e->sack_blocks[i][1];
        if (b1 < start || b0 > end) {
            e->sack_blocks[kept][0] = b0;
            e->sack_blocks[kept][1] = b1;
            kept++;
        }
        else {
            if (b0 < start)
                start = b0;
            if (b1 > end)
                end = b1;
        }
    }
    memmove(&e->sack_blocks[1], &e->sack_blocks[0], (size_t)kept * sizeof(e->sack_blocks[0]));
    e->sack_blocks[0][0] = start;
    e->sack_blocks[0][1] = end;
    e->nblocks = kept + 1;
    return 0;
}

/* Drop the blocks the cumulative ACK point has passed. */
static void
sack_prune(EndpointObject *e, long long rcv_nxt)
{
    Py_ssize_t kept = 0;
    for (Py_ssize_t i = 0; i < e->nblocks; i++) {
        if (e->sack_blocks[i][1] > rcv_nxt) {
            e->sack_blocks[kept][0] = e->sack_blocks[i][0];
            e->sack_blocks[kept][1] = e->sack_blocks[i][1];
            kept++;
        }
    }
    e->nblocks = kept;
}

static int
endpoint_send_ack(EndpointObject *e, double now)
{
    e->segments_since_ack = 0;
    timers_cancel(e->timers, SLOT_DELACK);
    e->acks_sent += 1;
    e->last_ack_sent = e->rcv_nxt;
    AckObject *ack = PyObject_New(AckObject, &AckType);
    if (ack == NULL)
        return -1;
    ack->ack = e->rcv_nxt;
    ack->echo_s = e->ts_recent_s;
    ack->nsack = (int)(e->nblocks < e->sack_report ? e->nblocks : e->sack_report);
    memcpy(ack->sack, e->sack_blocks, (size_t)ack->nsack * sizeof(ack->sack[0]));
    PacketObject *packet = packet_new(e->header_bytes, (PyObject *)ack);
    Py_DECREF(ack);
    if (packet == NULL)
        return -1;
    int rc = any_link_send(e->out_link, (PyObject *)packet, e->deliver_ack, &now);
    Py_DECREF(packet);
    return rc < 0 ? -1 : 0;
}

static PyObject *
Endpoint_on_segment(EndpointObject *e, PyObject *packet)
{
    double now;
    PyObject *now_obj = get_now(e->sim, &now);
    if (now_obj == NULL)
        return NULL;
    if (!e->established && establish(e, now) < 0) {   /* a data segment implies the handshake completed */
        Py_DECREF(now_obj);
        return NULL;
    }
    PyObject *payload = Py_IS_TYPE(packet, &PacketType) ? Py_NewRef(((PacketObject *)packet)->payload)
                                                        : PyObject_GetAttr(packet, str_payload);
    if (payload == NULL) {
        Py_DECREF(now_obj);
        return NULL;
    }
    if (!Py_IS_TYPE(payload, &SegmentType)) {
        PyErr_Format(PyExc_TypeError, "%U: a segment of the C TCP model expected, got %R", e->name, payload);
        Py_DECREF(payload);
        Py_DECREF(now_obj);
        return NULL;
    }
    SegmentObject *seg = (SegmentObject *)payload;   /* owned */
    long long seq = seg->seq, nxt = e->rcv_nxt;
    int rc = 0;
    PyObject *received = e->on_received;
    if (received != NULL && received != Py_None && seq >= nxt && ooo_find(e, seq) < 0) {
        Py_INCREF(received);
        for (Py_ssize_t i = 0; i < seg->npieces && rc == 0; i++) {
            Piece *p = &seg->pieces[i];
            PyObject *r = PyObject_CallFunction(received, "LLnO", p->stream_id, p->offset, p->len, now_obj);
            if (r == NULL)
                rc = -1;
            else
                Py_DECREF(r);
        }
        Py_DECREF(received);
    }
    if (rc < 0)
        goto done;
    if (seq <= e->last_ack_sent && e->last_ack_sent < seq + seg->length) {   /* RFC 7323 4.3 (2) */
        if (Py_IS_TYPE(packet, &PacketType))
            e->ts_recent_s = ((PacketObject *)packet)->sent_s;
        else if (get_double_attr(packet, str_sent_s, &e->ts_recent_s) < 0) {
            rc = -1;
            goto done;
        }
    }
    if (seq == nxt) {
        int filled_hole = e->ooo_size > 0;
        nxt += seg->length;
        if (!filled_hole) {
            Piece *pieces_small[8];
            Piece **pieces = pieces_small;
            if (seg->npieces > 8) {
                pieces = PyMem_Malloc((size_t)seg->npieces * sizeof(Piece *));
                if (pieces == NULL) {
                    PyErr_NoMemory();
                    rc = -1;
                    goto done;
                }
            }
            for (Py_ssize_t i = 0; i < seg->npieces; i++)
                pieces[i] = &seg->pieces[i];
            e->rcv_nxt = nxt;
            rc = deliver(e, pieces, seg->npieces, now_obj);
            if (pieces != pieces_small)
                PyMem_Free(pieces);
            if (rc < 0)
                goto done;
            e->segments_since_ack += 1;
            if (e->segments_since_ack >= e->ack_every)
                rc = endpoint_send_ack(e, now);
            else if (!e->timers->armed[SLOT_DELACK])
                rc = timers_set(e->timers, SLOT_DELACK, now + e->max_ack_delay_s, now);
        }
        else {
            /* while nxt in ooo: the held segment there follows in order; take it out */
            Py_ssize_t count = 0, cap = 8, npieces = seg->npieces;
            SegmentObject **held = PyMem_Malloc((size_t)cap * sizeof(SegmentObject *));
            if (held == NULL) {
                PyErr_NoMemory();
                rc = -1;
                goto done;
            }
            for (;;) {
                Py_ssize_t at = ooo_find(e, nxt);
                if (at < 0)
                    break;
                SegmentObject *h = e->ooo[at];
                memmove(&e->ooo[at], &e->ooo[at + 1], (size_t)(e->ooo_size - at - 1) * sizeof(SegmentObject *));
                e->ooo_size--;
                if (count == cap) {
                    cap *= 2;
                    SegmentObject **grown = PyMem_Realloc(held, (size_t)cap * sizeof(SegmentObject *));
                    if (grown == NULL) {
                        Py_DECREF(h);
                        for (Py_ssize_t c = 0; c < count; c++)
                            Py_DECREF(held[c]);
                        PyMem_Free(held);
                        PyErr_NoMemory();
                        rc = -1;
                        goto done;
                    }
                    held = grown;
                }
                held[count++] = h;                   /* the buffer's reference, now ours */
                e->ooo_bytes -= h->payload_bytes;
                npieces += h->npieces;
                nxt += h->length;
            }
            Piece **pieces = PyMem_Malloc((size_t)npieces * sizeof(Piece *));
            if (pieces == NULL) {
                PyErr_NoMemory();
                rc = -1;
            }
            else {
                Py_ssize_t k = 0;
                for (Py_ssize_t i = 0; i < seg->npieces; i++)
                    pieces[k++] = &seg->pieces[i];
                for (Py_ssize_t c = 0; c < count; c++)
                    for (Py_ssize_t i = 0; i < held[c]->npieces; i++)
                        pieces[k++] = &held[c]->pieces[i];
                e->rcv_nxt = nxt;
                if (e->nblocks)
                    sack_prune(e, nxt);
                rc = deliver(e, pieces, k, now_obj);
                PyMem_Free(pieces);
            }
            for (Py_ssize_t c = 0; c < count; c++)
                Py_DECREF(held[c]);
            PyMem_Free(held);
            if (rc == 0)
                rc = endpoint_send_ack(e, now);     /* RFC 5681 4.2: ACK at once a segment filling a gap */
        }
    }
    else if (seq > nxt) {
        Py_ssize_t at = ooo_find(e, seq);
        if (at < 0) {
            at = -at - 1;
            if (e->ooo_size == e->ooo_cap) {
                Py_ssize_t cap = e->ooo_cap ? e->ooo_cap * 2 : 16;
                SegmentObject **grown = PyMem_Realloc(e->ooo, (size_t)cap * sizeof(SegmentObject *));
                if (grown == NULL) {
                    PyErr_NoMemory();
                    rc = -1;
                    goto done;
                }
                e->ooo = grown;
                e->ooo_cap = cap;
            }
            memmove(&e->ooo[at + 1], &e->ooo[at], (size_t)(e->ooo_size - at) * sizeof(SegmentObject *));
            Py_INCREF(seg);
            e->ooo[at] = seg;
            e->ooo_size++;
            e->ooo_bytes += seg->payload_bytes;
            if (e->ooo_bytes > e->max_ooo_bytes)
                e->max_ooo_bytes = e->ooo_bytes;
        }
        if (e->sack && sack_note(e, seq, seq + seg->length) < 0) {
            rc = -1;
            goto done;
        }
        rc = endpoint_send_ack(e, now);                /* RFC 5681 4.2: immediate duplicate ACK */
    }
    else
        rc = endpoint_send_ack(e, now);                /* already received (spurious retransmission) */
done:
    Py_DECREF(payload);
    Py_DECREF(now_obj);
    if (rc < 0)
        return NULL;
    Py_RETURN_NONE;
}

/* -- application interface -- */

static PyObject *
Endpoint_send_more(EndpointObject *e, PyObject *unused)
{
    if (!(e->in_recovery && e->sack) && (!e->established || (!e->pending_len && e->snd_nxt >= e->snd_max)))
        Py_RETURN_NONE;                  /* nothing to send: no need for the time */
    double now;
    PyObject *now_obj = get_now(e->sim, &now);
    if (now_obj == NULL)
        return NULL;
    Py_DECREF(now_obj);
    if (send_more(e, now) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *
Endpoint_open_stream(EndpointObject *e, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    int uni = 0;
    PyObject *arg = nargs >= 1 ? args[0] : NULL;
    if (kwnames != NULL && PyTuple_GET_SIZE(kwnames) == 1 && nargs == 0
        && PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(kwnames, 0), "unidirectional") == 0)
        arg = args[0];
    else if (kwnames != NULL || nargs > 1) {
        PyErr_SetString(PyExc_TypeError, "open_stream(unidirectional=False)");
        return NULL;
    }
    if (arg != NULL) {
        uni = PyObject_IsTrue(arg);
        if (uni < 0)
            return NULL;
    }
    long long index = e->next_stream_index[uni];
    e->next_stream_index[uni] = index + 1;
    /* RFC 9000 section 2.1: the two low bits give initiator (0x1 = server) and direction (0x2 = uni) */
    return PyLong_FromLongLong((index << 2) | (e->is_client ? 0 : 1) | (uni ? 2 : 0));
}

/* write(stream_id, data[off:off + n], end) with data a bytes object (the ResponseWriter's
 * padding), or any bytes-like data when n < 0 (the whole of it, as Python's write). */
static int
endpoint_write_slice(EndpointObject *e, PyObject *sid_obj, PyObject *data, Py_ssize_t off, Py_ssize_t n, int end)
{
    long long sid = PyLong_AsLongLong(sid_obj);
    if (sid == -1 && PyErr_Occurred())
        return -1;
    StreamSend *st = NULL;
    int ended, kind = (int)(sid & 3);
    Py_ssize_t index = -1;
    if (sid >= 0 && (sid >> 2) < DENSE_STREAMS) {
        index = (Py_ssize_t)(sid >> 2);
        if (index >= e->nstreams[kind]) {
            Py_ssize_t n_new = e->nstreams[kind] ? e->nstreams[kind] : 16;
            while (n_new <= index)
                n_new *= 2;
            StreamSend *grown = PyMem_Realloc(e->streams[kind], (size_t)n_new * sizeof(StreamSend));
            if (grown == NULL) {
                PyErr_NoMemory();
                return -1;
            }
            memset(grown + e->nstreams[kind], 0, (size_t)(n_new - e->nstreams[kind]) * sizeof(StreamSend));
            e->streams[kind] = grown;
            e->nstreams[kind] = n_new;
        }
        st = &e->streams[kind][index];
        ended = st->ended;
    }
    else if ((ended = PySet_Contains(e->ended, sid_obj)) < 0)
        return -1;
    if (ended) {
        PyErr_Format(PyExc_ValueError, "%U: write on stream %lld after its end", e->name, sid);
        return -1;
    }
    if ((sid & 0x2) && ((sid & 0x1) != 0) == (e->is_client != 0)) {
        PyErr_Format(PyExc_ValueError, "%U: stream %lld is the peer's unidirectional stream", e->name, sid);
        return -1;
    }
    if (n < 0) {
        n = PyObject_Length(data);
        if (n < 0)
            return -1;
    }
    if (n == 0 && !end)
        return 0;
    PyObject *bytes;
    if (PyBytes_Check(data))
        bytes = Py_NewRef(data);
    else {
        bytes = PyBytes_FromObject(data);         /* the caller may reuse a mutable buffer */
        if (bytes == NULL)
            return -1;
    }
    long long offset = 0;
    int rc;
    if (index >= 0) {
        st = &e->streams[kind][index];     /* again: len() or bytes() may have run Python code */
        offset = st->offset;
        st->offset = offset + n;
        if (end)
            st->ended = 1;
    }
    else {
        PyObject *old = PyDict_GetItemWithError(e->send_offset, sid_obj);
        if (old != NULL) {
            offset = PyLong_AsLongLong(old);
            if (offset == -1 && PyErr_Occurred())
                goto fail;
        }
        else if (PyErr_Occurred())
            goto fail;
        PyObject *new_offset = PyLong_FromLongLong(offset + n);
        if (new_offset == NULL)
            goto fail;
        rc = PyDict_SetItem(e->send_offset, sid_obj, new_offset);
        Py_DECREF(new_offset);
        if (rc < 0 || (end && PySet_Add(e->ended, sid_obj) < 0))
            goto fail;
    }
    Piece piece;
    if (n) {
        piece.data = bytes;
        piece.off = off;
    }
    else {
        piece.data = Py_NewRef(empty_bytes);
        piece.off = 0;
        Py_DECREF(bytes);
    }
    piece.len = n;
    piece.stream_id = sid;
    piece.offset = offset;
    piece.end = end;
    if (piece_ring_push(&e->pending, &piece) < 0) {
        Py_DECREF(piece.data);
        return -1;
    }
    e->pending_len += n ? n : 1;     /* an empty end mark takes one sequence number (like FIN) */
    if (e->nodelay) {
        /* a send() on a TCP_NODELAY socket: out now if the window allows (tcp_window) */
        double now;
        PyObject *now_obj = get_now(e->sim, &now);
        if (now_obj == NULL)
            return -1;
        Py_DECREF(now_obj);
        return send_more(e, now);
    }
    if (!e->flush_scheduled) {
        /* writes at the same virtual instant share segments: one flush after them all */
        e->flush_scheduled = 1;
        PyObject *now_obj = PyObject_GetAttr(e->sim, str_now);
        if (now_obj == NULL)
            return -1;
        rc = push_event(e->push, now_obj, e->flush, empty_tuple);
        Py_DECREF(now_obj);
        if (rc < 0)
            return -1;
    }
    return 0;
fail:
    Py_DECREF(bytes);
    return -1;
}

static inline int
endpoint_write(EndpointObject *e, PyObject *sid_obj, PyObject *data, int end)
{
    return endpoint_write_slice(e, sid_obj, data, 0, -1, end);
}

static PyObject *
Endpoint_write(EndpointObject *e, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    PyObject *sid_obj = NULL, *data = NULL, *end_obj = NULL;
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    if (nargs >= 1) sid_obj = args[0];
    if (nargs >= 2) data = args[1];
    if (nargs >= 3) end_obj = args[2];
    if (nargs > 3) {
        PyErr_SetString(PyExc_TypeError, "write(stream_id, data, end=False)");
        return NULL;
    }
    for (Py_ssize_t i = 0; i < nkw; i++) {
        PyObject *k = PyTuple_GET_ITEM(kwnames, i);
        PyObject *v = args[nargs + i];
        if (PyUnicode_CompareWithASCIIString(k, "end") == 0 && end_obj == NULL)
            end_obj = v;
        else if (PyUnicode_CompareWithASCIIString(k, "data") == 0 && data == NULL)
            data = v;
        else if (PyUnicode_CompareWithASCIIString(k, "stream_id") == 0 && sid_obj == NULL)
            sid_obj = v;
        else {
            PyErr_Format(PyExc_TypeError, "write() got an unexpected keyword argument %R", k);
            return NULL;
        }
    }
    if (sid_obj == NULL || data == NULL) {
        PyErr_SetString(PyExc_TypeError, "write(stream_id, data, end=False)");
        return NULL;
    }
    int end = 0;
    if (end_obj != NULL) {
        end = PyObject_IsTrue(end_obj);
        if (end < 0)
            return NULL;
    }
    if (endpoint_write(e, sid_obj, data, end) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *
Endpoint_flush(EndpointObject *e, PyObject *unused)
{
    e->flush_scheduled = 0;
    return Endpoint_send_more(e, NULL);
}

static PyObject *
Endpoint_connect(EndpointObject *e, PyObject *peer)
{
    PyObject *seg = PyObject_GetAttr(peer, str_on_segment);
    if (seg == NULL)
        return NULL;
    PyObject *ack = PyObject_GetAttr(peer, str_on_ack);
    if (ack == NULL) {
        Py_DECREF(seg);
        return NULL;
    }
    Py_XSETREF(e->peer, Py_NewRef(peer));
    Py_XSETREF(e->deliver_segment, seg);
    Py_XSETREF(e->deliver_ack, ack);
    Py_RETURN_NONE;
}

static PyObject *
Endpoint_get_cwnd(EndpointObject *e, void *c) { return endpoint_cwnd_obj(e); }

static PyObject *
Endpoint_get_flight(EndpointObject *e, void *c) { return PyLong_FromLongLong(e->snd_nxt - e->snd_una); }

static PyObject *
Endpoint_rto_s(EndpointObject *e, PyObject *unused) { return PyFloat_FromDouble(endpoint_rto(e)); }

static PyObject *
Endpoint_direction_stats(EndpointObject *e, PyObject *unused)
{
    if (e->peer == NULL || !Py_IS_TYPE(e->peer, &EndpointType)) {
        PyErr_SetString(PyExc_TypeError, "direction_stats needs a connected C peer");
        return NULL;
    }
    EndpointObject *peer = (EndpointObject *)e->peer;
    PyObject *srtt = Rtt_get_smoothed(e->rtt, NULL);
    PyObject *cwnd = endpoint_cwnd_obj(e);
    PyObject *d = NULL;
    if (srtt != NULL && cwnd != NULL)
        d = Py_BuildValue("{s:L,s:L,s:L,s:L,s:L,s:L,s:L,s:L,s:L,s:L,s:O,s:d,s:O}",
                          "packets_sent", e->segments_sent,
                          "packets_lost", e->segments_retransmitted,
                          "rtos", e->rtos,
                          "spurious_rtos", e->spurious_rtos,
                          "undone_reductions", e->undone_reductions,
                          "fast_retransmits", e->fast_retransmits,
                          "bytes_sent", e->bytes_sent,
                          "bytes_delivered", peer->bytes_delivered,
                          "acks_sent", peer->acks_sent,
                          "max_receive_buffer_bytes", peer->max_ooo_bytes,
                          "srtt_s", srtt,
                          "rto_s", endpoint_rto(e),
                          "cwnd_bytes", cwnd);
    Py_XDECREF(srtt);
    Py_XDECREF(cwnd);
    return d;
}

static PyObject *
Endpoint_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"conn", "is_client", "out_link", "cwnd_log", NULL};
    PyObject *conn, *out_link;
    int is_client, cwnd_log;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O$pOp:TcpEndpoint", kwlist, &conn, &is_client, &out_link, &cwnd_log))
        return NULL;
    EndpointObject *e = (EndpointObject *)type->tp_alloc(type, 0);
    if (e == NULL)
        return NULL;
    e->conn = Py_NewRef(conn);
    e->out_link = Py_NewRef(out_link);
    e->is_client = (char)is_client;
    e->established = 1;
    e->sim = PyObject_GetAttr(conn, str_sim);
    e->config = PyObject_GetAttr(conn, str_config);
    PyObject *conn_name = PyObject_GetAttr(conn, str_name);
    if (e->sim == NULL || e->config == NULL || conn_name == NULL) {
        Py_XDECREF(conn_name);
        goto fail;
    }
    e->name = PyUnicode_FromFormat("%U/%s", conn_name, is_client ? "client" : "server");
    Py_DECREF(conn_name);
    e->push = PyObject_GetAttr(e->sim, str_push);
    if (e->name == NULL || e->push == NULL)
        goto fail;
    long long iw;
    double min_rto, initial_rtt;
    PyObject *cc_name;
    if (get_long_attr(e->config, str_mss_bytes, &e->mss) < 0
        || get_long_attr(e->config, str_header_overhead_bytes, &e->header_bytes) < 0
        || get_long_attr(e->config, str_initial_window_segments, &iw) < 0
        || get_long_attr(e->config, str_ack_every_packets, &e->ack_every) < 0
        || get_long_attr(e->config, str_packet_threshold, &e->packet_threshold) < 0
        || get_double_attr(e->config, str_min_rto_s, &min_rto) < 0
        || get_double_attr(e->config, str_initial_rtt_s, &initial_rtt) < 0
        || get_double_attr(e->config, str_max_ack_delay_s, &e->max_ack_delay_s) < 0
        || (cc_name = PyObject_GetAttr(e->config, str_cc)) == NULL)
        goto fail;
    if (get_bool_attr(e->config, str_timestamps, &e->timestamps) < 0
        || get_bool_attr(e->config, str_sack, &e->sack) < 0
        || get_bool_attr(e->config, str_cwnd_in_packets, &e->packets) < 0
        || get_bool_attr(e->config, str_hystart, &e->hystart) < 0) {
        Py_DECREF(cc_name);
        goto fail;
    }
    e->sack_report = e->timestamps ? 3 : 4;   /* RFC 2018 section 3 */
    e->rack_xmit_s = -1.0;
    int kind = -1;
    PyObject *lower = PyObject_CallMethod(cc_name, "lower", NULL);
    Py_DECREF(cc_name);
    if (lower == NULL)
        goto fail;
    if (PyUnicode_CompareWithASCIIString(lower, "reno") == 0 || PyUnicode_CompareWithASCIIString(lower, "newreno") == 0)
        kind = CC_RENO;
    else if (PyUnicode_CompareWithASCIIString(lower, "cubic") == 0)
        kind = CC_CUBIC;
    Py_DECREF(lower);
    if (kind < 0) {
        PyErr_SetString(PyExc_ValueError, "unknown congestion control (choose reno or cubic)");
        goto fail;
    }
    e->cc = cc_new(kind, e->mss, iw);
    e->rtt = rtt_new(initial_rtt, min_rto);
    e->hystart = e->hystart && kind == CC_CUBIC;
    hystart_restart(e, 0.0, 0);
    e->send_offset = PyDict_New();
    e->ended = PySet_New(NULL);
    if (e->cc == NULL || e->rtt == NULL || e->send_offset == NULL || e->ended == NULL)
        goto fail;
    if (cwnd_log && (e->cwnd_log = PyList_New(0)) == NULL)
        goto fail;
    TimersObject *t = PyObject_GC_New(TimersObject, &TimersType);
    if (t == NULL)
        goto fail;
    t->endpoint = (EndpointObject *)Py_NewRef((PyObject *)e);
    t->owner = Py_NewRef(e->name);
    t->sim = Py_NewRef(e->sim);
    t->push = Py_NewRef(e->push);
    t->fire = NULL;
    t->armed[0] = t->armed[1] = 0;
    t->when[0] = t->when[1] = 0.0;
    t->has_scheduled = 0;
    t->scheduled = 0.0;
    t->gen = 0;
    PyObject_GC_Track(t);
    e->timers = t;
    t->fire = PyObject_GetAttr((PyObject *)t, str_fire);
    e->flush = PyObject_GetAttr((PyObject *)e, str_flush);
    if (t->fire == NULL || e->flush == NULL)
        goto fail;
    e->recover = -1;
    e->rto_backoff = 1;
    e->rto_seq = -1;
    e->high_seq = -1;
    return (PyObject *)e;
fail:
    Py_DECREF(e);
    return NULL;
}

static int
Endpoint_traverse(EndpointObject *e, visitproc visit, void *arg)
{
    Py_VISIT(e->sim);
    Py_VISIT(e->push);
    Py_VISIT(e->conn);
    Py_VISIT(e->name);
    Py_VISIT(e->peer);
    Py_VISIT(e->out_link);
    Py_VISIT(e->config);
    Py_VISIT((PyObject *)e->timers);
    Py_VISIT(e->on_data);
    Py_VISIT(e->on_stream_acked);
    Py_VISIT(e->on_received);
    Py_VISIT(e->on_established);
    Py_VISIT(e->cwnd_log);
    Py_VISIT(e->deliver_segment);
    Py_VISIT(e->deliver_ack);
    Py_VISIT(e->flush);
    Py_VISIT(e->send_offset);
    Py_VISIT(e->ended);
    return 0;
}

static int
Endpoint_clear(EndpointObject *e)
{
    Py_CLEAR(e->sim);
    Py_CLEAR(e->push);
    Py_CLEAR(e->conn);
    Py_CLEAR(e->peer);
    Py_CLEAR(e->out_link);
    Py_CLEAR(e->config);
    Py_CLEAR(e->timers);
    Py_CLEAR(e->on_data);
    Py_CLEAR(e->on_stream_acked);
    Py_CLEAR(e->on_received);
    Py_CLEAR(e->on_established);
    Py_CLEAR(e->cwnd_log);
    Py_CLEAR(e->deliver_segment);
    Py_CLEAR(e->deliver_ack);
    Py_CLEAR(e->flush);
    Py_CLEAR(e->send_offset);
    Py_CLEAR(e->ended);
    return 0;
}

static void
Endpoint_dealloc(EndpointObject *e)
{
    PyObject_GC_UnTrack(e);
    Endpoint_clear(e);
    Py_CLEAR(e->name);
    Py_CLEAR(e->cc);
    Py_CLEAR(e->rtt);
    while (e->pending.size > 0) {
        Py_DECREF(piece_ring_front(&e->pending)->data);
        piece_ring_pop(&e->pending);
    }
    PyMem_Free(e->pending.buf);
    for (Py_ssize_t i = 0; i < e->unacked.size; i++)
        Py_DECREF(seg_ring_at(&e->unacked, i));
    PyMem_Free(e->unacked.buf);
    for (Py_ssize_t i = 0; i < e->ooo_size; i++)
        Py_DECREF(e->ooo[i]);
    PyMem_Free(e->ooo);
    PyMem_Free(e->sack_blocks);
    for (int kind = 0; kind < 4; kind++)
        PyMem_Free(e->streams[kind]);
    Py_TYPE(e)->tp_free((PyObject *)e);
}

static PyMethodDef Endpoint_methods[] = {
    {"open_stream", (PyCFunction)(void (*)(void))Endpoint_open_stream, METH_FASTCALL | METH_KEYWORDS,
     "open_stream(unidirectional=False) -> a new stream id (RFC 9000 section 2.1 numbering)."},
    {"write", (PyCFunction)(void (*)(void))Endpoint_write, METH_FASTCALL | METH_KEYWORDS,
     "write(stream_id, data, end=False): append data to this direction's byte stream."},
    {"_flush", (PyCFunction)Endpoint_flush, METH_NOARGS, "The writes of this instant go out."},
    {"_send_more", (PyCFunction)Endpoint_send_more, METH_NOARGS, "Send what the window allows."},
    {"_on_segment", (PyCFunction)Endpoint_on_segment, METH_O, "A data segment arrives."},
    {"_on_ack", (PyCFunction)Endpoint_on_ack, METH_O, "An ACK arrives."},
    {"_on_control", (PyCFunction)Endpoint_on_control, METH_O, "A handshake packet arrives."},
    {"_start_handshake", (PyCFunction)Endpoint_start_handshake, METH_NOARGS, "Send the SYN."},
    {"_connect", (PyCFunction)Endpoint_connect, METH_O, "_connect(peer): the other end."},
    {"_rto_s", (PyCFunction)Endpoint_rto_s, METH_NOARGS, "The retransmission timeout with backoff."},
    {"direction_stats", (PyCFunction)Endpoint_direction_stats, METH_NOARGS,
     "Counters of the direction this endpoint sends (receiver side from the peer)."},
    {NULL},
};

#define RO(name, type, field) {name, type, offsetof(EndpointObject, field), READONLY, NULL}
static PyMemberDef Endpoint_members[] = {
    RO("sim", T_OBJECT, sim), RO("conn", T_OBJECT, conn), RO("name", T_OBJECT, name),
    RO("peer", T_OBJECT, peer), RO("out_link", T_OBJECT, out_link), RO("config", T_OBJECT, config),
    RO("timers", T_OBJECT, timers), RO("cc", T_OBJECT, cc), RO("rtt", T_OBJECT, rtt),
    RO("is_client", T_BOOL, is_client), RO("mss", T_LONGLONG, mss), RO("header_bytes", T_LONGLONG, header_bytes),
    {"established", T_BOOL, offsetof(EndpointObject, established), 0, NULL},
    {"on_data", T_OBJECT, offsetof(EndpointObject, on_data), 0, "on_data(stream_id, data, end, time_s)"},
    {"on_stream_acked", T_OBJECT, offsetof(EndpointObject, on_stream_acked), 0, "on_stream_acked(stream_id, acked_offset)"},
    {"on_received", T_OBJECT, offsetof(EndpointObject, on_received), 0, "on_received(stream_id, offset, length, time_s)"},
    {"on_established", T_OBJECT, offsetof(EndpointObject, on_established), 0, "on_established(): the handshake is done"},
    RO("cwnd_log", T_OBJECT, cwnd_log),
    RO("snd_una", T_LONGLONG, snd_una), RO("snd_nxt", T_LONGLONG, snd_nxt), RO("snd_max", T_LONGLONG, snd_max),
    RO("rcv_nxt", T_LONGLONG, rcv_nxt), RO("max_ooo_bytes", T_LONGLONG, max_ooo_bytes),
    RO("_pending_len", T_LONGLONG, pending_len), RO("_flush_scheduled", T_BOOL, flush_scheduled),
    RO("_dupacks", T_LONGLONG, dupacks), RO("_in_recovery", T_BOOL, in_recovery), RO("_recover", T_LONGLONG, recover),
    RO("_partial_acks", T_LONGLONG, partial_acks), RO("_inflation_bytes", T_DOUBLE, inflation),
    RO("_rto_backoff", T_LONGLONG, rto_backoff), RO("_rto_seq", T_LONGLONG, rto_seq),
    RO("_ooo_bytes", T_LONGLONG, ooo_bytes), RO("_segments_since_ack", T_LONGLONG, segments_since_ack),
    RO("segments_sent", T_LONGLONG, segments_sent), RO("segments_retransmitted", T_LONGLONG, segments_retransmitted),
    RO("rtos", T_LONGLONG, rtos), RO("spurious_rtos", T_LONGLONG, spurious_rtos),
    RO("undone_reductions", T_LONGLONG, undone_reductions), RO("fast_retransmits", T_LONGLONG, fast_retransmits),
    RO("_frto", T_BOOL, frto), RO("_high_seq", T_LONGLONG, high_seq), RO("_frto_held", T_LONGLONG, frto_held),
    RO("_undo_marker", T_BOOL, undo_marker),
    RO("bytes_sent", T_LONGLONG, bytes_sent), RO("bytes_delivered", T_LONGLONG, bytes_delivered),
    RO("acks_sent", T_LONGLONG, acks_sent),
    {"nodelay", T_BOOL, offsetof(EndpointObject, nodelay), 0, "TCP_NODELAY: a write leaves at once (tcp_window)"},
    RO("_packets", T_BOOL, packets), RO("_max_packets_out", T_LONGLONG, max_packets_out),
    RO("_cwnd_usage_seq", T_LONGLONG, cwnd_usage_seq), RO("_is_cwnd_limited", T_BOOL, is_cwnd_limited),
    {NULL},
};
#undef RO

static PyGetSetDef Endpoint_getset[] = {
    {"cwnd_bytes", (getter)Endpoint_get_cwnd, NULL, "the congestion window in use (with fast-recovery inflation)", NULL},
    {"flight_bytes", (getter)Endpoint_get_flight, NULL, NULL, NULL},
    {NULL},
};

static PyTypeObject EndpointType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "simulator.net._tcp.TcpEndpoint",
    .tp_doc = "TcpEndpoint(conn, *, is_client, out_link, cwnd_log): one side of a TCP connection (tcp.TcpEndpoint's C twin).",
    .tp_basicsize = sizeof(EndpointObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_new = Endpoint_new,
    .tp_dealloc = (destructor)Endpoint_dealloc,
    .tp_traverse = (traverseproc)Endpoint_traverse,
    .tp_clear = (inquiry)Endpoint_clear,
    .tp_methods = Endpoint_methods,
    .tp_members = Endpoint_members,
    .tp_getset = Endpoint_getset,
};

/* -- StrideTree ---------------------------------------------------------------------------- */

#include "_stride_tree.h"   /* StrideTree: the RFC 7540 5.3 tree of priority_tree.py in C */

/* -- ResponseWriter ----------------------------------------------------------------------- */

/* writer.ResponseWriter's twin for a C endpoint: responses in turns (_writer_turns.h, shared
 * with the QUIC writer), a packet's worth per turn, the window kept written (see
 * simulator/net/writer.py). */
#include "_writer_turns.h"

typedef struct {
    PyObject_HEAD
    WriterTurns t;                 /* first: WRITER_TURNS reads it there */
    EndpointObject *endpoint;
    PyObject *acked, *pad;
    long long ahead_windows, ahead_bytes;   /* written beyond the window (writer.py's docstring) */
    char fill_on_ack;
} WriterObject;

static PyTypeObject WriterType;

/* endpoint.write(stream_id, b"r" * n, end=end): the padding sliced from one buffer. */
static int
writer_write(PyObject *self, PyObject *sid, long long n, int end)
{
    WriterObject *w = (WriterObject *)self;
    if (n > PyBytes_GET_SIZE(w->pad)) {       /* a limit above the chunk size: padding to match */
        PyObject *pad = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)n);
        if (pad == NULL)
            return -1;
        memset(PyBytes_AS_STRING(pad), 'r', (size_t)n);
        Py_SETREF(w->pad, pad);
    }
    return endpoint_write_slice(w->endpoint, sid, w->pad, 0, (Py_ssize_t)n, end);
}

static PyObject *
Writer_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    PyObject *endpoint, *written, *on_written;
    long long chunk;
    int fill_on_ack;
    if (!PyArg_ParseTuple(args, "O!LO!Op:ResponseWriter", &EndpointType, &endpoint, &chunk, &PyDict_Type, &written,
                          &on_written, &fill_on_ack))
        return NULL;
    if (chunk <= 0) {
        PyErr_SetString(PyExc_ValueError, "chunk_bytes must be > 0");
        return NULL;
    }
    WriterObject *w = (WriterObject *)type->tp_alloc(type, 0);
    if (w == NULL)
        return NULL;
    w->endpoint = (EndpointObject *)Py_NewRef(endpoint);
    w->t.written = Py_NewRef(written);
    w->t.on_written = Py_NewRef(on_written);
    w->t.chunk = chunk;
    w->t.write = writer_write;
    w->fill_on_ack = (char)fill_on_ack;
    w->acked = PyDict_New();
    w->pad = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)chunk);    /* b"r" * chunk: the padding */
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
    Py_VISIT((PyObject *)w->endpoint);
    Py_VISIT(w->acked);
    return turns_traverse(&w->t, visit, arg);
}

static int
Writer_clear(WriterObject *w)
{
    Py_CLEAR(w->endpoint);
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

static int
writer_fill(WriterObject *w)
{
    if (!turns_waiting(&w->t))
        return 0;
    EndpointObject *e = w->endpoint;
    /* max(endpoint.cwnd_bytes, 2 * chunk), cwnd_bytes = max(cwnd + inflation, mss) */
    double window = py_max(py_max(e->cc->cwnd + e->inflation, (double)e->mss), (double)(2 * w->t.chunk));
    if (w->ahead_windows || w->ahead_bytes)
        window = window * (double)(1 + w->ahead_windows) + (double)w->ahead_bytes;
    while ((double)w->t.unacked < window) {
        long long n = turns_next(&w->t, (PyObject *)w, w->t.chunk);
        if (n < 0)
            return -1;
        if (n == 0)
            break;
    }
    return 0;
}

static PyObject *
Writer_fill(WriterObject *w, PyObject *unused)
{
    if (writer_fill(w) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *
Writer_on_stream_acked(WriterObject *w, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "on_stream_acked(stream_id, acked_offset)");
        return NULL;
    }
    long long acked_offset = PyLong_AsLongLong(args[1]);
    if (acked_offset == -1 && PyErr_Occurred())
        return NULL;
    long long written = 0, before = 0;
    PyObject *v = PyDict_GetItemWithError(w->t.written, args[0]);
    if (v != NULL) {
        written = PyLong_AsLongLong(v);
        if (written == -1 && PyErr_Occurred())
            return NULL;
    }
    else if (PyErr_Occurred())
        return NULL;
    long long acked = acked_offset < written ? acked_offset : written;
    v = PyDict_GetItemWithError(w->acked, args[0]);
    if (v != NULL) {
        before = PyLong_AsLongLong(v);
        if (before == -1 && PyErr_Occurred())
            return NULL;
    }
    else if (PyErr_Occurred())
        return NULL;
    w->t.unacked -= acked - before;
    PyObject *acked_obj = PyLong_FromLongLong(acked);
    if (acked_obj == NULL)
        return NULL;
    int rc = PyDict_SetItem(w->acked, args[0], acked_obj);
    Py_DECREF(acked_obj);
    if (rc < 0)
        return NULL;
    if (w->fill_on_ack && writer_fill(w) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyMethodDef Writer_methods[] = {
    WRITER_TURNS_METHODS,
    {"fill", (PyCFunction)Writer_fill, METH_NOARGS, "Keep the congestion window written."},
    {"on_stream_acked", (PyCFunction)(void (*)(void))Writer_on_stream_acked, METH_FASTCALL,
     "on_stream_acked(stream_id, acked_offset): the transport's acknowledgement."},
    {NULL},
};

static PyMemberDef Writer_members[] = {
    WRITER_TURNS_MEMBERS(WriterObject),
    {"endpoint", T_OBJECT, offsetof(WriterObject, endpoint), READONLY, NULL},
    {"fill_on_ack", T_BOOL, offsetof(WriterObject, fill_on_ack), READONLY, NULL},
    {"ahead_windows", T_LONGLONG, offsetof(WriterObject, ahead_windows), 0, "windows written beyond the window"},
    {"ahead_bytes", T_LONGLONG, offsetof(WriterObject, ahead_bytes), 0, "bytes written beyond those"},
    {NULL},
};

static PyGetSetDef Writer_getset[] = {
    {"waiting", (getter)Writer_get_waiting, NULL, "some response still has bytes to write", NULL},
    {NULL},
};

static PyTypeObject WriterType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "simulator.net._tcp.ResponseWriter",
    .tp_doc = "ResponseWriter(endpoint, chunk_bytes, written, on_written, fill_on_ack): writer.ResponseWriter's C twin.",
    .tp_basicsize = sizeof(WriterObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_new = Writer_new,
    .tp_dealloc = (destructor)Writer_dealloc,
    .tp_traverse = (traverseproc)Writer_traverse,
    .tp_clear = (inquiry)Writer_clear,
    .tp_methods = Writer_methods,
    .tp_members = Writer_members,
    .tp_getset = Writer_getset,
};

/* -- module -------------------------------------------------------------------------- */

static PyObject *
register_no_loss(PyObject *module, PyObject *cls)
{
    if (!PyType_Check(cls)) {
        PyErr_SetString(PyExc_TypeError, "register_no_loss(cls) takes the NoLoss class");
        return NULL;
    }
    Py_XSETREF(no_loss_type, Py_NewRef(cls));
    Py_RETURN_NONE;
}

static PyObject *
register_bernoulli(PyObject *module, PyObject *cls)
{
    if (!PyType_Check(cls)) {
        PyErr_SetString(PyExc_TypeError, "register_bernoulli(cls) takes the Bernoulli class");
        return NULL;
    }
    Py_XSETREF(bernoulli_type, Py_NewRef(cls));
    Py_RETURN_NONE;
}

static PyMethodDef module_methods[] = {
    {"register_no_loss", (PyCFunction)register_no_loss, METH_O,
     "register_no_loss(cls): links skip calling lost() on a loss model of this class (it never loses)."},
    {"register_bernoulli", (PyCFunction)register_bernoulli, METH_O,
     "register_bernoulli(cls): links draw this class's lost() themselves (p > 0 and _random() < p)."},
    {NULL},
};

static struct PyModuleDef tcp_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "simulator.net._tcp",
    .m_doc = "The TCP model's per-packet path in C (links, TCP endpoints): the twin of net/link.py and net/tcp.py.",
    .m_size = -1,
    .m_methods = module_methods,
};

#define INTERN(var, text) if ((var = PyUnicode_InternFromString(text)) == NULL) return NULL

PyMODINIT_FUNC
PyInit__tcp(void)
{
    INTERN(str_now, "now");
    INTERN(str_push, "_push");
    INTERN(str_send, "send");
    INTERN(str_lost, "lost");
    INTERN(str_random, "random");
    INTERN(str_bernoulli_p, "p");
    INTERN(str_bernoulli_random, "_random");
    INTERN(str_prob, "prob");
    INTERN(str_max_s, "max_s");
    INTERN(str_size_bytes, "size_bytes");
    INTERN(str_link_seq, "link_seq");
    INTERN(str_sent_s, "sent_s");
    INTERN(str_arrived_s, "arrived_s");
    INTERN(str_payload, "payload");
    INTERN(str_ack, "ack");
    INTERN(str_kind, "kind");
    INTERN(str_sim, "sim");
    INTERN(str_config, "config");
    INTERN(str_name, "name");
    INTERN(str_flush, "_flush");
    INTERN(str_on_segment, "_on_segment");
    INTERN(str_on_ack, "_on_ack");
    INTERN(str_on_control, "_on_control");
    INTERN(str_fire, "_fire");
    INTERN(str_arrive, "_arrive");
    INTERN(str_start_handshake, "_start_handshake");
    INTERN(str_syn, "SYN");
    INTERN(str_syn_ack, "SYN-ACK");
    INTERN(str_ack_kind, "ACK");
    INTERN(str_mss_bytes, "mss_bytes");
    INTERN(str_header_overhead_bytes, "header_overhead_bytes");
    INTERN(str_cc, "cc");
    INTERN(str_initial_window_segments, "initial_window_segments");
    INTERN(str_min_rto_s, "min_rto_s");
    INTERN(str_initial_rtt_s, "initial_rtt_s");
    INTERN(str_echo_s, "echo_s");
    INTERN(str_timestamps, "timestamps");
    INTERN(str_sack, "sack");
    INTERN(str_cwnd_in_packets, "cwnd_in_packets");
    INTERN(str_hystart, "hystart");
    INTERN(str_ack_every_packets, "ack_every_packets");
    INTERN(str_max_ack_delay_s, "max_ack_delay_s");
    INTERN(str_packet_threshold, "packet_threshold");
    INTERN(str_mtu_bytes, "mtu_bytes");
    if ((empty_bytes = PyBytes_FromStringAndSize(NULL, 0)) == NULL || (empty_tuple = PyTuple_New(0)) == NULL)
        return NULL;
    PyTypeObject *types[] = {&PacketType, &LinkStatsType, &LinkType, &LaterType, &DelayedLinkType, &SegmentType,
                             &AckType, &ControlType, &RttType, &CcType, &TimersType, &EndpointType, &WriterType, &TreeType};
    for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
        if (PyType_Ready(types[i]) < 0)
            return NULL;
    PyObject *new_cap = PyCapsule_New((void *)packet_c_new, PACKET_NEW_CAPSULE, NULL);
    int new_rc = new_cap == NULL ? -1 : PyDict_SetItemString(PacketType.tp_dict, "_c_new", new_cap);
    Py_XDECREF(new_cap);
    if (new_rc < 0)
        return NULL;
    PyType_Modified(&PacketType);
    /* The C send of these two link types for the QUIC twin (_quic.c's send_on_link): any_link_send
     * in a capsule on the type, so a core calls the send of the very module that made its link. */
    PyTypeObject *link_types[] = {&LinkType, &DelayedLinkType};
    for (size_t i = 0; i < 2; i++) {
        PyObject *cap = PyCapsule_New((void *)any_link_send, LINK_SEND_CAPSULE, NULL);
        int rc = cap == NULL ? -1 : PyDict_SetItemString(link_types[i]->tp_dict, "_c_send", cap);
        Py_XDECREF(cap);
        if (rc < 0)
            return NULL;
        PyType_Modified(link_types[i]);
    }
    PyObject *m = PyModule_Create(&tcp_module);
    if (m == NULL)
        return NULL;
    const char *names[] = {"Packet", "LinkStats", "Link", "_Later", "DelayedLink", "TcpSegment", "TcpAck",
                           "TcpControl", "RttEstimator", "CongestionControl", "TimerSlots", "TcpEndpoint",
                           "ResponseWriter", "StrideTree"};
    for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
        if (PyModule_AddObjectRef(m, names[i], (PyObject *)types[i]) < 0) {
            Py_DECREF(m);
            return NULL;
        }
    }
    return m;
}
