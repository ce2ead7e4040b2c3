/* The engine's event queue and run loop in C: simulator._engine.EventQueue.
 *
 * Written by hand (no maintained library has a discrete-event queue keyed by
 * (virtual time, scheduling order) that calls Python callbacks).  It is the C
 * twin of simulator/engine.py's _PyEventQueue, which defines the behaviour:
 *
 *   push(time_s, callback, args)   schedule callback(*args) at time_s; equal
 *                                  times run in push order (FIFO, by seq)
 *   run(sim, until_s, max_events)  pop and call events in (time_s, seq) order,
 *                                  setting sim.now to each event's time_s object;
 *                                  stop before an event later than until_s
 *                                  (sim.now = until_s), after max_events, or after
 *                                  the event that called stop(); returns the count
 *   stop(), stopped                end the running run() after the current event
 *   reserve(), push_at(time_s, seq, callback, args)
 *                                  a position (seq) taken now, and a push at it later
 *                                  (for an event that may turn out not to be needed)
 *   pop()                          the next (time_s, callback, args), removed
 *   next_s(), len()                the next event's time_s (None if empty), size
 *
 * Why C: a replay over aioquic runs one event per packet and timer; in Python the
 * heap's tuple comparisons (two rich comparisons per step, a dozen steps per pop)
 * and the loop's bytecode were the largest single item of the workbench's own
 * share of the profile.  Here a comparison is two C compares of (double, uint64).
 *
 * Keys are unique (seq), so any correct heap pops events in exactly the order
 * heapq does: the results are byte-identical to the Python twin (tests check it).
 *
 * simulator._engine.Timer(queue, sim, owner, callback) is the C twin of
 * engine.Timer (the reference), the one-slot timer a real stack's connection sets
 * after nearly every packet:
 *
 *   set(when_s)                    replace the pending expiry (before sim.now, read
 *                                  from the attribute, means now); only the earliest
 *                                  expiry has a live heap entry, a later one waits
 *   cancel()                       empty the slot (lazily: the heap entry stays)
 *   when_s, owner, callback, sim   read-only
 *   _fire(gen)                     the heap entry of generation gen popped
 *
 * Its heap entries are timer entries (an Event with a Timer and a generation
 * instead of a callback and args): no bound method or args tuple per set().  run()
 * handles them without Python: a stale entry (its generation replaced by an earlier
 * expiry; about a third of an h3 replay's timer events) is skipped, yet it still
 * counts as one event and still sets sim.now to its time, exactly as the Python
 * Timer's no-op _fire call did, so events_run, the clock after a run, stop(),
 * max_events and until_s are unchanged; a live one runs _fire's logic in C and
 * calls the callback.  pop() hands a timer entry out as (time_s, timer._fire,
 * (gen,)) for Simulator's traced run.
 * C events: another extension's event that the loop runs by a C function, pushed
 * through the capsule EventQueue._c_push (push_c below; the QUIC twin's flushes and
 * timer slots, simulator/net/_quic.c): the same (time_s, seq) key and the same
 * Python callable as a push() would give, (callback, (gen,)) or (callback, ()), which
 * pop() hands out; run() calls fire(callback, gen) instead, with no args tuple and no
 * call through Python.  The callable does the same as fire: the order, the count and
 * the clock are those of the push() it replaces.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <math.h>
#include <stdint.h>

#define PUSH_C_CAPSULE "simulator._engine.push_c"   /* EventQueue._c_push, for _quic.c */
#define SEQ_C_CAPSULE "simulator._engine.seq_c"     /* EventQueue._c_seq: reserve, push_at, next */

struct TimerObject;

