/* The lab's emulated link: a relay between two TUN devices, one in the client network
 * namespace and one in the server's, in Mahimahi's design (a TUN device at each end and a
 * user-space process carrying every IP packet between them).  Written by hand: the kernel
 * here has no netem, Mahimahi is not packaged, and a Python relay is too jittery on a busy
 * two-core machine to be a measuring instrument.  Python (simulator/lab/relay.py) opens the
 * TUN devices and hands their descriptors to run(); everything per packet happens here,
 * with the GIL released.
 *
 * Each direction is one link with the same semantics as the models' simulator.net.link.Link,
 * so that a lab run and a model run of the same flags describe the same path:
 *   arrival -> drop-tail queue counted in bytes (packets waiting to start transmission)
 *           -> serialization at a constant rate, or on the delivery opportunities of a
 *              packet-delivery trace (Mahimahi's format: one line per opportunity, a time
 *              in ms; each opportunity carries OPPORTUNITY_BYTES; the trace repeats)
 *           -> loss drawn per transmitted packet in send order (none, Bernoulli, or the
 *              Gilbert-Elliott chain: transition first, then the draw in the new state)
 *           -> one-way propagation delay -> written to the other TUN device.
 * Since a packet's whole fate is known when it arrives (the rate is constant or the trace is
 * known), its departure is computed then and each direction's delay line stays in FIFO
 * order: no heap, and a write at most a poll wake-up late.
 *
 * Time is CLOCK_MONOTONIC (this is an instrument on the wall clock, not a simulation);
 * the loss draws are a seeded splitmix64 stream per direction, so a seed gives the same
 * loss pattern over the same packet sequence.
 *
 * run() returns when the control descriptor becomes readable or reaches end of file (the
 * driver asks it to stop, or died), with each direction's counters.
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#define OPPORTUNITY_BYTES 1500     /* bytes one delivery opportunity of a trace carries */
#define MAX_PACKET 65536           /* a TUN read never exceeds the device MTU; room to spare */
#define READ_BURST 64              /* reads per device per wake-up, so deliveries stay timely */
#define NS_PER_S 1000000000LL

typedef struct Pkt {
    struct Pkt *next;
    int64_t due_ns;                /* when it leaves the delay line (written to the TUN) */
    int64_t start_ns;              /* when its transmission starts (it leaves the queue) */
    uint32_t len;
    int lost;                      /* lost on the wire: it held the link, it is never written */
    uint8_t data[];
} Pkt;

typedef struct {
    /* parameters */
    int64_t delay_ns;
    double rate_bps;               /* > 0: constant rate; 0: trace (if given) or unlimited */
    int64_t *trace_ms;             /* delivery opportunities, ms from the start, ascending */
    Py_ssize_t trace_n;
    int64_t trace_period_ms;       /* the trace repeats with this period (its last time) */
    int64_t queue_limit_bytes;     /* < 0: unlimited */
    int loss_kind;                 /* 0 none, 1 Bernoulli(p), 2 Gilbert-Elliott(p, r, h, k) */
    double p, r, h, k;
    uint64_t rng;
    int bad;                       /* Gilbert-Elliott state */
    /* state */
    int64_t busy_until_ns;         /* when the last accepted packet finishes transmitting */
    int64_t opp_index;             /* trace: the opportunity now being filled */
    int64_t opp_left;              /* trace: bytes left in it */
    Pkt *head, *tail;              /* the delay line and queue, in departure order */
    Pkt *queued;                   /* first packet whose transmission has not started */
    int64_t queued_bytes;
    int64_t held_bytes;            /* everything the direction holds (queue + delay line) */
    /* counters */
    unsigned long long packets_in, bytes_in, packets_dropped, packets_lost, packets_out,
        bytes_out, write_errors, max_queue_bytes, overflow_drops;
} Dir;

static int64_t g_start_ns;
static int64_t g_max_held_bytes = 256LL << 20;   /* a hard cap on what one direction holds */

static int64_t mono_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * NS_PER_S + ts.tv_nsec;
}

