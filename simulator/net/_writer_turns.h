/* The response writer's turns in C, shared by the TCP model's twin (simulator/net/_tcp.c) and the
 * QUIC model's (simulator/net/_quic.c): which response's bytes go next, as simulator/net/writer.py's
 * ResponseWriter and simulator/http/priority_writer.py's ScheduledWriter decide it.
 *
 * Written by hand (moved here from _tcp.c when the QUIC writer came to need the same turns).
 * Responses wait in rotations per level (RFC 9218 section 4: the lowest urgency first,
 * round-robin among equals, a packet's worth per turn), or a scheduler names each chunk's
 * stream: a scheduler of http.priority through its hooks, one Python call a run of chunks
 * (pick_run / settle / remove), or the RFC 7540 tree's C twin (_stride_tree.h) with no Python
 * call per chunk.  What differs between the transports stays in the including file: how a chunk
 * is written (TCP: into the endpoint's send buffer; QUIC: into a stream's send queue, RFC 9000
 * section 2.2), when the writer writes (TCP fills the congestion window on each acknowledgement,
 * QUIC is pulled a packet at a time) and the object's other fields.
 *
 * The including file defines NET_MODULE and includes _stride_tree.h first, then its writer
 * object with a WriterTurns as its first field after PyObject_HEAD (WRITER_TURNS reads it
 * there) and a write function stored in WriterTurns.write.  Everything here is static: each
 * extension gets its own copy. */
#ifndef NET_WRITER_TURNS_H
#define NET_WRITER_TURNS_H

typedef struct {
    PyObject *sid;                 /* the stream id as given */
    long long remaining;
} Turn;

typedef struct {
    long long level;
    Turn *buf;
    Py_ssize_t head, size, cap;
} Rotation;

typedef struct {
    PyObject *written, *on_written;   /* stream -> bytes written (the caller's dict); on_written(stream) */
    long long chunk, unacked;
    Rotation *levels;              /* sorted by level; a level's rotation may be empty */
    Py_ssize_t nlevels;
    /* A scheduler's hooks (http.priority_writer._NativeScheduledWriter), NULL without:
     * pick_run(chunk_bytes) -> (stream, chunks) names the stream of the next chunks in place
     * of the rotations, settle(stream, chunks, chunk_bytes, last_bytes) is told a run's
     * bytes, remove(stream) a response written in full.  The responses then wait in one
     * rotation, found by their stream.  run_sid: the stream of the open run (or NULL). */
    PyObject *pick, *settle, *remove, *run_sid;
    long long run_left, run_count;
    /* Or the RFC 7540 tree's C twin (http.priority_writer, for TreeScheduler): each chunk's
     * stream picked and its bytes charged here, remove(stream) still told in Python. */
    TreeObject *tree;
    /* Cloudflare's shared sequential (http.priority_levels.LevelScheduler with split): the
     * levels are its groups, (urgency << 42) + order for a sequential response and
     * (urgency << 42) + (1 << 41) for the shared ones; per urgency the bytes each group has
     * sent, the shared group served while the sequential one is ahead. */
    char split;
    long long sent[8][2];
    /* The transport's write of n bytes of padding on stream sid (end: its last), by the
     * writer object that holds these turns. */
    int (*write)(PyObject *writer, PyObject *sid, long long n, int end);
} WriterTurns;

typedef struct {
    PyObject_HEAD
    WriterTurns t;
} TurnsHead;

#define WRITER_TURNS(self) (&((TurnsHead *)(self))->t)

static int
turns_traverse(WriterTurns *t, visitproc visit, void *arg)
{
    Py_VISIT(t->written);
    Py_VISIT(t->on_written);
    Py_VISIT(t->pick);
    Py_VISIT(t->settle);
    Py_VISIT(t->remove);
    Py_VISIT(t->run_sid);
    Py_VISIT((PyObject *)t->tree);
    for (Py_ssize_t i = 0; i < t->nlevels; i++) {
        Rotation *r = &t->levels[i];
        for (Py_ssize_t j = 0; j < r->size; j++)
            Py_VISIT(r->buf[(r->head + j) % r->cap].sid);
    }
    return 0;
}

static void
turns_clear(WriterTurns *t)
{
    Py_CLEAR(t->written);
    Py_CLEAR(t->on_written);
    Py_CLEAR(t->pick);
    Py_CLEAR(t->settle);
    Py_CLEAR(t->remove);
    Py_CLEAR(t->run_sid);
    Py_CLEAR(t->tree);
    Rotation *levels = t->levels;
    Py_ssize_t n = t->nlevels;
    t->levels = NULL;
    t->nlevels = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        Rotation *r = &levels[i];
        for (Py_ssize_t j = 0; j < r->size; j++)
            Py_DECREF(r->buf[(r->head + j) % r->cap].sid);
        PyMem_Free(r->buf);
    }
    PyMem_Free(levels);
}