typedef struct {
    double t;            /* the key: time_s as a double */
    uint64_t seq;        /* tie-break: scheduling order */
    PyObject *t_obj;     /* time_s as given (sim.now is set to this very object) */
    PyObject *callback;  /* NULL for a timer entry */
    PyObject *args;      /* a tuple; NULL for a timer entry and a C event */
    union {
        struct TimerObject *timer;   /* a timer entry: this Timer's expiry, generation gen */
        int (*fire)(PyObject *callback, uint64_t gen);   /* a C event: run by fire(callback, gen) */
    };
    uint64_t gen;        /* a C event's: with GEN_ARG when its args are (gen,), else () */
} Event;
#define GEN_ARG (UINT64_C(1) << 63)

typedef struct {
    PyObject_HEAD
    Event *heap;
    Py_ssize_t size;
    Py_ssize_t capacity;
    uint64_t seq;
    int stopped;
    int running;
} EventQueue;

/* The one-slot timer (engine.Timer's twin): its heap entries carry the Timer and
 * a generation instead of a callback and args. */
typedef struct TimerObject {
    PyObject_HEAD
    EventQueue *queue;
    PyObject *sim;
    PyObject *owner;
    PyObject *callback;
    PyObject *when_obj;  /* the expiry held, as given (NULL: none) */
    double when;
    double scheduled;    /* time of the live heap entry, if has_scheduled */
    int has_scheduled;
    uint64_t gen;        /* generation of the live heap entry */
} TimerObject;

static PyTypeObject TimerType;
static PyObject *str_now;   /* interned "now" */
static PyObject *str_fire;  /* interned "_fire" */

static inline int
before(const Event *a, const Event *b)
{
    return a->t < b->t || (a->t == b->t && a->seq < b->seq);
}

static void
sift_up(Event *heap, Py_ssize_t pos)
{
    Event item = heap[pos];
    while (pos > 0) {
        Py_ssize_t parent = (pos - 1) >> 1;
        if (!before(&item, &heap[parent]))
            break;
        heap[pos] = heap[parent];
        pos = parent;
    }
    heap[pos] = item;
}

/* Remove heap[0] into *out (the caller owns its references). */
static void
pop_min(EventQueue *q, Event *out)
{
    Event *heap = q->heap;
    *out = heap[0];
    Py_ssize_t n = --q->size;
    if (n == 0)
        return;
    Event last = heap[n];
    Py_ssize_t pos = 0;
    for (;;) {
        Py_ssize_t child = 2 * pos + 1;
        if (child >= n)
            break;
        if (child + 1 < n && before(&heap[child + 1], &heap[child]))
            child++;
        if (!before(&heap[child], &last))
            break;
        heap[pos] = heap[child];
        pos = child;
    }
    heap[pos] = last;
}

/* Room for one more event at q->heap[q->size] (the caller fills it and sifts it up). */
static Event *
queue_slot_at(EventQueue *q, double t, uint64_t seq)
{
    if (isnan(t)) {
        PyErr_SetString(PyExc_ValueError, "cannot schedule an event at time NaN");
        return NULL;
    }
    if (q->size == q->capacity) {
        Py_ssize_t cap = q->capacity ? q->capacity * 2 : 64;
        Event *grown = PyMem_Realloc(q->heap, (size_t)cap * sizeof(Event));
        if (grown == NULL) {
            PyErr_NoMemory();
            return NULL;
        }
        q->heap = grown;
        q->capacity = cap;
    }
    Event *e = &q->heap[q->size];
    e->t = t;
    e->seq = seq ? seq : ++q->seq;           /* seq: a position reserve() gave; 0: the next */
    return e;
}

static Event *
queue_slot(EventQueue *q, double t)
{
    return queue_slot_at(q, t, 0);
}

static int
queue_push(EventQueue *q, PyObject *t_obj, PyObject *callback, PyObject *args, uint64_t seq)
{
    double t = PyFloat_AsDouble(t_obj);
    if (t == -1.0 && PyErr_Occurred())
        return -1;
    if (!isnan(t) && !PyTuple_Check(args)) {
        PyErr_SetString(PyExc_TypeError, "event args must be a tuple");
        return -1;
    }
    Event *e = queue_slot_at(q, t, seq);
    if (e == NULL)
        return -1;
    e->t_obj = Py_NewRef(t_obj);
    e->callback = Py_NewRef(callback);
    e->args = Py_NewRef(args);
    e->timer = NULL;
    e->gen = 0;
    sift_up(q->heap, q->size++);
    return 0;
}

