/* The QUIC model's per-packet recovery path in C: simulator.net._quic.
 *
 * Written by hand, as the TCP model's twin (_tcp.c) is: no library models QUIC's loss
 * recovery inside this workbench's engine.  This is the C twin of part of the Python
 * reference, which defines the behaviour and stays selectable (simulator/net/native.py,
 * WORKBENCH_NET=python):
 *
 *   QuicCore     simulator/net/quic/recovery.py  LossRecovery: the sent-packet records,
 *                                                ACK frames with ranges, RTT samples, loss
 *                                                detection (packet and time threshold), the
 *                                                PTO deadline and backoff, the window
 *                simulator/net/quic/ack.py       AckGeneration: received packet numbers as
 *                                                ranges, ACK frames and their sizes
 *                simulator/net/quic/pacer.py     Pacer
 *                simulator/net/cc.py             RttIncreaseMonitor
 *   RttEstimator, CongestionControl  (_cc.h, shared with _tcp.c)  cc.RttEstimator, Reno, Cubic
 *
 * One QuicCore per endpoint, driven by simulator/net/quic/native.py's NativeQuicEndpoint
 * with coarse calls: one per packet sent, per packet number received, per ACK frame (two:
 * before and after the stream bookkeeping, which stays in Python with the streams), per
 * loss timer.  The streams, the packet builder, the handshake and the timers stay Python.
 *
 * Same results, by construction: the same arithmetic in the same order as the reference
 * (Python's min()/max() tie rules, no fused multiply-add: built with -ffp-contract=off),
 * the same packets declared lost in the same order, and no event pushed from here (the
 * Python side sets the timers and schedules the flushes at the reference's points).
 * tests/test_net_quic_native.py runs both and compares every event.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#define NET_MODULE "simulator.net._quic"
enum { CC_RENO = 0, CC_CUBIC = 1 };
#include "_cc.h"

#define MAX_ACK_RANGES 32          /* packet.MAX_ACK_RANGES: ranges kept and reported by a receiver */
#define ACK_DELAY_EXPONENT 3       /* packet.ACK_DELAY_EXPONENT (RFC 9000 section 18.2) */
#define LOSS_EPSILON_S 1e-9        /* recovery.LOSS_EPSILON_S */
#define MONITOR_SIZE 5             /* cc.RttIncreaseMonitor's defaults */
#define MONITOR_GRANULARITY_S 0.001

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
    double interval_s, credit_s, credit_max_s, updated_s;
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

/* Packets declared lost now, appended to `lost` (a list) in pn order, with the bookkeeping
 * of _on_packets_lost except re-queueing their data (Python's); the loss timer's deadline. */
static int
detect_lost(CoreObject *c, double now, PyObject *lost)
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
            if (PyList_Append(lost, s->packet) < 0)
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

/* -- the QuicCore type -- */

static int
Core_init(CoreObject *c, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"cc", "max_datagram_bytes", "initial_window_segments", "initial_rtt_s",
                             "max_ack_delay_s", "time_threshold", "packet_threshold", "pacing",
                             "slow_start_rtt_exit", NULL};
    const char *cc_name;
    long long mdb, iw, threshold;
    double initial_rtt, max_ack_delay, time_threshold;
    int pacing, monitor;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "sLLdddLpp", kwlist, &cc_name, &mdb, &iw, &initial_rtt,
                                     &max_ack_delay, &time_threshold, &threshold, &pacing, &monitor))
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
    for (Py_ssize_t i = c->head; i < c->head + c->len; i++)
        Py_VISIT(c->sent[i].packet);
    return 0;
}

