/* The RTT estimator and the congestion controllers in C, shared by the TCP model's twin
 * (simulator/net/_tcp.c) and the QUIC model's (simulator/net/_quic.c): the C twins of
 * simulator/net/cc.py's RttEstimator, Reno and Cubic (the Python reference), with the float
 * helpers that make every number come out as Python computes it.
 *
 * Written by hand (moved here from _tcp.c, unchanged, when the QUIC twin came to need the
 * same estimator and windows).  Each including module defines NET_MODULE ("simulator.net._tcp",
 * ...), which names the types, and the enum CC_RENO / CC_CUBIC before including this.
 * Everything here is static: each extension gets its own copy of the types.
 */
#ifndef NET_CC_H
#define NET_CC_H

/* Python's max(a, b) and min(a, b) on floats: the first argument unless the second is
 * strictly greater (smaller). */
static inline double py_max(double a, double b) { return b > a ? b : a; }
static inline double py_min(double a, double b) { return b < a ? b : a; }

/* CPython's float ** float (Objects/floatobject.c, float_pow) for the finite values
 * CUBIC raises: the same special cases, and a negative base raised to an odd integer
 * power computed as -(|base| ** power). */
static int
py_float_pow(double iv, double iw, double *out)
{
    int negate_result = 0;
    if (iw == 0.0) {
        *out = 1.0;
        return 0;
    }
    if (isnan(iv) || isnan(iw) || isinf(iv) || isinf(iw)) {
        *out = pow(iv, iw);
        return 0;
    }
    if (iv == 0.0) {
        if (iw < 0.0) {
            PyErr_SetString(PyExc_ZeroDivisionError, "0.0 cannot be raised to a negative power");
            return -1;
        }
        /* an odd integer power keeps the sign of zero */
        int odd = fmod(fabs(iw), 2.0) == 1.0;
        *out = odd ? iv : 0.0;
        return 0;
    }
    if (iv < 0.0) {
        if (iw != floor(iw)) {
            PyErr_SetString(PyExc_ValueError, "negative base raised to a fractional power");
            return -1;
        }
        iv = -iv;
        negate_result = fmod(fabs(iw), 2.0) == 1.0;
    }
    if (iv == 1.0) {
        *out = negate_result ? -1.0 : 1.0;
        return 0;
    }
    double ix = pow(iv, iw);
    *out = negate_result ? -ix : ix;
    return 0;
}

/* A number that is a Python int or float, as Python's arithmetic leaves it. */
static PyObject *
number(double v, int is_int)
{
    if (is_int)
        return PyLong_FromDouble(v);
    return PyFloat_FromDouble(v);
}

/* -- RttEstimator ---------------------------------------------------------------------- */

typedef struct {
    PyObject_HEAD
    double initial_rtt_s, min_rto_s, max_rto_s, granularity_s;
    double srtt_s, rttvar_s, min_rtt_s, latest_rtt_s;
    char has_srtt;
    char srtt_int, min_int, latest_int;     /* the value came from a Python int (update(int)) */
} RttObject;

static PyTypeObject RttType;

static void
rtt_update(RttObject *r, double sample_s, double ack_delay_s, int sample_int)
{
    r->latest_rtt_s = sample_s;
    r->latest_int = (char)sample_int;
    if (sample_s < r->min_rtt_s) {
        r->min_rtt_s = sample_s;
        r->min_int = (char)sample_int;
    }
    if (!r->has_srtt) {                           /* RFC 6298 (2.2) */
        r->srtt_s = sample_s;
        r->srtt_int = (char)sample_int;
        r->has_srtt = 1;
        r->rttvar_s = sample_s / 2;
        return;
    }
    double adjusted = sample_s;                   /* RFC 9002 section 5.3 */
    if (sample_s - ack_delay_s >= r->min_rtt_s)
        adjusted = sample_s - ack_delay_s;
    r->rttvar_s = 0.75 * r->rttvar_s + 0.25 * fabs(r->srtt_s - adjusted);   /* RFC 6298 (2.3) */
    r->srtt_s = 0.875 * r->srtt_s + 0.125 * adjusted;
    r->srtt_int = 0;
}

static inline double
rtt_smoothed(RttObject *r)
{
    return r->has_srtt ? r->srtt_s : r->initial_rtt_s;
}