/* The C events' push (the capsule EventQueue._c_push): callback(*args) at t (t_obj, its
 * float), args (gen,) if gen_arg else (), run as fire(callback, gen). */

/* The C side of reserve() and push_at() (the capsule EventQueue._c_seq, for _quic.c): a
 * position taken now, a C event pushed at it later, and the next event's time. */
typedef struct {
    uint64_t (*reserve)(PyObject *queue);
    int (*push_at)(PyObject *queue, uint64_t seq, double t, PyObject *t_obj, PyObject *callback,
                   int (*fire)(PyObject *callback, uint64_t gen), uint64_t gen, int gen_arg);
    int (*next_t)(PyObject *queue, double *t);   /* 1 and *t, or 0 when empty */
} SeqApi;

static uint64_t
reserve_c(PyObject *queue)
{
    return ++((EventQueue *)queue)->seq;
}

static int
push_c_at(PyObject *queue, uint64_t seq, double t, PyObject *t_obj, PyObject *callback,
          int (*fire)(PyObject *callback, uint64_t gen), uint64_t gen, int gen_arg)
{
    EventQueue *q = (EventQueue *)queue;
    Event *e = queue_slot_at(q, t, seq);    /* seq 0: the next position */
    if (e == NULL)
        return -1;
    e->t_obj = Py_NewRef(t_obj);
    e->callback = Py_NewRef(callback);
    e->args = NULL;
    e->fire = fire;
    e->gen = gen_arg ? gen | GEN_ARG : gen;
    sift_up(q->heap, q->size++);
    return 0;
}

static int
push_c(PyObject *queue, double t, PyObject *t_obj, PyObject *callback,
       int (*fire)(PyObject *callback, uint64_t gen), uint64_t gen, int gen_arg)
{
    return push_c_at(queue, 0, t, t_obj, callback, fire, gen, gen_arg);
}

static int
next_t_c(PyObject *queue, double *t)
{
    EventQueue *q = (EventQueue *)queue;
    if (q->size == 0)
        return 0;
    *t = q->heap[0].t;
    return 1;
}

static SeqApi seq_api = {reserve_c, push_c_at, next_t_c};

/* Timer._schedule: a new generation, and its heap entry at when_obj (= tm->when). */
static int
timer_schedule(TimerObject *tm)
{
    tm->gen++;
    tm->scheduled = tm->when;
    tm->has_scheduled = 1;
    Event *e = queue_slot(tm->queue, tm->when);
    if (e == NULL)
        return -1;
    e->t_obj = Py_NewRef(tm->when_obj);
    e->callback = NULL;
    e->args = NULL;
    e->timer = (TimerObject *)Py_NewRef((PyObject *)tm);
    e->gen = tm->gen;
    sift_up(tm->queue->heap, tm->queue->size++);
    return 0;
}

/* Timer._fire of the live generation at time now: run the expiry if it is due, then
 * give a later expiry (one set while this entry waited, or by the callback) its entry. */
static int
timer_fire(TimerObject *tm, double now)
{
    tm->has_scheduled = 0;
    if (tm->when_obj != NULL && tm->when <= now) {
        PyObject *when = tm->when_obj;
        tm->when_obj = NULL;             /* the slot empties itself before the callback */
        PyObject *callback = tm->callback;
        PyObject *result = NULL;
        if (callback != NULL) {
            Py_INCREF(callback);
            result = PyObject_CallNoArgs(callback);
            Py_DECREF(callback);
        }
        Py_DECREF(when);
        if (callback != NULL) {
            if (result == NULL)
                return -1;
            Py_DECREF(result);
        }
    }
    if (tm->when_obj != NULL && !tm->has_scheduled && tm->queue != NULL)
        return timer_schedule(tm);
    return 0;
}

