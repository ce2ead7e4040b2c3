/* The page-load network's per-chunk path in C: simulator.http._network.ClientData.
 *
 * Written by hand.  It is the C twin of the fast path at the top of
 * simulator/http/network.py's ``_Conn._client_data``, which defines the behaviour; the
 * Python method stays the reference (and does everything else), and tests/test_page_size_cost.py
 * holds page loads with and without the twin to each other.  Why C: the transport calls
 * ``on_data`` once per in-order chunk, and a 20,000-resource page's load had 440,000 of
 * them, nearly all of which only count their bytes: a Python frame each.
 *
 *   ClientData(conn, general)(stream_id, data, end, time_s)
 *
 * As ``conn._client_data``: when ``conn.incoming`` holds the stream, ``end`` is false and
 * ``conn._client_quiet`` is true, the stream's ``received`` grows by ``len(data)`` and the
 * marks it has reached (``marks``: a deque of (offset, callback, args), in offset order) are
 * popped and called, in order; any other chunk goes to ``general`` (the Python method, which
 * makes the same test and takes its general path).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stddef.h>

static PyObject *str_incoming, *str_quiet, *str_received, *str_marks, *str_popleft;

typedef struct {
    PyObject_HEAD
    PyObject *conn, *general;
    vectorcallfunc vectorcall;
} ClientDataObject;

static PyObject *
ClientData_vectorcall(PyObject *self_obj, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    ClientDataObject *self = (ClientDataObject *)self_obj;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (nargs != 4 || kwnames != NULL)
        return PyObject_Vectorcall(self->general, args, nargsf, kwnames);
    PyObject *incoming = PyObject_GetAttr(self->conn, str_incoming);
    if (incoming == NULL)
        return NULL;
    PyObject *inc = PyDict_Check(incoming) ? PyDict_GetItemWithError(incoming, args[0]) : NULL;
    if (inc != NULL)
        Py_INCREF(inc);
    Py_DECREF(incoming);
    if (inc == NULL) {
        if (PyErr_Occurred())
            return NULL;
        return PyObject_Vectorcall(self->general, args, nargsf, NULL);
    }
    int end = PyObject_IsTrue(args[2]);
    int quiet = 0;
    if (end == 0) {
        PyObject *q = PyObject_GetAttr(self->conn, str_quiet);
        quiet = q == NULL ? -1 : PyObject_IsTrue(q);
        Py_XDECREF(q);
    }
    if (end < 0 || quiet < 0) {
        Py_DECREF(inc);
        return NULL;
    }
    if (end || !quiet) {
        Py_DECREF(inc);
        return PyObject_Vectorcall(self->general, args, nargsf, NULL);
    }
    /* inc.received += len(data) */
    Py_ssize_t n = PyObject_Size(args[1]);
    PyObject *received = n < 0 ? NULL : PyObject_GetAttr(inc, str_received);
    PyObject *size = received == NULL ? NULL : PyLong_FromSsize_t(n);
    PyObject *sum = size == NULL ? NULL : PyNumber_Add(received, size);
    Py_XDECREF(received);
    Py_XDECREF(size);
    int rc = sum == NULL ? -1 : PyObject_SetAttr(inc, str_received, sum);
    Py_XDECREF(sum);
    PyObject *marks = rc < 0 ? NULL : PyObject_GetAttr(inc, str_marks);
    if (marks == NULL) {
        Py_DECREF(inc);
        return NULL;
    }
    /* while marks and marks[0][0] <= inc.received: _, callback, args = marks.popleft(); callback(*args) */
    for (;;) {
        Py_ssize_t left = PyObject_Size(marks);
        if (left <= 0) {
            if (left < 0)
                goto fail;
            break;
        }
        PyObject *first = PySequence_GetItem(marks, 0);
        PyObject *offset = first == NULL ? NULL : PySequence_GetItem(first, 0);
        Py_XDECREF(first);
        if (offset == NULL)
            goto fail;
        received = PyObject_GetAttr(inc, str_received);
        int reached = received == NULL ? -1 : PyObject_RichCompareBool(offset, received, Py_LE);
        Py_DECREF(offset);
        Py_XDECREF(received);
        if (reached <= 0) {
            if (reached < 0)
                goto fail;
            break;
        }
        PyObject *mark = PyObject_CallMethodNoArgs(marks, str_popleft);
        if (mark == NULL)
            goto fail;
        PyObject *parts = PySequence_Tuple(mark);
        Py_DECREF(mark);
        if (parts == NULL)
            goto fail;
        if (PyTuple_GET_SIZE(parts) != 3) {
            Py_DECREF(parts);
            PyErr_SetString(PyExc_ValueError, "a mark is not (offset, callback, args)");
            goto fail;
        }
        PyObject *call_args = PySequence_Tuple(PyTuple_GET_ITEM(parts, 2));
        PyObject *r = call_args == NULL ? NULL : PyObject_Call(PyTuple_GET_ITEM(parts, 1), call_args, NULL);
        Py_XDECREF(call_args);
        Py_DECREF(parts);
        if (r == NULL)
            goto fail;
        Py_DECREF(r);
    }
    Py_DECREF(marks);
    Py_DECREF(inc);
    Py_RETURN_NONE;