static int
Core_clear(CoreObject *c)
{
    Py_CLEAR(c->cwnd_log);
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
                return NULL;
            }
            c->sent = buf;
            c->cap = cap;
        }
    }
    Sent *s = &c->sent[c->head + c->len];
    Py_INCREF(args[0]);
    s->packet = args[0];
    s->pn = pn;
    s->size = size;
    s->time_sent = t;
    s->done = 0;
    c->len++;
    c->outstanding++;
    c->bytes_in_flight += size;
    c->last_ack_eliciting_s = t;
    Py_RETURN_NONE;
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
static PyObject *
Core_on_ack(CoreObject *c, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3 || !PyList_Check(args[0])) {
        PyErr_SetString(PyExc_TypeError, "on_ack(ranges: list, ack_delay_s, now)");
        return NULL;
    }
    PyObject *ranges = args[0];
    double ack_delay, now;
    if (get_double(args[1], &ack_delay) < 0 || get_double(args[2], &now) < 0)
        return NULL;
    while (c->len > 0 && c->sent[c->head].done) {
        Py_CLEAR(c->sent[c->head].packet);
        c->head++;
        c->len--;
    }
    if (c->len == 0)
        Py_RETURN_NONE;
    long long smallest = c->sent[c->head].pn;
    Py_ssize_t nr = PyList_GET_SIZE(ranges);
    if (nr == 0)
        Py_RETURN_NONE;
    long long largest_in_frame = 0;
    /* newly acknowledged, highest first: record indices */
    Py_ssize_t cap = 16, n = 0;
    Py_ssize_t *idx = PyMem_Malloc(cap * sizeof(Py_ssize_t));
    if (idx == NULL)
        return PyErr_NoMemory();
    for (Py_ssize_t k = 0; k < nr; k++) {           /* highest first */
        PyObject *rg = PyList_GET_ITEM(ranges, k);
        if (!PyTuple_Check(rg) || PyTuple_GET_SIZE(rg) != 2) {
            PyMem_Free(idx);
            PyErr_SetString(PyExc_TypeError, "an ACK range is a (low, high) tuple");
            return NULL;
        }
        long long low = PyLong_AsLongLong(PyTuple_GET_ITEM(rg, 0));
        long long high = PyLong_AsLongLong(PyTuple_GET_ITEM(rg, 1));
        if ((low == -1 || high == -1) && PyErr_Occurred()) {
            PyMem_Free(idx);
            return NULL;
        }
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
                Py_ssize_t *grown = PyMem_Realloc(idx, cap * sizeof(Py_ssize_t));
                if (grown == NULL) {
                    PyMem_Free(idx);
                    return PyErr_NoMemory();
                }
                idx = grown;
            }
            idx[n++] = i;
        }
    }
    if (n == 0) {
        PyMem_Free(idx);
        Py_RETURN_NONE;
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
    PyObject *out = PyList_New(n);
    if (out == NULL) {
        PyMem_Free(idx);
        return NULL;
    }
    for (Py_ssize_t j = 0; j < n; j++) {           /* oldest first */
        Sent *s = &c->sent[idx[n - 1 - j]];
        s->done = 1;
        c->outstanding -= 1;
        c->bytes_in_flight -= s->size;
        if (s->time_sent > c->recovery_start_s && cc_on_ack(c->cc, s->size, now, srtt) < 0) {
            PyMem_Free(idx);
            Py_DECREF(out);
            return NULL;
        }
        Py_INCREF(s->packet);
        PyList_SET_ITEM(out, j, s->packet);
    }
    PyMem_Free(idx);
    return out;
}

/* after_ack(now): the second half of recovery._on_ack_frame, after the streams' bookkeeping:
 * the window log, loss detection (A.10), the spurious-PTO watch, the PTO backoff reset (A.7).
 * The packets declared lost (pn order; their data is Python's to queue again), or None. */
static PyObject *
Core_after_ack(CoreObject *c, PyObject *arg)
{
    double now;
    if (get_double(arg, &now) < 0)
        return NULL;
    if (log_cwnd(c, now) < 0)
        return NULL;
    PyObject *lost = PyList_New(0);
    if (lost == NULL)
        return NULL;
    if (detect_lost(c, now, lost) < 0) {
        Py_DECREF(lost);
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
    if (PyList_GET_SIZE(lost) == 0) {
        Py_DECREF(lost);
        Py_RETURN_NONE;
    }
    return lost;
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
        PyObject *lost = PyList_New(0);
        if (lost == NULL)
            return NULL;
        if (detect_lost(c, now, lost) < 0) {
            Py_DECREF(lost);
            return NULL;
        }
        return lost;
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
        return PyFloat_FromDouble(now + c->interval_s);
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
    return PyBool_FromLong(largest >= 0 && (pn < largest || pn > largest + 1));
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

/* ack_frame(now): ((ranges highest first, ack_delay_s), size) (RFC 9000 section 19.3). */
static PyObject *
Core_ack_frame(CoreObject *c, PyObject *arg)
{
    double now;
    if (get_double(arg, &now) < 0)
        return NULL;
    int n = c->nranges;
    if (n == 0) {
        PyErr_SetString(PyExc_IndexError, "no packet received");
        return NULL;
    }
    PyObject *ranges = PyList_New(n);
    if (ranges == NULL)
        return NULL;
    for (int i = 0; i < n; i++) {
        PyObject *rg = Py_BuildValue("(LL)", c->lows[n - 1 - i], c->highs[n - 1 - i]);
        if (rg == NULL) {
            Py_DECREF(ranges);
            return NULL;
        }
        PyList_SET_ITEM(ranges, i, rg);
    }
    double ack_delay_s = now - c->largest_recv_time_s;
    return Py_BuildValue("((Nd)L)", ranges, ack_delay_s, ack_frame_size(c, ack_delay_s));
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
    {NULL},
};

static PyGetSetDef Core_getset[] = {
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

/* -- module -------------------------------------------------------------------------- */

static struct PyModuleDef quic_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "simulator.net._quic",
    .m_doc = "The QUIC model's per-packet recovery path in C: the twin of net/quic/recovery.py and ack.py.",
    .m_size = -1,
};

PyMODINIT_FUNC
PyInit__quic(void)
{
    PyTypeObject *types[] = {&RttType, &CcType, &CoreType};
    for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
        if (PyType_Ready(types[i]) < 0)
            return NULL;
    PyObject *m = PyModule_Create(&quic_module);
    if (m == NULL)
        return NULL;
    const char *names[] = {"RttEstimator", "CongestionControl", "QuicCore"};
    for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
        if (PyModule_AddObjectRef(m, names[i], (PyObject *)types[i]) < 0) {
            Py_DECREF(m);
            return NULL;
        }
    }
    return m;
}