static PyObject *
EventQueue_push(EventQueue *q, PyObject *const *argv, Py_ssize_t nargs)
{
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "push(time_s, callback, args) takes 3 arguments");
        return NULL;
    }
    if (queue_push(q, argv[0], argv[1], argv[2], 0) < 0)
        return NULL;
    Py_RETURN_NONE;
}

/* Where run() writes sim.now: the offset of a writable object slot `now` (Simulator has
 * __slots__), looked up once per run; 0 when the class has none, or a __setattr__ of its own,
 * and then sim.now is set through PyObject_SetAttr.  Written as CPython's generic setattr
 * writes a slot (PyMember_SetOne, T_OBJECT_EX), so it is the same assignment, without the
 * descriptor lookup per event. */
static Py_ssize_t
now_slot_offset(PyObject *sim, unsigned int *version)
{
    PyTypeObject *tp = Py_TYPE(sim);
    if (tp->tp_setattro != PyObject_GenericSetAttr)
        return 0;
    PyObject *descr = _PyType_Lookup(tp, str_now);   /* borrowed; gives the type a version tag */
    if (descr == NULL || !Py_IS_TYPE(descr, &PyMemberDescr_Type)
        || !PyType_HasFeature(tp, Py_TPFLAGS_VALID_VERSION_TAG))
        return 0;
    PyMemberDef *m = ((PyMemberDescrObject *)descr)->d_member;
    if (m->type != T_OBJECT_EX || (m->flags & (READONLY | READ_RESTRICTED)) || m->offset <= 0)
        return 0;
    *version = tp->tp_version_tag;
    return m->offset;
}

/* sim.now = t: at the slot while sim's class is unchanged (its version tag), else by setattr. */
static inline int
set_now(PyObject *sim, Py_ssize_t offset, unsigned int version, PyObject *t)
{
    PyTypeObject *tp = Py_TYPE(sim);
    if (offset > 0 && tp->tp_version_tag == version && PyType_HasFeature(tp, Py_TPFLAGS_VALID_VERSION_TAG)) {
        PyObject **addr = (PyObject **)((char *)sim + offset);
        PyObject *old = *addr;
        *addr = Py_NewRef(t);
        Py_XDECREF(old);
        return 0;
    }
    return PyObject_SetAttr(sim, str_now, t);
}

static PyObject *
EventQueue_run(EventQueue *q, PyObject *const *argv, Py_ssize_t nargs)
{
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "run(sim, until_s, max_events) takes 3 arguments");
        return NULL;
    }
    PyObject *sim = argv[0], *until_obj = argv[1], *max_obj = argv[2];
    int has_until = until_obj != Py_None;
    double until = 0.0;
    if (has_until) {
        until = PyFloat_AsDouble(until_obj);
        if (until == -1.0 && PyErr_Occurred())
            return NULL;
    }
    long long max_events = -1;
    if (max_obj != Py_None) {
        max_events = PyLong_AsLongLong(max_obj);
        if (max_events == -1 && PyErr_Occurred())
            return NULL;
    }
    if (q->running) {
        PyErr_SetString(PyExc_RuntimeError, "the event queue is already running");
        return NULL;
    }
    unsigned int now_version = 0;
    Py_ssize_t now_offset = now_slot_offset(sim, &now_version);
    q->running = 1;
    q->stopped = 0;
    long long count = 0;
    while (q->size > 0) {
        if (has_until && q->heap[0].t > until) {
            if (set_now(sim, now_offset, now_version, until_obj) < 0)
                goto error;
            break;
        }
        Event e;
        pop_min(q, &e);
        int failed = set_now(sim, now_offset, now_version, e.t_obj) < 0;
        if (e.callback == NULL) {
            /* A stale timer entry (replaced by an earlier expiry) is skipped without
             * calling Python, but it is still an event: it counts, and it moved the clock. */
            if (!failed && e.gen == e.timer->gen)
                failed = timer_fire(e.timer, e.t) < 0;
            Py_DECREF(e.t_obj);
            Py_DECREF((PyObject *)e.timer);
            if (failed)
                goto error;
        }
        else if (e.args == NULL) {             /* a C event */
            if (!failed)
                failed = e.fire(e.callback, e.gen & ~GEN_ARG) < 0;
            Py_DECREF(e.t_obj);
            Py_DECREF(e.callback);
            if (failed)
                goto error;
        }
        else {
            PyObject *result = failed ? NULL : PyObject_Call(e.callback, e.args, NULL);
            Py_DECREF(e.t_obj);
            Py_DECREF(e.callback);
            Py_DECREF(e.args);
            if (result == NULL)
                goto error;
            Py_DECREF(result);
        }
        count++;
        if (q->stopped || (max_events >= 0 && count >= max_events))
            break;
    }
    q->running = 0;
    return PyLong_FromLongLong(count);
