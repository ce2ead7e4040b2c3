/* StrideTree: the RFC 7540 section 5.3 dependency tree of simulator/http/priority_tree.py
 * (TreeScheduler) in C, included by _tcp.c and _quic.c (each its own type, named by NET_MODULE).
 *
 * Written by hand, the twin of TreeScheduler's Python reference, step for step: a stream's
 * placement with exclusive adoption (5.3.1), stride scheduling over bytes among siblings
 * (5.3.2: a pass advanced by bytes x 256 / weight, the same IEEE operations as Python's in
 * the same order; the sibling of least (pass, order) picked, the earlier child on a tie), a
 * reprioritization with the move of a descendant (5.3.3) and a finished stream's children
 * moved up with its weight shared among them (5.3.4).  Where a stream goes (its parent:
 * Chromium's chain, Firefox's placeholders, a stream not in the tree) is still decided in
 * Python, which keeps only what that needs.  Why: with weighted siblings (Firefox's and
 * Safari's trees) every turn is one chunk, so a pick in Python per chunk was most of what the
 * tree cost; both ResponseWriters pick from this tree themselves (Writer_tree in
 * _writer_turns.h), the QUIC one from _quic.StrideTree.  tests/test_priority.py drives both over random
 * trees and compares every chunk.
 *
 * Nodes are kept in one array, a node's number its place (0: the root); a removed stream's
 * place is not reused. */

typedef struct {
    PyObject *key;                 /* the stream id (None: the root, a placeholder; NULL once removed) */
    Py_ssize_t parent;             /* -1: detached (the root has none) */
    Py_ssize_t *children, nchildren, cap;
    long long weight, order, active;   /* active: ready nodes in the subtree, itself included */
    double pass, vtime;            /* pass: bytes x 256 / weight served; vtime: the last served child's pass */
    char ready;
} TreeNode;

typedef struct {
    PyObject_HEAD
    TreeNode *nodes;
    Py_ssize_t n, cap;
    PyObject *index;               /* key -> node number, for wrote(key, nbytes) */
} TreeObject;

static PyTypeObject TreeType;

#define TREE_STRIDE 256.0          /* priority_tree._STRIDE */

static Py_ssize_t
tree_new_node(TreeObject *t, PyObject *key, long long weight, long long order)
{
    if (t->n == t->cap) {
        Py_ssize_t cap = t->cap ? t->cap * 2 : 16;
        TreeNode *grown = PyMem_Realloc(t->nodes, (size_t)cap * sizeof(TreeNode));
        if (grown == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        t->nodes = grown;
        t->cap = cap;
    }
    Py_ssize_t i = t->n;
    PyObject *number = PyLong_FromSsize_t(i);
    if (number == NULL)
        return -1;
    int rc = key == Py_None ? 0 : PyDict_SetItem(t->index, key, number);
    Py_DECREF(number);
    if (rc < 0)
        return -1;
    t->nodes[i] = (TreeNode){Py_NewRef(key), -1, NULL, 0, 0, weight, order, 0, 0.0, 0.0, 0};
    t->n++;
    return i;
}

static PyObject *
Tree_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    if (!PyArg_ParseTuple(args, ":StrideTree"))
        return NULL;
    TreeObject *t = (TreeObject *)type->tp_alloc(type, 0);
    if (t == NULL)
        return NULL;
    t->index = PyDict_New();
    if (t->index == NULL || tree_new_node(t, Py_None, 16, 0) < 0) {    /* the root: number 0 */
        Py_DECREF(t);
        return NULL;
    }
    return (PyObject *)t;
}

static int
Tree_traverse(TreeObject *t, visitproc visit, void *arg)
{
    Py_VISIT(t->index);
    for (Py_ssize_t i = 0; i < t->n; i++)
        Py_VISIT(t->nodes[i].key);
    return 0;
}

static int
Tree_clear(TreeObject *t)
{
    Py_CLEAR(t->index);
    for (Py_ssize_t i = 0; i < t->n; i++) {
        Py_CLEAR(t->nodes[i].key);
        PyMem_Free(t->nodes[i].children);
        t->nodes[i].children = NULL;
        t->nodes[i].nchildren = t->nodes[i].cap = 0;
    }
    return 0;
}

static void
Tree_dealloc(TreeObject *t)
{
    PyObject_GC_UnTrack(t);
    Tree_clear(t);
    PyMem_Free(t->nodes);
    Py_TYPE(t)->tp_free((PyObject *)t);
}