static int
rotation_push(Rotation *r, PyObject *sid, long long remaining)   /* takes the reference to sid */
{
    if (r->size == r->cap) {
        Py_ssize_t cap = r->cap ? r->cap * 2 : 8;
        Turn *grown = PyMem_Malloc((size_t)cap * sizeof(Turn));
        if (grown == NULL) {
            Py_DECREF(sid);
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
    r->buf[(r->head + r->size) % r->cap] = (Turn){sid, remaining};
    r->size++;
    return 0;
}

/* The place in rotation ``r`` of the turn of stream ``sid`` (r->size: none; -1: an error).
 * The writer's own objects first, by identity (a scheduler names the stream by the object
 * it was given, so this finds it without a comparison per turn), then by equality. */
static Py_ssize_t
rotation_find(Rotation *r, PyObject *sid)
{
    for (Py_ssize_t j = 0; j < r->size; j++)
        if (r->buf[(r->head + j) % r->cap].sid == sid)
            return j;
    for (Py_ssize_t j = 0; j < r->size; j++) {
        int same = PyObject_RichCompareBool(r->buf[(r->head + j) % r->cap].sid, sid, Py_EQ);
        if (same < 0)
            return -1;
        if (same)
            return j;
    }
    return r->size;
}

/* The turn at place j out of rotation r, the others' order kept (its reference dropped). */
static void
rotation_take(Rotation *r, Py_ssize_t j)
{
    Py_DECREF(r->buf[(r->head + j) % r->cap].sid);
    for (Py_ssize_t k = j; k + 1 < r->size; k++)
        r->buf[(r->head + k) % r->cap] = r->buf[(r->head + k + 1) % r->cap];
    r->size--;
}

static Rotation *
turns_first(WriterTurns *t, Py_ssize_t *at)   /* the first level with a response waiting, or NULL */
{
    for (Py_ssize_t i = 0; i < t->nlevels; i++) {
        if (t->levels[i].size > 0) {
            if (at != NULL)
                *at = i;
            return &t->levels[i];
        }
    }
    return NULL;
}

static int
turns_dict_add(PyObject *dict, PyObject *key, long long n)   /* dict[key] = dict.get(key, 0) + n */
{
    long long v = 0;
    PyObject *old = PyDict_GetItemWithError(dict, key);
    if (old != NULL) {
        v = PyLong_AsLongLong(old);
        if (v == -1 && PyErr_Occurred())
            return -1;
    }
    else if (PyErr_Occurred())
        return -1;
    PyObject *nv = PyLong_FromLongLong(v + n);
    if (nv == NULL)
        return -1;
    int rc = PyDict_SetItem(dict, key, nv);
    Py_DECREF(nv);
    return rc;
}

/* A chunk of n bytes of sid counted and written, as ResponseWriter.write_next does before the
 * turns move: written[sid] += n, unacked += n, the transport's write. */
static int
turns_write(WriterTurns *t, PyObject *writer, PyObject *sid, long long n, int end)
{
    if (turns_dict_add(t->written, sid, n) < 0)
        return -1;
    t->unacked += n;
    return t->write(writer, sid, n, end);
}

/* The response written in full: the scheduler's remove (if hooked), then on_written. */
static int
turns_done(WriterTurns *t, PyObject *sid)
{
    if (t->remove != NULL) {
        PyObject *res = PyObject_CallOneArg(t->remove, sid);
        if (res == NULL)
            return -1;
        Py_DECREF(res);
    }
    PyObject *res = PyObject_CallOneArg(t->on_written, sid);
    if (res == NULL)
        return -1;
    Py_DECREF(res);
    return 0;
}

#define SPLIT_SHARED (1LL << 41)
#define SPLIT_URGENCY(level) ((int)(((level) >> 42) & 7))

/* The split's group counts start afresh when a group of the urgency is left empty
 * (LevelScheduler.remove). */
static void
split_after_remove(WriterTurns *t, long long level)
{
    long long base = (long long)SPLIT_URGENCY(level) << 42;
    int sequential = 0, shared = 0;
    for (Py_ssize_t i = 0; i < t->nlevels; i++) {
        Rotation *r = &t->levels[i];
        if (r->size == 0 || r->level < base || r->level > base + SPLIT_SHARED)
            continue;
        if (r->level == base + SPLIT_SHARED)
            shared = 1;
        else
            sequential = 1;
    }
    if (!sequential || !shared)
        t->sent[SPLIT_URGENCY(level)][0] = t->sent[SPLIT_URGENCY(level)][1] = 0;
}

/* A run's charges to the scheduler: settle(stream, chunks, chunk_bytes, last_bytes), the run
 * ended (none open: nothing). */
static int
turns_settle(WriterTurns *t, long long last)
{
    PyObject *sid = t->run_sid;
    if (sid == NULL)
        return 0;
    t->run_sid = NULL;
    PyObject *res = PyObject_CallFunction(t->settle, "OLLL", sid, t->run_count, t->chunk, last);
    Py_DECREF(sid);
    if (res == NULL)
        return -1;
    Py_DECREF(res);
    return 0;
}

/* write_next with a scheduler's hooks: pick_run(chunk_bytes) names a stream and how many
 * chunks in a row it would name it (each charged in full, nothing else changing); the
 * writer writes them, found in the rotation of its one level, and hands the charges over
 * at the run's end (settle): the scheduler is told what ScheduledWriter._write_chunk tells
 * it, in its order, in one call a run.  A chunk shorter than chunk_bytes (the response's
 * last, or a QUIC packet's room left, RFC 9000 section 13: frames of several streams in one
 * packet) ends the run. */
static long long
turns_next_picked(WriterTurns *t, PyObject *writer, long long limit)
{
    Rotation *r = turns_first(t, NULL);
    if (r == NULL)
        return 0;
    if (t->run_sid == NULL) {
        PyObject *chunk = PyLong_FromLongLong(t->chunk);
        if (chunk == NULL)
            return -1;
        PyObject *res = PyObject_CallOneArg(t->pick, chunk);
        Py_DECREF(chunk);
        if (res == NULL)
            return -1;
        long long k = 0;
        if (!PyTuple_Check(res) || PyTuple_GET_SIZE(res) != 2
                || ((k = PyLong_AsLongLong(PyTuple_GET_ITEM(res, 1))) == -1 && PyErr_Occurred()) || k < 1) {
            Py_DECREF(res);
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_TypeError, "pick_run must return (stream, chunks >= 1)");
            return -1;
        }
        t->run_sid = Py_NewRef(PyTuple_GET_ITEM(res, 0));
        Py_DECREF(res);
        t->run_left = k;
        t->run_count = 0;
    }
    PyObject *sid = Py_NewRef(t->run_sid);
    Py_ssize_t j = rotation_find(r, sid);
    if (j < 0)
        goto fail;
    if (j == r->size) {
        PyErr_Format(PyExc_KeyError, "the scheduler picked stream %R, which has nothing to write", sid);
        goto fail;
    }
    Turn *turn = &r->buf[(r->head + j) % r->cap];
    long long n = turn->remaining < limit ? turn->remaining : limit;
    long long remaining = turn->remaining - n;
    turn->remaining = remaining;
    if (turns_write(t, writer, sid, n, !remaining) < 0)
        goto fail;
    /* out of the rotation before any call into Python, which may add responses (and move
     * the rotations) */
    if (!remaining)
        rotation_take(r, j);
    if (n == t->chunk) {
        t->run_count++;
        t->run_left--;
        if ((t->run_left == 0 || !remaining) && turns_settle(t, 0) < 0)
            goto fail;
    }
    else if (turns_settle(t, n) < 0)          /* a shorter chunk ends the run */
        goto fail;
    if (!remaining && turns_done(t, sid) < 0)
        goto fail;
    Py_DECREF(sid);
    return n;
fail:
    Py_DECREF(sid);
    return -1;
}

/* write_next with the tree's C twin: the twin picks (TreeScheduler.pick), the chunk is
 * written, the twin charged (wrote), and a response written in full is removed from the
 * scheduler through Python (which removes it from the twin) before on_written:
 * ScheduledWriter._write_chunk's steps in its order, with no Python call for a chunk that does
 * not end a response. */
static long long
turns_next_tree(WriterTurns *t, PyObject *writer, long long limit)
{
    Rotation *r = turns_first(t, NULL);
    if (r == NULL)
        return 0;
    Py_ssize_t node = tree_pick(t->tree);
    if (node < 0) {
        PyErr_SetString(PyExc_LookupError, "the tree has no stream ready while responses wait");
        return -1;
    }
    PyObject *sid = Py_NewRef(t->tree->nodes[node].key);
    Py_ssize_t j = rotation_find(r, sid);
    if (j < 0)
        goto fail;
    if (j == r->size) {
        PyErr_Format(PyExc_KeyError, "the tree picked stream %R, which has nothing to write", sid);
        goto fail;
    }
    Turn *turn = &r->buf[(r->head + j) % r->cap];
    long long n = turn->remaining < limit ? turn->remaining : limit;
    long long remaining = turn->remaining - n;
    turn->remaining = remaining;
    if (turns_write(t, writer, sid, n, !remaining) < 0)
        goto fail;
    tree_wrote(t->tree, node, n);
    if (!remaining) {
        rotation_take(r, j);                    /* before any call into Python */
        if (turns_done(t, sid) < 0)
            goto fail;
    }
    Py_DECREF(sid);
    return n;
fail:
    Py_DECREF(sid);
    return -1;
}

/* write_next(limit): the bytes written (0: nothing waits), -1 on error. */
static long long
turns_next(WriterTurns *t, PyObject *writer, long long limit)
{
    if (t->tree != NULL)
        return turns_next_tree(t, writer, limit);
    if (t->pick != NULL)
        return turns_next_picked(t, writer, limit);
    Py_ssize_t at = 0;
    Rotation *r = turns_first(t, &at);
    if (r == NULL)
        return 0;
    long long level = r->level;
    int group = 0;
    if (t->split) {
        /* the sequential head unless the urgency's shared group waits and is behind in bytes */
        int u = SPLIT_URGENCY(level);
        group = (level & SPLIT_SHARED) != 0;
        if (!group && t->sent[u][0] > t->sent[u][1]) {
            long long key = ((long long)u << 42) + SPLIT_SHARED;
            for (Py_ssize_t i = at + 1; i < t->nlevels && t->levels[i].level <= key; i++) {
                if (t->levels[i].level == key && t->levels[i].size > 0) {
                    r = &t->levels[i];
                    group = 1;
                }
            }
        }
    }
    Turn turn = r->buf[r->head];              /* popleft: the reference to sid is ours */
    r->head = (r->head + 1) % r->cap;
    r->size--;
    long long n = turn.remaining < limit ? turn.remaining : limit;
    long long remaining = turn.remaining - n;
    if (turns_write(t, writer, turn.sid, n, !remaining) < 0) {
        Py_DECREF(turn.sid);
        return -1;
    }
    if (t->split)
        t->sent[SPLIT_URGENCY(r->level)][group] += n;
    if (!remaining) {
        if (t->split)
            split_after_remove(t, r->level);
        int rc = turns_done(t, turn.sid);
        Py_DECREF(turn.sid);
        if (rc < 0)
            return -1;
    }
    else if (rotation_push(r, turn.sid, remaining) < 0)   /* served: to the back of its rotation */
        return -1;
    return n;
}

static int
turns_waiting(WriterTurns *t)
{
    return turns_first(t, NULL) != NULL;
}

/* -- the methods both writers share (self: a writer object holding a WriterTurns first) -- */

static PyObject *
Writer_add(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    WriterTurns *t = WRITER_TURNS(self);
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "add(stream_id, size, level)");
        return NULL;
    }
    long long size = PyLong_AsLongLong(args[1]);
    if (size == -1 && PyErr_Occurred())
        return NULL;
    long long level = PyLong_AsLongLong(args[2]);
    if (level == -1 && PyErr_Occurred())
        return NULL;
    if (PyLong_AsLongLong(args[0]) == -1 && PyErr_Occurred())
        return NULL;
    Py_ssize_t i = 0;
    while (i < t->nlevels && t->levels[i].level < level)
        i++;
    if (i == t->nlevels || t->levels[i].level != level) {
        Rotation *grown = PyMem_Realloc(t->levels, (size_t)(t->nlevels + 1) * sizeof(Rotation));
        if (grown == NULL)
            return PyErr_NoMemory();
        t->levels = grown;
        memmove(&t->levels[i + 1], &t->levels[i], (size_t)(t->nlevels - i) * sizeof(Rotation));
        t->levels[i] = (Rotation){level, NULL, 0, 0, 0};
        t->nlevels++;
    }
    if (rotation_push(&t->levels[i], Py_NewRef(args[0]), size) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *
Writer_stop(PyObject *self, PyObject *sid)
{
    WriterTurns *t = WRITER_TURNS(self);
    for (Py_ssize_t i = 0; i < t->nlevels; i++) {
        Rotation *r = &t->levels[i];
        Py_ssize_t kept = 0;
        for (Py_ssize_t j = 0; j < r->size; j++) {
            Turn turn = r->buf[(r->head + j) % r->cap];
            int same = PyObject_RichCompareBool(turn.sid, sid, Py_EQ);
            if (same < 0)
                return NULL;
            if (same)
                Py_DECREF(turn.sid);
            else
                r->buf[(r->head + kept++) % r->cap] = turn;
        }
        int found = kept < r->size;
        r->size = kept;
        if (found && t->split)
            split_after_remove(t, r->level);
    }
    Py_RETURN_NONE;
}

static PyObject *
Writer_write_next(PyObject *self, PyObject *limit_obj)
{
    long long limit = PyLong_AsLongLong(limit_obj);
    if (limit == -1 && PyErr_Occurred())
        return NULL;
    long long n = turns_next(WRITER_TURNS(self), self, limit);
    return n < 0 ? NULL : PyLong_FromLongLong(n);
}

static PyObject *
Writer_get_waiting(PyObject *self, void *unused) { return PyBool_FromLong(turns_waiting(WRITER_TURNS(self))); }

static PyObject *
Writer_split_levels(PyObject *self, PyObject *unused)
{
    WRITER_TURNS(self)->split = 1;
    Py_RETURN_NONE;
}

static PyObject *
Writer_hook(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    WriterTurns *t = WRITER_TURNS(self);
    if (nargs != 3 || !PyCallable_Check(args[0]) || !PyCallable_Check(args[1]) || !PyCallable_Check(args[2])) {
        PyErr_SetString(PyExc_TypeError, "hook(pick_run, settle, remove)");
        return NULL;
    }
    Py_XSETREF(t->pick, Py_NewRef(args[0]));
    Py_XSETREF(t->settle, Py_NewRef(args[1]));
    Py_XSETREF(t->remove, Py_NewRef(args[2]));
    Py_RETURN_NONE;
}

static PyObject *
Writer_tree(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    WriterTurns *t = WRITER_TURNS(self);
    if (nargs != 2 || !PyObject_TypeCheck(args[0], &TreeType) || !PyCallable_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "tree(stride_tree, remove)");
        return NULL;
    }
    Py_XSETREF(t->tree, (TreeObject *)Py_NewRef(args[0]));
    Py_XSETREF(t->remove, Py_NewRef(args[1]));
    Py_RETURN_NONE;
}