error:
    q->running = 0;
    return NULL;
}

static PyObject *
EventQueue_pop(EventQueue *q, PyObject *Py_UNUSED(ignored))
{
    if (q->size == 0) {
        PyErr_SetString(PyExc_IndexError, "pop from an empty event queue");
        return NULL;
    }
    Event e;
    pop_min(q, &e);
    PyObject *out;
    if (e.callback == NULL) {
        /* (time_s, timer._fire, (gen,)), as the Python Timer pushes it */
        PyObject *fire = PyObject_GetAttr((PyObject *)e.timer, str_fire);
        PyObject *args = fire == NULL ? NULL : Py_BuildValue("(K)", (unsigned long long)e.gen);
        out = args == NULL ? NULL : PyTuple_Pack(3, e.t_obj, fire, args);
        Py_XDECREF(fire);
        Py_XDECREF(args);
        Py_DECREF((PyObject *)e.timer);
    }
    else if (e.args == NULL) {
        /* a C event: (time_s, callback, (gen,) or ()), as a push() of it would have been */
        PyObject *args = (e.gen & GEN_ARG) ? Py_BuildValue("(K)", (unsigned long long)(e.gen & ~GEN_ARG))
                                           : PyTuple_New(0);
        out = args == NULL ? NULL : PyTuple_Pack(3, e.t_obj, e.callback, args);
        Py_XDECREF(args);
        Py_DECREF(e.callback);
    }
    else {
        out = PyTuple_Pack(3, e.t_obj, e.callback, e.args);
        Py_DECREF(e.callback);
        Py_DECREF(e.args);
    }
    Py_DECREF(e.t_obj);
    return out;
}

static PyObject *
EventQueue_reserve(EventQueue *q, PyObject *Py_UNUSED(ignored))
{
    return PyLong_FromUnsignedLongLong(++q->seq);
}