static int
tree_append_child(TreeNode *p, Py_ssize_t child)
{
    if (p->nchildren == p->cap) {
        Py_ssize_t cap = p->cap ? p->cap * 2 : 4;
        Py_ssize_t *grown = PyMem_Realloc(p->children, (size_t)cap * sizeof(Py_ssize_t));
        if (grown == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        p->children = grown;
        p->cap = cap;
    }
    p->children[p->nchildren++] = child;
    return 0;
}

/* TreeScheduler._bump: ``delta`` more ready nodes in the subtrees from ``i`` up. */
static void
tree_bump(TreeObject *t, Py_ssize_t i, long long delta)
{
    while (i >= 0 && delta) {
        t->nodes[i].active += delta;
        i = t->nodes[i].parent;
    }
}

static int
tree_number(TreeObject *t, PyObject *obj, Py_ssize_t *out)
{
    Py_ssize_t i = PyLong_AsSsize_t(obj);
    if (i == -1 && PyErr_Occurred())
        return -1;
    if (i < 0 || i >= t->n || t->nodes[i].key == NULL) {
        PyErr_Format(PyExc_IndexError, "no node %zd in the tree", i);
        return -1;
    }
    *out = i;
    return 0;
}

/* TreeScheduler._attach: ``i`` under ``p`` with ``weight`` (RFC 7540 5.3.1: an exclusive
 * dependent adopts the parent's children), a newcomer's pass at least the parent's vtime. */
static int
tree_attach(TreeObject *t, Py_ssize_t i, Py_ssize_t p, int exclusive, long long weight)
{
    t->nodes[i].weight = weight;
    long long own = t->nodes[i].active;
    if (exclusive) {
        TreeNode *parent = &t->nodes[p];
        for (Py_ssize_t k = 0; k < parent->nchildren; k++) {
            Py_ssize_t c = parent->children[k];
            t->nodes[c].parent = i;
            if (tree_append_child(&t->nodes[i], c) < 0)
                return -1;
            t->nodes[i].active += t->nodes[c].active;
        }
        parent->nchildren = 0;
    }
    if (tree_append_child(&t->nodes[p], i) < 0)
        return -1;
    TreeNode *node = &t->nodes[i];
    node->parent = p;
    node->pass = py_max(node->pass, t->nodes[p].vtime);
    tree_bump(t, p, own);      /* adopted children were counted under the parent already */
    return 0;
}

/* TreeScheduler._detach: out from under its parent, its ready nodes no longer counted above. */
static void
tree_detach(TreeObject *t, Py_ssize_t i)
{
    Py_ssize_t p = t->nodes[i].parent;
    TreeNode *parent = &t->nodes[p];
    Py_ssize_t k = 0;
    while (k < parent->nchildren && parent->children[k] != i)
        k++;
    memmove(&parent->children[k], &parent->children[k + 1], (size_t)(parent->nchildren - k - 1) * sizeof(Py_ssize_t));
    parent->nchildren--;
    tree_bump(t, p, -t->nodes[i].active);
    t->nodes[i].parent = -1;
}

/* The arguments (node, parent, exclusive, weight) of attach and move. */
static int
tree_args(TreeObject *t, PyObject *const *args, Py_ssize_t nargs, const char *usage, Py_ssize_t *node,
          Py_ssize_t *parent, int *exclusive, long long *weight)
{
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError, usage);
        return -1;
    }
    if (tree_number(t, args[0], node) < 0 || tree_number(t, args[1], parent) < 0)
        return -1;
    if ((*exclusive = PyObject_IsTrue(args[2])) < 0)
        return -1;
    *weight = PyLong_AsLongLong(args[3]);
    if (*weight == -1 && PyErr_Occurred())
        return -1;
    return 0;
}

/* node(key, weight, order) -> number: a new node, not yet in the tree (a placeholder). */
static PyObject *
Tree_node(TreeObject *t, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "node(key, weight, order)");
        return NULL;
    }
    long long weight = PyLong_AsLongLong(args[1]), order = PyLong_AsLongLong(args[2]);
    if (PyErr_Occurred())
        return NULL;
    Py_ssize_t i = tree_new_node(t, args[0], weight, order);
    return i < 0 ? NULL : PyLong_FromSsize_t(i);
}