static PyObject *
Writer_settle_run(PyObject *self, PyObject *unused)
{
    if (turns_settle(WRITER_TURNS(self), 0) < 0)
        return NULL;
    Py_RETURN_NONE;
}

#define WRITER_TURNS_METHODS                                                                                    \
    {"add", (PyCFunction)(void (*)(void))Writer_add, METH_FASTCALL,                                             \
     "add(stream_id, size, level): a response joins its rotation."},                                            \
    {"stop", (PyCFunction)Writer_stop, METH_O, "stop(stream_id): nothing more of it is written."},              \
    {"write_next", (PyCFunction)Writer_write_next, METH_O,                                                      \
     "write_next(limit) -> bytes written of the next response in turn."},                                       \
    {"split_levels", (PyCFunction)Writer_split_levels, METH_NOARGS,                                             \
     "Cloudflare's shared sequential: levels are (urgency << 42) + order or + (1 << 41), split by bytes."},     \
    {"hook", (PyCFunction)(void (*)(void))Writer_hook, METH_FASTCALL,                                           \
     "hook(pick_run, settle, remove): a scheduler names the stream of each run of chunks."},                    \
    {"tree", (PyCFunction)(void (*)(void))Writer_tree, METH_FASTCALL,                                           \
     "tree(stride_tree, remove): the RFC 7540 tree's C twin picks each chunk's stream; remove(stream) when "    \
     "written."},                                                                                               \
    {"settle", (PyCFunction)Writer_settle_run, METH_NOARGS,                                                     \
     "End the open run, its charges told to the scheduler (before the scheduler changes)."}

#define WRITER_TURNS_MEMBERS(type)                                                                              \
    {"chunk_bytes", T_LONGLONG, offsetof(type, t.chunk), READONLY, NULL},                                       \
    {"written", T_OBJECT, offsetof(type, t.written), READONLY, "stream -> bytes written on it"},                \
    {"on_written", T_OBJECT, offsetof(type, t.on_written), READONLY, NULL},                                     \
    {"unacked_bytes", T_LONGLONG, offsetof(type, t.unacked), 0, "written, not yet acknowledged"}

#endif