static PyObject *
EventQueue_push_at(EventQueue *q, PyObject *const *argv, Py_ssize_t nargs)
{
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "push_at(time_s, seq, callback, args) takes 4 arguments");
        return NULL;
    }
    unsigned long long seq = PyLong_AsUnsignedLongLong(argv[1]);
    if (seq == (unsigned long long)-1 && PyErr_Occurred())
        return NULL;
    if (seq == 0 || seq > q->seq) {
        PyErr_SetString(PyExc_ValueError, "push_at: seq is not a position reserve() gave");
        return NULL;
    }
    if (queue_push(q, argv[0], argv[2], argv[3], seq) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *
EventQueue_next_s(EventQueue *q, PyObject *Py_UNUSED(ignored))
{
    if (q->size == 0)
        Py_RETURN_NONE;
    return Py_NewRef(q->heap[0].t_obj);
}

static PyObject *
EventQueue_stop(EventQueue *q, PyObject *Py_UNUSED(ignored))
{
    q->stopped = 1;
    Py_RETURN_NONE;
}

static PyObject *
EventQueue_get_stopped(EventQueue *q, void *Py_UNUSED(closure))
{
    return PyBool_FromLong(q->stopped);
}

static Py_ssize_t
EventQueue_len(EventQueue *q)
{
    return q->size;
}

static int
EventQueue_traverse(EventQueue *q, visitproc visit, void *arg)
{
    for (Py_ssize_t i = 0; i < q->size; i++) {
        Py_VISIT(q->heap[i].t_obj);
        Py_VISIT(q->heap[i].callback);
        Py_VISIT(q->heap[i].args);
        if (q->heap[i].callback == NULL)
            Py_VISIT((PyObject *)q->heap[i].timer);
    }
    return 0;
}

static int
EventQueue_clear(EventQueue *q)
{
    /* Drop the references before releasing them: a callback's destructor may look at q. */
    Event *heap = q->heap;
    Py_ssize_t n = q->size;
    q->heap = NULL;
    q->size = q->capacity = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_DECREF(heap[i].t_obj);
        Py_XDECREF(heap[i].callback);
        Py_XDECREF(heap[i].args);
        if (heap[i].callback == NULL)
            Py_XDECREF((PyObject *)heap[i].timer);
    }
    PyMem_Free(heap);
    return 0;
}

static void
EventQueue_dealloc(EventQueue *q)
{
    PyObject_GC_UnTrack(q);
    EventQueue_clear(q);
    Py_TYPE(q)->tp_free((PyObject *)q);
}

static PyObject *
EventQueue_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    if (PyTuple_GET_SIZE(args) != 0 || (kwds != NULL && PyDict_GET_SIZE(kwds) != 0)) {
        PyErr_SetString(PyExc_TypeError, "EventQueue() takes no arguments");
        return NULL;
    }
    EventQueue *q = (EventQueue *)type->tp_alloc(type, 0);
    return (PyObject *)q;    /* tp_alloc zeroes every field */
}

static PyMethodDef EventQueue_methods[] = {
    {"push", (PyCFunction)(void (*)(void))EventQueue_push, METH_FASTCALL,
     "push(time_s, callback, args): schedule callback(*args) at time_s (FIFO among equal times)."},
    {"run", (PyCFunction)(void (*)(void))EventQueue_run, METH_FASTCALL,
     "run(sim, until_s, max_events) -> events run; sets sim.now to each event's time."},
    {"reserve", (PyCFunction)EventQueue_reserve, METH_NOARGS, "reserve() -> a position (seq) taken now, for push_at."},
    {"push_at", (PyCFunction)(void (*)(void))EventQueue_push_at, METH_FASTCALL,
     "push_at(time_s, seq, callback, args): push, at the position reserve() gave."},
    {"pop", (PyCFunction)EventQueue_pop, METH_NOARGS, "pop() -> (time_s, callback, args) of the next event."},
    {"next_s", (PyCFunction)EventQueue_next_s, METH_NOARGS, "next_s() -> the next event's time_s, or None."},
    {"stop", (PyCFunction)EventQueue_stop, METH_NOARGS, "stop(): end the running run() after the current event."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef EventQueue_getset[] = {
    {"stopped", (getter)EventQueue_get_stopped, NULL, "the last run() ended because of stop()", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PySequenceMethods EventQueue_as_sequence = {
    .sq_length = (lenfunc)EventQueue_len,
};

static PyTypeObject EventQueueType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "simulator._engine.EventQueue",
    .tp_doc = "Events keyed by (time_s, scheduling order), run by a C loop.",
    .tp_basicsize = sizeof(EventQueue),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_new = EventQueue_new,
    .tp_dealloc = (destructor)EventQueue_dealloc,
    .tp_traverse = (traverseproc)EventQueue_traverse,
    .tp_clear = (inquiry)EventQueue_clear,
    .tp_methods = EventQueue_methods,
    .tp_getset = EventQueue_getset,
    .tp_as_sequence = &EventQueue_as_sequence,
};

/* -- Timer ------------------------------------------------------------------------ */

static PyObject *
Timer_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"queue", "sim", "owner", "callback", NULL};
    PyObject *queue, *sim, *owner, *callback;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O!OOO:Timer", kwlist,
                                     &EventQueueType, &queue, &sim, &owner, &callback))
        return NULL;
    TimerObject *tm = (TimerObject *)type->tp_alloc(type, 0);
    if (tm == NULL)
        return NULL;
    tm->queue = (EventQueue *)Py_NewRef(queue);
    tm->sim = Py_NewRef(sim);
    tm->owner = Py_NewRef(owner);
    tm->callback = Py_NewRef(callback);
    return (PyObject *)tm;
}