/* attach(node, parent, exclusive, weight): a node not in the tree placed (a placeholder). */
static PyObject *
Tree_attach(TreeObject *t, PyObject *const *args, Py_ssize_t nargs)
{
    Py_ssize_t i, p;
    int exclusive;
    long long weight;
    if (tree_args(t, args, nargs, "attach(node, parent, exclusive, weight)", &i, &p, &exclusive, &weight) < 0)
        return NULL;
    if (t->nodes[i].parent >= 0 || i == 0) {
        PyErr_SetString(PyExc_ValueError, "attach: the node is in the tree already");
        return NULL;
    }
    if (tree_attach(t, i, p, exclusive, weight) < 0)
        return NULL;
    Py_RETURN_NONE;
}

/* add(stream_id, order, parent, exclusive, weight) -> number: TreeScheduler.add, a stream
 * with data ready placed (RFC 7540 5.3.1). */
static PyObject *
Tree_add(TreeObject *t, PyObject *const *args, Py_ssize_t nargs)
{
    Py_ssize_t p;
    if (nargs != 5) {
        PyErr_SetString(PyExc_TypeError, "add(stream_id, order, parent, exclusive, weight)");
        return NULL;
    }
    long long order = PyLong_AsLongLong(args[1]);
    if (order == -1 && PyErr_Occurred())
        return NULL;
    if (tree_number(t, args[2], &p) < 0)
        return NULL;
    int exclusive = PyObject_IsTrue(args[3]);
    long long weight = PyLong_AsLongLong(args[4]);
    if (exclusive < 0 || (weight == -1 && PyErr_Occurred()))
        return NULL;
    Py_ssize_t i = tree_new_node(t, args[0], weight, order);
    if (i < 0 || tree_attach(t, i, p, exclusive, weight) < 0)
        return NULL;
    t->nodes[i].ready = 1;
    tree_bump(t, i, 1);
    return PyLong_FromSsize_t(i);
}

/* remove(node): TreeScheduler.remove, the stream out of the tree; its children move to its
 * parent, its weight shared among them in proportion to theirs (RFC 7540 5.3.4). */
static PyObject *
Tree_remove(TreeObject *t, PyObject *arg)
{
    Py_ssize_t i;
    if (tree_number(t, arg, &i) < 0)
        return NULL;
    TreeNode *node = &t->nodes[i];
    if (!node->ready || node->parent < 0) {
        PyErr_SetString(PyExc_ValueError, "remove: not a stream in the tree");
        return NULL;
    }
    Py_ssize_t p = node->parent;
    tree_bump(t, i, -1);
    node->ready = 0;
    Py_ssize_t *kids = node->children, nkids = node->nchildren;
    node->children = NULL;
    node->nchildren = node->cap = 0;
    long long total = 0;
    for (Py_ssize_t k = 0; k < nkids; k++)
        total += t->nodes[kids[k]].weight;
    if (total == 0)
        total = 1;
    tree_detach(t, i);
    long long weight = t->nodes[i].weight;
    for (Py_ssize_t k = 0; k < nkids; k++) {
        long long share = weight * t->nodes[kids[k]].weight / total;
        t->nodes[kids[k]].parent = -1;
        if (tree_attach(t, kids[k], p, 0, share > 1 ? share : 1) < 0) {
            PyMem_Free(kids);
            return NULL;
        }
    }
    PyMem_Free(kids);
    node = &t->nodes[i];
    PyObject *number = PyDict_GetItemWithError(t->index, node->key);
    if (number == NULL && PyErr_Occurred())
        return NULL;
    if (number != NULL && PyLong_AsSsize_t(number) == i && PyDict_DelItem(t->index, node->key) < 0)
        return NULL;
    Py_CLEAR(node->key);
    Py_RETURN_NONE;
}

/* move(node, parent, exclusive, weight): TreeScheduler.update's steps, a reprioritization
 * (RFC 7540 5.3.3: a stream made dependent on its own descendant: that descendant first moves
 * to the stream's former parent). */
static PyObject *
Tree_move(TreeObject *t, PyObject *const *args, Py_ssize_t nargs)
{
    Py_ssize_t i, p;
    int exclusive;
    long long weight;
    if (tree_args(t, args, nargs, "move(node, parent, exclusive, weight)", &i, &p, &exclusive, &weight) < 0)
        return NULL;
    if (i == p || t->nodes[i].parent < 0) {
        PyErr_SetString(PyExc_ValueError, "move: a stream cannot depend on itself (RFC 7540 5.3.1)");
        return NULL;
    }
    t->nodes[i].weight = weight;
    Py_ssize_t q = p;
    while (q >= 0 && q != i)
        q = t->nodes[q].parent;
    if (q == i) {
        tree_detach(t, p);
        if (tree_attach(t, p, t->nodes[i].parent, 0, t->nodes[p].weight) < 0)
            return NULL;
    }
    tree_detach(t, i);
    if (tree_attach(t, i, p, exclusive, weight) < 0)
        return NULL;
    Py_RETURN_NONE;
}