/* Linux's RTO (cc.RttEstimator.rto_s): SRTT + max(G, 4 * RTTVAR, min_rto), at most max_rto. */
static inline double
rtt_rto(RttObject *r)
{
    if (!r->has_srtt)
        return py_max(r->min_rto_s, py_min(r->max_rto_s, 1.0));
    double rto = r->srtt_s + py_max(py_max(r->granularity_s, 4 * r->rttvar_s), r->min_rto_s);
    return py_min(r->max_rto_s, rto);
}

static RttObject *
rtt_new(double initial_rtt_s, double min_rto_s)
{
    RttObject *r = PyObject_New(RttObject, &RttType);
    if (r == NULL)
        return NULL;
    r->initial_rtt_s = initial_rtt_s;
    r->min_rto_s = min_rto_s;
    r->max_rto_s = 120.0;
    r->granularity_s = 0.001;
    r->srtt_s = 0.0;
    r->has_srtt = 0;
    r->rttvar_s = initial_rtt_s / 2;
    r->min_rtt_s = INFINITY;
    r->latest_rtt_s = initial_rtt_s;
    r->srtt_int = r->min_int = r->latest_int = 0;
    return r;
}

static PyObject *
Rtt_update(RttObject *r, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs < 1 || nargs > 2) {
        PyErr_SetString(PyExc_TypeError, "update(sample_s, ack_delay_s=0.0)");
        return NULL;
    }
    double sample = PyFloat_AsDouble(args[0]);
    if (sample == -1.0 && PyErr_Occurred())
        return NULL;
    double delay = 0.0;
    if (nargs == 2) {
        delay = PyFloat_AsDouble(args[1]);
        if (delay == -1.0 && PyErr_Occurred())
            return NULL;
    }
    rtt_update(r, sample, delay, PyLong_Check(args[0]));
    Py_RETURN_NONE;
}

static PyObject *
Rtt_rto_s(RttObject *r, PyObject *unused)
{
    return PyFloat_FromDouble(rtt_rto(r));
}

static PyObject *
Rtt_pto_s(RttObject *r, PyObject *const *args, Py_ssize_t nargs)
{
    double max_ack_delay = 0.025;
    if (nargs >= 1) {
        max_ack_delay = PyFloat_AsDouble(args[0]);
        if (max_ack_delay == -1.0 && PyErr_Occurred())
            return NULL;
    }
    return PyFloat_FromDouble(rtt_smoothed(r) + py_max(4 * r->rttvar_s, r->granularity_s) + max_ack_delay);
}

static PyObject *
Rtt_get_srtt(RttObject *r, void *c)
{
    if (!r->has_srtt)
        Py_RETURN_NONE;
    return number(r->srtt_s, r->srtt_int);
}

static PyObject *
Rtt_get_smoothed(RttObject *r, void *c)
{
    return r->has_srtt ? number(r->srtt_s, r->srtt_int) : PyFloat_FromDouble(r->initial_rtt_s);
}

static PyObject *
Rtt_get_min(RttObject *r, void *c) { return number(r->min_rtt_s, r->min_int); }

static PyObject *
Rtt_get_latest(RttObject *r, void *c) { return number(r->latest_rtt_s, r->latest_int); }

static PyMethodDef Rtt_methods[] = {
    {"update", (PyCFunction)(void (*)(void))Rtt_update, METH_FASTCALL, "update(sample_s, ack_delay_s=0.0)"},
    {"rto_s", (PyCFunction)Rtt_rto_s, METH_NOARGS, "RFC 6298 retransmission timeout"},
    {"pto_s", (PyCFunction)(void (*)(void))Rtt_pto_s, METH_FASTCALL, "RFC 9002 probe timeout"},
    {NULL},
};

static PyMemberDef Rtt_members[] = {
    {"initial_rtt_s", T_DOUBLE, offsetof(RttObject, initial_rtt_s), READONLY, NULL},
    {"min_rto_s", T_DOUBLE, offsetof(RttObject, min_rto_s), READONLY, NULL},
    {"max_rto_s", T_DOUBLE, offsetof(RttObject, max_rto_s), READONLY, NULL},
    {"granularity_s", T_DOUBLE, offsetof(RttObject, granularity_s), READONLY, NULL},
    {"rttvar_s", T_DOUBLE, offsetof(RttObject, rttvar_s), READONLY, NULL},
    {NULL},
};