static PyObject *
Timer_set(TimerObject *tm, PyObject *when_arg)
{
    if (tm->queue == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "the timer was cleared");
        return NULL;
    }
    PyObject *now = PyObject_GetAttr(tm->sim, str_now);
    if (now == NULL)
        return NULL;
    double when = PyFloat_AsDouble(when_arg);
    double now_s = when == -1.0 && PyErr_Occurred() ? 0.0 : PyFloat_AsDouble(now);
    if (PyErr_Occurred()) {
        Py_DECREF(now);
        return NULL;
    }
    PyObject *when_obj = when_arg;
    if (when < now_s) {                  /* an expiry in the past is due now */
        when_obj = now;
        when = now_s;
    }
    Py_INCREF(when_obj);
    Py_XSETREF(tm->when_obj, when_obj);
    tm->when = when;
    Py_DECREF(now);
    if (!tm->has_scheduled || when < tm->scheduled) {
        if (timer_schedule(tm) < 0)
            return NULL;
    }
    Py_RETURN_NONE;
}

static PyObject *
Timer_cancel(TimerObject *tm, PyObject *Py_UNUSED(ignored))
{
    Py_CLEAR(tm->when_obj);              /* lazy: the heap entry stays and finds nothing due */
    Py_RETURN_NONE;
}