/* splitmix64: a small, well-mixed seeded stream; a double in [0, 1) from its top 53 bits. */
static double uniform(Dir *d) {
    uint64_t z = (d->rng += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    z ^= z >> 31;
    return (double)(z >> 11) * (1.0 / 9007199254740992.0);
}

static int lost(Dir *d) {
    switch (d->loss_kind) {
    case 1:
        return d->p > 0.0 && uniform(d) < d->p;
    case 2: {
        /* Gilbert's convention, as the models' GilbertElliott: move the chain, then draw. */
        if (d->bad) {
            if (uniform(d) < d->r) d->bad = 0;
        } else if (uniform(d) < d->p) {
            d->bad = 1;
        }
        double q = d->bad ? d->k : d->h;
        return q > 0.0 && uniform(d) < q;
    }
    default:
        return 0;
    }
}

/* ---------------------------------------------------------------- trace opportunities */

static int64_t opp_time_ns(const Dir *d, int64_t index) {
    int64_t cycle = index / d->trace_n, i = index % d->trace_n;
    return g_start_ns + (cycle * d->trace_period_ms + d->trace_ms[i]) * 1000000LL;
}

/* The index of the first opportunity at or after t_ns. */
static int64_t opp_at_or_after(const Dir *d, int64_t t_ns) {
    int64_t rel_ms = (t_ns - g_start_ns + 999999) / 1000000;   /* ms, rounded up */
    if (rel_ms < 0) rel_ms = 0;
    int64_t cycle = rel_ms / d->trace_period_ms, within = rel_ms % d->trace_period_ms;
    Py_ssize_t lo = 0, hi = d->trace_n;                         /* lower_bound(within) */
    while (lo < hi) {
        Py_ssize_t mid = (lo + hi) / 2;
        if (d->trace_ms[mid] < within) lo = mid + 1; else hi = mid;
    }
    int64_t index = cycle * d->trace_n + lo;
    while (opp_time_ns(d, index) < t_ns) index++;               /* rounding at the edges */
    return index;
}

/* ---------------------------------------------------------------- one direction */

/* Move the queue pointer past packets whose transmission has started by now. */
static void drain_queue(Dir *d, int64_t now) {
    while (d->queued && d->queued->start_ns <= now) {
        d->queued_bytes -= d->queued->len;
        d->queued = d->queued->next;
    }
}

static void arrive(Dir *d, const uint8_t *buf, uint32_t len, int64_t now) {
    d->packets_in++;
    d->bytes_in += len;
    int unlimited = d->rate_bps <= 0.0 && d->trace_n == 0;
    int64_t start = now, depart = now;
    if (!unlimited) {
        drain_queue(d, now);
        if (d->busy_until_ns > now) {                       /* busy: it would wait in the queue */
            if (d->queue_limit_bytes >= 0 && d->queued_bytes + len > d->queue_limit_bytes) {
                d->packets_dropped++;                       /* drop-tail */
                return;
            }
            start = d->busy_until_ns;
        }
        if (d->trace_n == 0) {
            depart = start + (int64_t)((double)len * 8.0 * (double)NS_PER_S / d->rate_bps + 0.5);
        } else {
            /* An idle link wastes the opportunities it had nothing for (as Mahimahi's). */
            if (d->busy_until_ns <= now) {
                d->opp_index = opp_at_or_after(d, now);
                d->opp_left = OPPORTUNITY_BYTES;
            } else if (d->opp_left == 0) {
                d->opp_index++;
                d->opp_left = OPPORTUNITY_BYTES;
            }
            start = opp_time_ns(d, d->opp_index);
            int64_t need = len;
            for (;;) {
                int64_t take = need < d->opp_left ? need : d->opp_left;
                need -= take;
                d->opp_left -= take;
                if (need == 0) break;
                d->opp_index++;
                d->opp_left = OPPORTUNITY_BYTES;
            }
            depart = opp_time_ns(d, d->opp_index);
        }
        d->busy_until_ns = depart;
    }
    if (d->held_bytes + len > g_max_held_bytes) {
        d->overflow_drops++;
        return;
    }
    Pkt *pk = malloc(sizeof(Pkt) + len);
    if (!pk) {
        d->overflow_drops++;
        return;
    }
    pk->next = NULL;
    pk->len = len;
    pk->start_ns = start;
    pk->due_ns = depart + d->delay_ns;
    /* It holds the link (and its place in the queue) whatever its fate on the wire, which is
     * drawn now, in send order, as the models' Link does. */
    pk->lost = lost(d);
    if (pk->lost) d->packets_lost++;
    else memcpy(pk->data, buf, len);
    if (d->tail) d->tail->next = pk; else d->head = pk;
    d->tail = pk;
    d->held_bytes += len;
    if (start > now) {                                      /* waits in the queue */
        if (!d->queued) d->queued = pk;
        d->queued_bytes += len;
        if ((unsigned long long)d->queued_bytes > d->max_queue_bytes) d->max_queue_bytes = d->queued_bytes;
    }
}

/* Write every packet that is due; returns the next due time, or -1. */
static int64_t deliver(Dir *d, int out_fd, int64_t now) {
    while (d->head && d->head->due_ns <= now) {
        Pkt *pk = d->head;
        if (d->queued == pk) {                              /* cannot happen (due >= start) */
            d->queued_bytes -= pk->len;
            d->queued = pk->next;
        }
        /* A device that is not up yet answers EIO: the packet is dropped, as a wire would. */
        if (pk->lost) {
            /* lost on the wire: nothing arrives */
        } else if (write(out_fd, pk->data, pk->len) == (ssize_t)pk->len) {
            d->packets_out++;
            d->bytes_out += pk->len;
        } else {
            d->write_errors++;
        }
        d->head = pk->next;
        if (!d->head) d->tail = NULL;
        d->held_bytes -= pk->len;
        free(pk);
    }
    return d->head ? d->head->due_ns : -1;
}

static void free_dir(Dir *d) {
    while (d->head) {
        Pkt *pk = d->head;
        d->head = pk->next;
        free(pk);
    }
    PyMem_Free(d->trace_ms);
    d->trace_ms = NULL;
}

/* ---------------------------------------------------------------- parameters */

static int get_double(PyObject *dict, const char *key, double dflt, double *out) {
    PyObject *v = PyDict_GetItemString(dict, key);          /* borrowed */
    if (!v || v == Py_None) { *out = dflt; return 0; }
    *out = PyFloat_AsDouble(v);
    return (*out == -1.0 && PyErr_Occurred()) ? -1 : 0;
}

static int parse_dir(PyObject *spec, Dir *d, uint64_t seed) {
    if (!PyDict_Check(spec)) {
        PyErr_SetString(PyExc_TypeError, "a direction is a dict");
        return -1;
    }
    memset(d, 0, sizeof *d);
    double delay_s, queue, kind;
    if (get_double(spec, "delay_s", 0.0, &delay_s) < 0 || get_double(spec, "rate_bps", 0.0, &d->rate_bps) < 0 ||
        get_double(spec, "queue_bytes", -1.0, &queue) < 0 || get_double(spec, "loss_kind", 0.0, &kind) < 0 ||
        get_double(spec, "p", 0.0, &d->p) < 0 || get_double(spec, "r", 0.0, &d->r) < 0 ||
        get_double(spec, "h", 0.0, &d->h) < 0 || get_double(spec, "k", 1.0, &d->k) < 0)
        return -1;
    if (!(delay_s >= 0.0 && delay_s < 100.0) || !(d->rate_bps >= 0.0)) {
        PyErr_SetString(PyExc_ValueError, "delay must be in [0, 100) s and the rate >= 0");
        return -1;
    }
    d->delay_ns = (int64_t)(delay_s * NS_PER_S + 0.5);
    d->queue_limit_bytes = queue < 0 ? -1 : (int64_t)queue;
    d->loss_kind = (int)kind;
    d->rng = seed;
    PyObject *trace = PyDict_GetItemString(spec, "trace_ms");
    if (trace && trace != Py_None) {
        PyObject *seq = PySequence_Fast(trace, "trace_ms must be a sequence");
        if (!seq) return -1;
        Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
        d->trace_ms = PyMem_Malloc(sizeof(int64_t) * (n ? n : 1));
        if (!d->trace_ms) { Py_DECREF(seq); PyErr_NoMemory(); return -1; }
        for (Py_ssize_t i = 0; i < n; i++) {
            long long v = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(seq, i));
            if (v == -1 && PyErr_Occurred()) { Py_DECREF(seq); return -1; }
            if (v < 0 || (i && v < d->trace_ms[i - 1])) {
                Py_DECREF(seq);
                PyErr_SetString(PyExc_ValueError, "trace times must be ascending and >= 0");
                return -1;
            }
            d->trace_ms[i] = v;
        }
        Py_DECREF(seq);
        if (n == 0 || d->trace_ms[n - 1] <= 0) {
            PyErr_SetString(PyExc_ValueError, "a trace needs at least one opportunity after 0 ms");
            return -1;
        }
        d->trace_n = n;
        d->trace_period_ms = d->trace_ms[n - 1];
    }
    return 0;
}

