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
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>

typedef struct {
    double t;            /* the key: time_s as a double */
    uint64_t seq;        /* tie-break: scheduling order */
    PyObject *t_obj;     /* time_s as given (sim.now is set to this very object) */
    PyObject *callback;
    PyObject *args;      /* a tuple */
} Event;

typedef struct {
    PyObject_HEAD
    Event *heap;
    Py_ssize_t size;
    Py_ssize_t capacity;
    uint64_t seq;
    int stopped;
    int running;
} EventQueue;

static PyObject *str_now;   /* interned "now" */

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

static int
queue_push(EventQueue *q, PyObject *t_obj, PyObject *callback, PyObject *args)
{
    double t = PyFloat_AsDouble(t_obj);
    if (t == -1.0 && PyErr_Occurred())
        return -1;
    if (isnan(t)) {
        PyErr_SetString(PyExc_ValueError, "cannot schedule an event at time NaN");
        return -1;
    }
    if (!PyTuple_Check(args)) {
        PyErr_SetString(PyExc_TypeError, "event args must be a tuple");
        return -1;
    }
    if (q->size == q->capacity) {
        Py_ssize_t cap = q->capacity ? q->capacity * 2 : 64;
        Event *grown = PyMem_Realloc(q->heap, (size_t)cap * sizeof(Event));
        if (grown == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        q->heap = grown;
        q->capacity = cap;
    }
    Event *e = &q->heap[q->size];
    e->t = t;
    e->seq = ++q->seq;
    Py_INCREF(t_obj);
    e->t_obj = t_obj;
    Py_INCREF(callback);
    e->callback = callback;
    Py_INCREF(args);
    e->args = args;
    sift_up(q->heap, q->size++);
    return 0;
}

static PyObject *
EventQueue_push(EventQueue *q, PyObject *const *argv, Py_ssize_t nargs)
{
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "push(time_s, callback, args) takes 3 arguments");
        return NULL;
    }
    if (queue_push(q, argv[0], argv[1], argv[2]) < 0)
        return NULL;
    Py_RETURN_NONE;
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
    q->running = 1;
    q->stopped = 0;
    long long count = 0;
    while (q->size > 0) {
        if (has_until && q->heap[0].t > until) {
            if (PyObject_SetAttr(sim, str_now, until_obj) < 0)
                goto error;
            break;
        }
        Event e;
        pop_min(q, &e);
        int failed = PyObject_SetAttr(sim, str_now, e.t_obj) < 0;
        PyObject *result = failed ? NULL : PyObject_Call(e.callback, e.args, NULL);
        Py_DECREF(e.t_obj);
        Py_DECREF(e.callback);
        Py_DECREF(e.args);
        if (result == NULL)
            goto error;
        Py_DECREF(result);
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
    PyObject *out = PyTuple_Pack(3, e.t_obj, e.callback, e.args);
    Py_DECREF(e.t_obj);
    Py_DECREF(e.callback);
    Py_DECREF(e.args);
    return out;
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
        Py_DECREF(heap[i].callback);
        Py_DECREF(heap[i].args);
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
    if (str_now == NULL)
        return NULL;
    if (PyType_Ready(&EventQueueType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&engine_module);
    if (m == NULL)
        return NULL;
    if (PyModule_AddObjectRef(m, "EventQueue", (PyObject *)&EventQueueType) < 0
        || PyModule_AddStringConstant(m, "IMPLEMENTATION", "c") < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