static PyObject *
Timer_fire_method(TimerObject *tm, PyObject *gen_obj)
{
    unsigned long long gen = PyLong_Check(gen_obj) ? PyLong_AsUnsignedLongLong(gen_obj) : 0;
    if (PyErr_Occurred()) {
        PyErr_Clear();                   /* no such generation: stale */
        Py_RETURN_NONE;
    }
    if (!PyLong_Check(gen_obj) || gen != tm->gen)
        Py_RETURN_NONE;                  /* superseded by an earlier expiry */
    if (tm->sim == NULL)
        Py_RETURN_NONE;
    PyObject *now = PyObject_GetAttr(tm->sim, str_now);
    if (now == NULL)
        return NULL;
    double now_s = PyFloat_AsDouble(now);
    Py_DECREF(now);
    if (now_s == -1.0 && PyErr_Occurred())
        return NULL;
    if (timer_fire(tm, now_s) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *
Timer_get_when_s(TimerObject *tm, void *Py_UNUSED(closure))
{
    return Py_NewRef(tm->when_obj != NULL ? tm->when_obj : Py_None);
}

static PyObject *
Timer_get_owner(TimerObject *tm, void *Py_UNUSED(closure))
{
    return Py_NewRef(tm->owner != NULL ? tm->owner : Py_None);
}

static PyObject *
Timer_get_callback(TimerObject *tm, void *Py_UNUSED(closure))
{
    return Py_NewRef(tm->callback != NULL ? tm->callback : Py_None);
}

static PyObject *
Timer_get_sim(TimerObject *tm, void *Py_UNUSED(closure))
{
    return Py_NewRef(tm->sim != NULL ? tm->sim : Py_None);
}

static int
Timer_traverse(TimerObject *tm, visitproc visit, void *arg)
{
    Py_VISIT((PyObject *)tm->queue);
    Py_VISIT(tm->sim);
    Py_VISIT(tm->owner);
    Py_VISIT(tm->callback);
    Py_VISIT(tm->when_obj);
    return 0;
}

static int
Timer_clear(TimerObject *tm)
{
    Py_CLEAR(tm->queue);
    Py_CLEAR(tm->sim);
    Py_CLEAR(tm->owner);
    Py_CLEAR(tm->callback);
    Py_CLEAR(tm->when_obj);
    return 0;
}

static void
Timer_dealloc(TimerObject *tm)
{
    PyObject_GC_UnTrack(tm);
    Timer_clear(tm);
    Py_TYPE(tm)->tp_free((PyObject *)tm);
}

static PyMethodDef Timer_methods[] = {
    {"set", (PyCFunction)Timer_set, METH_O,
     "set(when_s): replace the pending expiry (a time before sim.now means now)."},
    {"cancel", (PyCFunction)Timer_cancel, METH_NOARGS, "cancel(): empty the slot."},
    {"_fire", (PyCFunction)Timer_fire_method, METH_O,
     "_fire(gen): the heap entry of generation gen popped (Simulator's traced run calls it)."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef Timer_getset[] = {
    {"when_s", (getter)Timer_get_when_s, NULL, "the expiry the slot holds (None: none)", NULL},
    {"owner", (getter)Timer_get_owner, NULL, "the owner's name", NULL},
    {"callback", (getter)Timer_get_callback, NULL, "called with no arguments at expiry", NULL},
    {"sim", (getter)Timer_get_sim, NULL, "the Simulator", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject TimerType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "simulator._engine.Timer",
    .tp_doc = "Timer(queue, sim, owner, callback): one timer slot (engine.Timer's C twin).",
    .tp_basicsize = sizeof(TimerObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_new = Timer_new,
    .tp_dealloc = (destructor)Timer_dealloc,
    .tp_traverse = (traverseproc)Timer_traverse,
    .tp_clear = (inquiry)Timer_clear,
    .tp_methods = Timer_methods,
    .tp_getset = Timer_getset,
};

static struct PyModuleDef engine_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "simulator._engine",
    .m_doc = "The discrete-event engine's event queue and run loop (C twin of engine._PyEventQueue).",
    .m_size = -1,
};

PyMODINIT_FUNC
PyInit__engine(void)
{
    str_now = PyUnicode_InternFromString("now");
    str_fire = PyUnicode_InternFromString("_fire");
    if (str_now == NULL || str_fire == NULL)
        return NULL;
    if (PyType_Ready(&EventQueueType) < 0 || PyType_Ready(&TimerType) < 0)
        return NULL;
    /* push_c for other extensions, on the type: a caller takes it from its own queue's type */
    PyObject *cap = PyCapsule_New((void *)push_c, PUSH_C_CAPSULE, NULL);
    int rc = cap == NULL ? -1 : PyDict_SetItemString(EventQueueType.tp_dict, "_c_push", cap);
    Py_XDECREF(cap);
    if (rc < 0)
        return NULL;
    cap = PyCapsule_New((void *)&seq_api, SEQ_C_CAPSULE, NULL);
    rc = cap == NULL ? -1 : PyDict_SetItemString(EventQueueType.tp_dict, "_c_seq", cap);
    Py_XDECREF(cap);
    if (rc < 0)
        return NULL;
    PyType_Modified(&EventQueueType);
    PyObject *m = PyModule_Create(&engine_module);
    if (m == NULL)
        return NULL;
    if (PyModule_AddObjectRef(m, "EventQueue", (PyObject *)&EventQueueType) < 0
        || PyModule_AddObjectRef(m, "Timer", (PyObject *)&TimerType) < 0
        || PyModule_AddStringConstant(m, "IMPLEMENTATION", "c") < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