static PyGetSetDef Rtt_getset[] = {
    {"srtt_s", (getter)Rtt_get_srtt, NULL, NULL, NULL},
    {"smoothed_s", (getter)Rtt_get_smoothed, NULL, NULL, NULL},
    {"min_rtt_s", (getter)Rtt_get_min, NULL, NULL, NULL},
    {"latest_rtt_s", (getter)Rtt_get_latest, NULL, NULL, NULL},
    {NULL},
};

static PyTypeObject RttType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = NET_MODULE ".RttEstimator",
    .tp_doc = "An endpoint's RTT estimator (cc.RttEstimator's C twin).",
    .tp_basicsize = sizeof(RttObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_dealloc = (destructor)PyObject_Free,
    .tp_methods = Rtt_methods,
    .tp_members = Rtt_members,
    .tp_getset = Rtt_getset,
};

/* -- CongestionControl (Reno, Cubic) ------------------------------------------------------- */

#define CUBIC_C 0.4
#define CUBIC_BETA 0.7

typedef struct {
    PyObject_HEAD
    int kind;
    long long mss, min_window;
    double cwnd, ssthresh;
    char cwnd_int, ssthresh_int;   /* Python would hold an int there (set from an int) */
    double w_max, k, epoch_start, w_est;
    char has_epoch;
} CcObject;

static PyTypeObject CcType;

static CcObject *
cc_new(int kind, long long mss, long long initial_window_segments)
{
    CcObject *c = PyObject_New(CcObject, &CcType);
    if (c == NULL)
        return NULL;
    c->kind = kind;
    c->mss = mss;
    c->cwnd = (double)(initial_window_segments * mss);
    c->ssthresh = INFINITY;
    c->cwnd_int = c->ssthresh_int = 0;
    c->min_window = 2 * mss;
    c->w_max = c->k = c->epoch_start = c->w_est = 0.0;
    c->has_epoch = 0;
    return c;
}

static void
reno_on_ack(CcObject *c, long long acked)
{
    if (c->cwnd < c->ssthresh) {
        /* RFC 3465 appropriate byte counting, L = 2 SMSS per ack. */
        long long inc = acked < 2 * c->mss ? acked : 2 * c->mss;
        c->cwnd += (double)inc;
    }
    else {
        /* RFC 5681 (3): cwnd += SMSS*SMSS/cwnd per ack. */
        c->cwnd += (double)(c->mss * acked) / c->cwnd;
        c->cwnd_int = 0;
    }
}

static int
cc_on_ack(CcObject *c, long long acked, double now_s, double srtt_s)
{
    if (c->kind == CC_RENO || c->cwnd < c->ssthresh) {
        reno_on_ack(c, acked);
        return 0;
    }
    double mss = (double)c->mss;
    double cwnd_seg = c->cwnd / mss;
    if (!c->has_epoch) {                          /* RFC 9438 section 4.2 */
        c->epoch_start = now_s;
        c->has_epoch = 1;
        if (c->w_max < cwnd_seg)
            c->w_max = cwnd_seg;
        if (py_float_pow((c->w_max - cwnd_seg) / CUBIC_C, 1.0 / 3.0, &c->k) < 0)
            return -1;
        c->w_est = cwnd_seg;
    }
    double t = now_s - c->epoch_start;
    double cube;
    if (py_float_pow(t + srtt_s - c->k, 3.0, &cube) < 0)
        return -1;
    double target = CUBIC_C * cube + c->w_max;
    target = py_min(py_max(target, cwnd_seg), 1.5 * cwnd_seg);
    double alpha = 3 * (1 - CUBIC_BETA) / (1 + CUBIC_BETA);
    c->w_est += alpha * ((double)acked / mss) / cwnd_seg;
    if (c->w_est > target)
        target = c->w_est;
    c->cwnd += (target - cwnd_seg) / cwnd_seg * (double)acked;
    c->cwnd_int = 0;
    return 0;
}

