/* Attribute reads and writes at a slot's offset, shared by the C twins (_quic.c, _tcp.c).
 * Written by hand; see fast_getattr below.  Each module that includes it has its own cache. */
#ifndef WORKBENCH_FASTATTR_H
#define WORKBENCH_FASTATTR_H

/* Attributes of Python objects (the endpoint, SendStream, RecvStream, RangeSet, the Simulator: classes
 * with __slots__), read and written as CPython's own generic getattr/setattr does for a slot,
 * without its per-call lookup: a slot's offset is looked up once per (type, name) and kept while
 * the type's version tag is unchanged (any change to the class or its bases changes the tag, as
 * CPython's attribute caches rely on).  A C type's object member (T_OBJECT, read-only or not) is
 * read the same way (NULL reads None, as PyMember_GetOne does); only a writable slot is written.
 * Anything else (no slot, a property, an unset slot, a type with its own __getattribute__ or
 * __setattr__) goes through PyObject_GetAttr / PyObject_SetAttr. */
#define SLOT_CACHE_SIZE 512
/* How fast_getattr / fast_setattr are compiled: inline by default; _quic.c defines it as one
 * out-of-line copy (its per-packet path calls them from dozens of places, and the inlined copies
 * cost more in instruction-cache misses than the calls save). */
#ifndef FASTATTR_FN
#define FASTATTR_FN static inline
#endif
typedef struct {
    PyTypeObject *type;
    PyObject *name;
    unsigned int version;
    Py_ssize_t offset;             /* -1: not a plain object slot */
    char kind;                     /* SLOT_WRITABLE, SLOT_READONLY (T_OBJECT_EX) or SLOT_OBJECT (T_OBJECT) */
} SlotEntry;
enum { SLOT_WRITABLE = 0, SLOT_READONLY = 1, SLOT_OBJECT = 2 };
static SlotEntry slot_cache[SLOT_CACHE_SIZE];

static inline Py_ssize_t
slot_offset(PyTypeObject *tp, PyObject *name, char *kind)
{
    size_t h = ((((uintptr_t)tp) >> 4) * 31u + (((uintptr_t)name) >> 4)) & (SLOT_CACHE_SIZE - 1);
    SlotEntry *e = &slot_cache[h];
    if (e->type == tp && e->name == name && PyType_HasFeature(tp, Py_TPFLAGS_VALID_VERSION_TAG)
        && e->version == tp->tp_version_tag) {
        *kind = e->kind;
        return e->offset;
    }
    Py_ssize_t offset = -1;
    *kind = SLOT_WRITABLE;
    if (PyUnicode_CheckExact(name)) {
        PyObject *descr = _PyType_Lookup(tp, name);      /* borrowed; gives the type a version tag */
        if (descr != NULL && Py_IS_TYPE(descr, &PyMemberDescr_Type)) {
            PyMemberDef *m = ((PyMemberDescrObject *)descr)->d_member;
            if ((m->type == T_OBJECT_EX || m->type == T_OBJECT) && m->offset > 0 && !(m->flags & READ_RESTRICTED)) {
                offset = m->offset;
                *kind = m->type == T_OBJECT ? SLOT_OBJECT : (m->flags & READONLY) ? SLOT_READONLY : SLOT_WRITABLE;
            }
        }
    }
    if (PyType_HasFeature(tp, Py_TPFLAGS_VALID_VERSION_TAG))
        *e = (SlotEntry){tp, name, tp->tp_version_tag, offset, *kind};
    return offset;
}

FASTATTR_FN PyObject *
fast_getattr(PyObject *o, PyObject *name)
{
    PyTypeObject *tp = Py_TYPE(o);
    if (tp->tp_getattro == PyObject_GenericGetAttr) {
        char kind;
        Py_ssize_t offset = slot_offset(tp, name, &kind);
        if (offset > 0) {
            PyObject *v = *(PyObject **)((char *)o + offset);
            if (v != NULL)
                return Py_NewRef(v);
            if (kind == SLOT_OBJECT)
                Py_RETURN_NONE;
        }
    }
    return PyObject_GetAttr(o, name);
}

FASTATTR_FN int
fast_setattr(PyObject *o, PyObject *name, PyObject *v)
{
    PyTypeObject *tp = Py_TYPE(o);
    if (v != NULL && tp->tp_setattro == PyObject_GenericSetAttr) {
        char kind;
        Py_ssize_t offset = slot_offset(tp, name, &kind);
        if (offset > 0 && kind == SLOT_WRITABLE) {   /* as PyMember_SetOne for T_OBJECT_EX */
            PyObject **addr = (PyObject **)((char *)o + offset);
            PyObject *old = *addr;
            *addr = Py_NewRef(v);
            Py_XDECREF(old);
            return 0;
        }
    }
    return PyObject_SetAttr(o, name, v);
}

#endif