fail:
    Py_DECREF(marks);
    Py_DECREF(inc);
    return NULL;
}

static PyObject *
ClientData_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    PyObject *conn, *general;
    if (!PyArg_ParseTuple(args, "OO:ClientData", &conn, &general))
        return NULL;
    ClientDataObject *self = (ClientDataObject *)type->tp_alloc(type, 0);
    if (self == NULL)
        return NULL;
    self->conn = Py_NewRef(conn);
    self->general = Py_NewRef(general);
    self->vectorcall = ClientData_vectorcall;
    return (PyObject *)self;
}

static int
ClientData_traverse(ClientDataObject *self, visitproc visit, void *arg)
{
    Py_VISIT(self->conn);
    Py_VISIT(self->general);
    return 0;
}

static int
ClientData_clear(ClientDataObject *self)
{
    Py_CLEAR(self->conn);
    Py_CLEAR(self->general);
    return 0;
}

static void
ClientData_dealloc(ClientDataObject *self)
{
    PyObject_GC_UnTrack(self);
    ClientData_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyTypeObject ClientDataType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "simulator.http._network.ClientData",
    .tp_basicsize = sizeof(ClientDataObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_doc = "ClientData(conn, general): _Conn._client_data's fast path in C (see the module docstring).",
    .tp_new = ClientData_new,
    .tp_traverse = (traverseproc)ClientData_traverse,
    .tp_clear = (inquiry)ClientData_clear,
    .tp_dealloc = (destructor)ClientData_dealloc,
    .tp_call = PyVectorcall_Call,
    .tp_vectorcall_offset = offsetof(ClientDataObject, vectorcall),
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    "simulator.http._network",
    "_Conn._client_data's fast path in C (the C twin of simulator/http/network.py's).",
    -1,
    NULL,
};

PyMODINIT_FUNC
PyInit__network(void)
{
    str_incoming = PyUnicode_InternFromString("incoming");
    str_quiet = PyUnicode_InternFromString("_client_quiet");
    str_received = PyUnicode_InternFromString("received");
    str_marks = PyUnicode_InternFromString("marks");
    str_popleft = PyUnicode_InternFromString("popleft");
    if (!str_incoming || !str_quiet || !str_received || !str_marks || !str_popleft)
        return NULL;
    if (PyType_Ready(&ClientDataType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module_def);
    if (m == NULL)
        return NULL;
    if (PyModule_AddObjectRef(m, "ClientData", (PyObject *)&ClientDataType) < 0 ||
        PyModule_AddStringConstant(m, "IMPLEMENTATION", "c") < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