static void
cc_on_congestion_event(CcObject *c)
{
    double mw = (double)c->min_window;
    if (c->kind == CC_CUBIC) {
        double cwnd_seg = c->cwnd / (double)c->mss;
        if (cwnd_seg < c->w_max)                  /* fast convergence (RFC 9438 section 4.7) */
            c->w_max = cwnd_seg * (1 + CUBIC_BETA) / 2;
        else
            c->w_max = cwnd_seg;
        double reduced = c->cwnd * CUBIC_BETA;
        c->ssthresh_int = mw > reduced;
        c->ssthresh = py_max(reduced, mw);
        c->has_epoch = 0;
    }
    else {
        double half = c->cwnd / 2;
        c->ssthresh_int = mw > half;
        c->ssthresh = py_max(half, mw);
    }
    c->cwnd = c->ssthresh;
    c->cwnd_int = c->ssthresh_int;
}

static inline void
cc_on_timeout(CcObject *c, long long flight_bytes)
{
    double half = (double)flight_bytes / 2;
    double mw = (double)c->min_window;
    c->ssthresh_int = mw > half;
    c->ssthresh = py_max(half, mw);
    c->cwnd = (double)c->mss;
    c->cwnd_int = 0;
    if (c->kind == CC_CUBIC)
        c->has_epoch = 0;
}

static PyObject *
Cc_get_cwnd(CcObject *c, void *x) { return number(c->cwnd, c->cwnd_int); }

static int
Cc_set_cwnd(CcObject *c, PyObject *v, void *x)
{
    if (v == NULL) {
        PyErr_SetString(PyExc_AttributeError, "cannot delete cwnd_bytes");
        return -1;
    }
    double d = PyFloat_AsDouble(v);
    if (d == -1.0 && PyErr_Occurred())
        return -1;
    c->cwnd = d;
    c->cwnd_int = PyLong_Check(v);
    return 0;
}

static PyObject *
Cc_get_ssthresh(CcObject *c, void *x) { return number(c->ssthresh, c->ssthresh_int); }

static int
Cc_set_ssthresh(CcObject *c, PyObject *v, void *x)
{
    if (v == NULL) {
        PyErr_SetString(PyExc_AttributeError, "cannot delete ssthresh_bytes");
        return -1;
    }
    double d = PyFloat_AsDouble(v);
    if (d == -1.0 && PyErr_Occurred())
        return -1;
    c->ssthresh = d;
    c->ssthresh_int = PyLong_Check(v);
    return 0;
}

static PyObject *
Cc_get_name(CcObject *c, void *x) { return PyUnicode_FromString(c->kind == CC_CUBIC ? "cubic" : "reno"); }

static PyObject *
Cc_get_slow_start(CcObject *c, void *x) { return PyBool_FromLong(c->cwnd < c->ssthresh); }

static PyObject *
Cc_get_epoch(CcObject *c, void *x)
{
    if (!c->has_epoch)
        Py_RETURN_NONE;
    return PyFloat_FromDouble(c->epoch_start);
}

static PyMemberDef Cc_members[] = {
    {"mss_bytes", T_LONGLONG, offsetof(CcObject, mss), READONLY, NULL},
    {"min_window_bytes", T_LONGLONG, offsetof(CcObject, min_window), READONLY, NULL},
    {"w_max_segments", T_DOUBLE, offsetof(CcObject, w_max), READONLY, NULL},
    {"k_s", T_DOUBLE, offsetof(CcObject, k), READONLY, NULL},
    {"w_est_segments", T_DOUBLE, offsetof(CcObject, w_est), READONLY, NULL},
    {NULL},
};

static PyGetSetDef Cc_getset[] = {
    {"cwnd_bytes", (getter)Cc_get_cwnd, (setter)Cc_set_cwnd, NULL, NULL},
    {"ssthresh_bytes", (getter)Cc_get_ssthresh, (setter)Cc_set_ssthresh, NULL, NULL},
    {"name", (getter)Cc_get_name, NULL, "reno or cubic", NULL},
    {"in_slow_start", (getter)Cc_get_slow_start, NULL, NULL, NULL},
    {"epoch_start_s", (getter)Cc_get_epoch, NULL, NULL, NULL},
    {NULL},
};

static PyTypeObject CcType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = NET_MODULE ".CongestionControl",
    .tp_doc = "An endpoint's Reno or CUBIC window (cc.Reno / cc.Cubic's C twin).",
    .tp_basicsize = sizeof(CcObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_dealloc = (destructor)PyObject_Free,
    .tp_members = Cc_members,
    .tp_getset = Cc_getset,
};

#endif /* NET_CC_H */