static PyObject *dir_stats(const Dir *d) {
    return Py_BuildValue(
        "{s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K}",
        "packets_in", d->packets_in, "bytes_in", d->bytes_in, "packets_dropped", d->packets_dropped,
        "packets_lost", d->packets_lost, "packets_out", d->packets_out, "bytes_out", d->bytes_out,
        "write_errors", d->write_errors, "max_queue_bytes", d->max_queue_bytes,
        "overflow_drops", d->overflow_drops);
}

/* ---------------------------------------------------------------- the loop */

static int set_nonblocking(int fd) {
    int flags = fcntl(fd, F_GETFL);
    return flags < 0 ? -1 : fcntl(fd, F_SETFL, flags | O_NONBLOCK);
}

/* Read what a device has (at most READ_BURST packets); -1 on a device error. */
static int pump(int in_fd, Dir *d, uint8_t *buf) {
    for (int i = 0; i < READ_BURST; i++) {
        ssize_t n = read(in_fd, buf, MAX_PACKET);
        if (n > 0) {
            arrive(d, buf, (uint32_t)n, mono_ns());
            continue;
        }
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return 0;
        return -1;                                  /* 0 bytes or another error: the device is gone */
    }
    return 0;
}

static PyObject *relay_run(PyObject *self, PyObject *args, PyObject *kwargs) {
    static char *kwlist[] = {"client_fd", "server_fd", "control_fd", "uplink", "downlink", "seed", "wake_fd", NULL};
    int client_fd, server_fd, control_fd, wake_fd = -1;
    PyObject *up_spec, *down_spec;
    unsigned long long seed = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "iiiOO|Ki", kwlist, &client_fd, &server_fd, &control_fd,
                                     &up_spec, &down_spec, &seed, &wake_fd))
        return NULL;
    Dir up, down;                                   /* up: client -> server; down: server -> client */
    if (parse_dir(up_spec, &up, seed * 2 + 1) < 0) { free_dir(&up); return NULL; }
    if (parse_dir(down_spec, &down, seed * 2 + 2) < 0) { free_dir(&up); free_dir(&down); return NULL; }
    if (set_nonblocking(client_fd) < 0 || set_nonblocking(server_fd) < 0) {
        free_dir(&up); free_dir(&down);
        return PyErr_SetFromErrno(PyExc_OSError);
    }
    uint8_t *buf = PyMem_Malloc(MAX_PACKET);
    if (!buf) { free_dir(&up); free_dir(&down); return PyErr_NoMemory(); }

    int failed = 0;
    Py_BEGIN_ALLOW_THREADS
    prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);        /* wake-ups to the nanosecond asked, not +50 us */
    g_start_ns = mono_ns();
    /* control_fd: the driver's pipe (readable or closed: stop); wake_fd: Python's signal
     * wake-up pipe (a SIGTERM or SIGHUP arrived while the GIL was released: stop). */
    struct pollfd fds[4] = {{.fd = client_fd, .events = POLLIN}, {.fd = server_fd, .events = POLLIN},
                            {.fd = control_fd, .events = POLLIN}, {.fd = wake_fd, .events = POLLIN}};
    for (;;) {
        int64_t now = mono_ns();
        int64_t next_up = deliver(&up, server_fd, now), next_down = deliver(&down, client_fd, now);
        int64_t next = next_up < 0 ? next_down : (next_down < 0 ? next_up : (next_up < next_down ? next_up : next_down));
        struct timespec ts, *timeout = NULL;
        if (next >= 0) {
            int64_t wait = next - mono_ns();
            if (wait < 0) wait = 0;
            ts.tv_sec = wait / NS_PER_S;
            ts.tv_nsec = wait % NS_PER_S;
            timeout = &ts;
        }
        int n = ppoll(fds, 4, timeout, NULL);   /* a negative wake_fd is ignored */
        if (n < 0) {
            if (errno == EINTR) continue;
            failed = errno;
            break;
        }
        if (fds[2].revents || fds[3].revents) break;   /* asked to stop, the driver is gone, or a signal */
        if ((fds[0].revents & (POLLERR | POLLHUP | POLLNVAL)) || (fds[1].revents & (POLLERR | POLLHUP | POLLNVAL))) {
            failed = EIO;
            break;
        }
        if ((fds[0].revents & POLLIN) && pump(client_fd, &up, buf) < 0) { failed = errno ? errno : EIO; break; }
        if ((fds[1].revents & POLLIN) && pump(server_fd, &down, buf) < 0) { failed = errno ? errno : EIO; break; }
    }
    Py_END_ALLOW_THREADS

    PyMem_Free(buf);
    PyObject *result = NULL;
    if (failed) {
        errno = failed;
        PyErr_SetFromErrno(PyExc_OSError);
    } else {
        PyObject *u = dir_stats(&up), *dn = dir_stats(&down);
        if (u && dn) result = Py_BuildValue("{s:O,s:O}", "uplink", u, "downlink", dn);
        Py_XDECREF(u);
        Py_XDECREF(dn);
    }
    free_dir(&up);
    free_dir(&down);
    return result;
}

static PyMethodDef methods[] = {
    {"run", (PyCFunction)(void (*)(void))relay_run, METH_VARARGS | METH_KEYWORDS,
     "run(client_fd, server_fd, control_fd, uplink, downlink, seed=1, wake_fd=-1) -> counters\n\n"
     "Relay IP packets between two TUN devices through one emulated link per direction until\n"
     "control_fd or wake_fd is readable or closed.  uplink/downlink: dicts with delay_s, rate_bps (0 =\n"
     "unlimited or trace), trace_ms (delivery opportunities) or None, queue_bytes (-1 =\n"
     "unlimited), loss_kind (0 none, 1 Bernoulli p, 2 Gilbert-Elliott p r h k)."},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_relay", "The lab's link relay (C).", -1, methods};

PyMODINIT_FUNC PyInit__relay(void) { return PyModule_Create(&module); }