/* TreeScheduler.pick: down from the root, the child of least (pass, order) with something ready
 * below (the earlier child on a tie), each level's vtime set to it, to a ready node; -1 if
 * nothing is ready. */
static Py_ssize_t
tree_pick(TreeObject *t)
{
    Py_ssize_t i = 0;
    if (t->nodes[0].active == 0)
        return -1;
    while (!t->nodes[i].ready) {
        TreeNode *node = &t->nodes[i];
        Py_ssize_t best = -1;
        double bp = 0.0;
        long long bo = 0;
        for (Py_ssize_t k = 0; k < node->nchildren; k++) {
            TreeNode *c = &t->nodes[node->children[k]];
            if (!c->active)
                continue;
            if (best < 0 || c->pass < bp || (c->pass == bp && c->order < bo)) {
                best = node->children[k];
                bp = c->pass;
                bo = c->order;
            }
        }
        node->vtime = bp;
        i = best;
    }
    return i;
}

/* TreeScheduler.wrote: the node's pass and each ancestor's (below the root) advanced by
 * bytes x 256 / weight (RFC 7540 5.3.2: siblings share in proportion to weight). */
static void
tree_wrote(TreeObject *t, Py_ssize_t i, long long nbytes)
{
    while (t->nodes[i].parent >= 0) {
        TreeNode *node = &t->nodes[i];
        node->pass += (double)nbytes * TREE_STRIDE / (double)node->weight;
        i = node->parent;
    }
}

static PyObject *
Tree_pick(TreeObject *t, PyObject *unused)
{
    Py_ssize_t i = tree_pick(t);
    if (i < 0) {
        PyErr_SetString(PyExc_LookupError, "pick: no stream has data ready");
        return NULL;
    }
    return Py_NewRef(t->nodes[i].key);
}

static PyObject *
Tree_wrote(TreeObject *t, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "wrote(stream_id, nbytes)");
        return NULL;
    }
    PyObject *number = PyDict_GetItemWithError(t->index, args[0]);
    if (number == NULL) {
        if (!PyErr_Occurred())
            PyErr_SetObject(PyExc_KeyError, args[0]);
        return NULL;
    }
    long long nbytes = PyLong_AsLongLong(args[1]);
    if (nbytes == -1 && PyErr_Occurred())
        return NULL;
    tree_wrote(t, PyLong_AsSsize_t(number), nbytes);
    Py_RETURN_NONE;
}

static PyMethodDef Tree_methods[] = {
    {"node", (PyCFunction)(void (*)(void))Tree_node, METH_FASTCALL,
     "node(key, weight, order) -> number: a new node, not yet in the tree (a placeholder)."},
    {"attach", (PyCFunction)(void (*)(void))Tree_attach, METH_FASTCALL,
     "attach(node, parent, exclusive, weight): a node not yet in the tree placed under parent."},
    {"add", (PyCFunction)(void (*)(void))Tree_add, METH_FASTCALL,
     "add(stream_id, order, parent, exclusive, weight) -> number: a stream with data ready placed."},
    {"remove", (PyCFunction)Tree_remove, METH_O, "remove(node): the stream out, its children up (RFC 7540 5.3.4)."},
    {"move", (PyCFunction)(void (*)(void))Tree_move, METH_FASTCALL,
     "move(node, parent, exclusive, weight): a reprioritization (RFC 7540 5.3.3)."},
    {"pick", (PyCFunction)Tree_pick, METH_NOARGS, "pick() -> the key of the stream whose chunk goes next."},
    {"wrote", (PyCFunction)(void (*)(void))Tree_wrote, METH_FASTCALL, "wrote(stream_id, nbytes): its bytes charged."},
    {NULL},
};

static PyTypeObject TreeType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = NET_MODULE ".StrideTree",
    .tp_doc = "StrideTree(): http.priority_tree.TreeScheduler's tree in C, its twin.",
    .tp_basicsize = sizeof(TreeObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_new = Tree_new,
    .tp_dealloc = (destructor)Tree_dealloc,
    .tp_traverse = (traverseproc)Tree_traverse,
    .tp_clear = (inquiry)Tree_clear,
    .tp_methods = Tree_methods,
};
