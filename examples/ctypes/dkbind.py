# dkbind.py - a small Python binding of dispatch.h through its C ABI (the
# dk_abi_* functions) and nothing but ctypes: operators from schema strings,
# Python kernels and boxed fallbacks, errors as exceptions, lists, guards.
# examples/ctypes/example.py uses it; the lifetimes it keeps are the ones the
# ABI section of dispatch.h (>>tls) states.
import ctypes as C
import os
import re
import sys

Keyset = C.c_uint64  # dk_keyset: a struct of one uint64_t, passed as a uint64_t
BOXED_FN = C.CFUNCTYPE(None, C.c_void_p, C.c_void_p, Keyset, C.c_void_p)  # kernel, op, ks, stack
LOG_FN = C.CFUNCTYPE(None, C.c_int, C.c_int, C.c_char_p, C.c_void_p)      # level, item, message, user data


class DispatchError(RuntimeError):
    def __init__(self, status, message):
        RuntimeError.__init__(self, "%s: %s" % (status, message))
        self.status = status


class Tensor(C.Structure):
    """A 'mini array': the handle's first 8 bytes are its keyset (what the
    ABI's registry reads when it has no keyset_of hook), then its data."""
    _fields_ = [("ks", Keyset), ("n", C.c_size_t), ("data", C.POINTER(C.c_double))]
    live = {}  # address -> Tensor: the library keeps no tensor alive, the binding does

    @classmethod
    def of(cls, ks, values):
        buf = (C.c_double * len(values))(*values)
        t = cls(ks, len(values), C.cast(buf, C.POINTER(C.c_double)))
        t.buf = buf
        cls.live[C.addressof(t)] = t
        return t

    def values(self):
        return [self.data[i] for i in range(self.n)]


class Library:
    def __init__(self, path):
        self.c = lib = C.CDLL(path)

        def sig(name, restype, *argtypes):
            f = getattr(lib, name)
            f.restype, f.argtypes = restype, list(argtypes)

        P, S, I, Z, D, B = C.c_void_p, C.c_char_p, C.c_int, C.c_size_t, C.c_double, C.c_char_p
        for name in ("dk_abi_op_schema",):
            sig(name, I, P, P, Z)
        for name in ("dk_abi_op_argument_name", "dk_abi_op_argument_type", "dk_abi_op_argument_default",
                     "dk_abi_op_return_name", "dk_abi_op_return_type"):
            sig(name, I, P, I, P, Z)
        sig("dk_abi_op_num_arguments", I, P)
        sig("dk_abi_op_num_returns", I, P)
        sig("dk_abi_op_argument_kwarg_only", I, P, I)
        sig("dk_abi_registry_create_with", I, P, P, LOG_FN, P, C.POINTER(P))
        sig("dk_abi_registry_destroy", I, P)
        sig("dk_abi_op_lookup", I, P, S, C.POINTER(P))
        sig("dk_abi_kernel_desc_size", Z)
        sig("dk_abi_boxed", None, P, BOXED_FN, P)
        sig("dk_abi_kernel_named", None, P, S)
        sig("dk_abi_def_at", I, P, S, S, I, C.POINTER(P))
        sig("dk_abi_impl_at", I, P, S, I, P, S, I, C.POINTER(P))
        sig("dk_abi_fallback_at", I, P, I, P, S, I, C.POINTER(P))
        sig("dk_abi_call_boxed", I, P, P)
        sig("dk_abi_redispatch_boxed", I, P, Keyset, P)
        sig("dk_abi_call_fail", None, P, P, Keyset, I, S)
        sig("dk_abi_op_name", S, P)
        sig("dk_abi_num_statuses", I)
        sig("dk_abi_status_name", S, I)
        sig("dk_abi_ks_named", I, S, C.POINTER(Keyset))
        sig("dk_abi_ks_from_key", Keyset, I)
        sig("dk_abi_ks_full_after", Keyset, I)
        sig("dk_abi_ks_highest_key", I, Keyset)
        sig("dk_abi_ks_to_string", I, Keyset, P, Z)
        sig("dk_abi_guard_size", Z)
        sig("dk_abi_value_size", Z)
        sig("dk_abi_stack_create", P, Z)
        sig("dk_abi_stack_destroy", None, P)
        sig("dk_abi_stack_size", Z, P)
        sig("dk_abi_stack_clear", None, P)
        for name, t in (("none", None), ("bool", I), ("int", C.c_int64), ("double", D), ("string", B), ("tensor", P)):
            sig("dk_abi_stack_push_" + name, I, P, *([t] if t else []))
            sig("dk_abi_stack_pop_" + name, I, P, *([C.POINTER(t if t is not B else C.c_char_p)] if t else []))
        sig("dk_abi_stack_push_ints", I, P, P, Z)
        sig("dk_abi_stack_push_doubles", I, P, P, Z)
        sig("dk_abi_stack_push_list", I, P, P, Z)
        sig("dk_abi_stack_pop_ints", I, P, C.POINTER(C.POINTER(C.c_int64)), C.POINTER(Z))
        sig("dk_abi_stack_pop_doubles", I, P, C.POINTER(C.POINTER(D)), C.POINTER(Z))
        sig("dk_abi_stack_pop_list", I, P, C.POINTER(P), C.POINTER(Z))
        sig("dk_abi_value_tag", I, P, Z)
        sig("dk_abi_value_tensor", P, P, Z)
        sig("dk_abi_value_set_tensor", None, P, Z, P)
        sig("dk_abi_value_set_none", None, P, Z)
        sig("dk_abi_guard_include", None, Keyset, P)
        sig("dk_abi_guard_exclude", None, Keyset, P)
        sig("dk_abi_guard_pop", None, P)
        sig("dk_abi_stack_peek_tag", I, P, Z)
        sig("dk_stack_push_default", I, P, P)
        sig("dk_deregister", I, P)
        sig("dk_key_parse", I, S, C.POINTER(I))
        sig("dk_key_name", S, I)
        sig("dk_last_error", S)
        sig("dk_log_item_name", S, I)
        # statuses by their C names, from the library's own list
        self.status = {lib.dk_abi_status_name(i).decode(): i for i in range(lib.dk_abi_num_statuses())}
        self.status_name = {i: n for n, i in self.status.items()}

    def check(self, status, what):
        if status != self.status["DK_OK"]:
            message = self.c.dk_last_error().decode()
            raise DispatchError(self.status_name[status], message if message.startswith(what) else
                                "%s: %s" % (what, message))

    def key(self, name):
        k = C.c_int()
        self.check(self.c.dk_key_parse(name.encode(), C.byref(k)), "key %s" % name)
        return k.value

    def key_name(self, key):
        return self.c.dk_key_name(key).decode()

    def ks(self, *keys):
        out = 0
        for k in keys:
            out |= self.c.dk_abi_ks_from_key(self.key(k) if isinstance(k, str) else k)
        return out

    def named(self, name):  # a named keyset, DK_KS_...
        out = Keyset()
        self.check(self.c.dk_abi_ks_named(name.encode(), C.byref(out)), "named keyset")
        return out.value

    def ks_str(self, ks):
        buf = C.create_string_buffer(512)
        self.c.dk_abi_ks_to_string(ks, buf, len(buf))
        return buf.value.decode()

    def guard(self, push, ks):  # a guard as a context manager: this thread only
        lib = self

        class Guard:
            def __enter__(self):
                self.g = C.create_string_buffer(lib.c.dk_abi_guard_size())
                push(ks, self.g)

            def __exit__(self, *exc):
                lib.c.dk_abi_guard_pop(self.g)
        return Guard()

    def include(self, ks):
        return self.guard(self.c.dk_abi_guard_include, ks)

    def exclude(self, ks):
        return self.guard(self.c.dk_abi_guard_exclude, ks)


def _text(fn, *args):  # an snprintf-like ABI function: the whole text, or None
    n = fn(*(args + (None, 0)))
    if n < 0:
        return None
    buf = C.create_string_buffer(n + 1)
    fn(*(args + (buf, n + 1)))
    return buf.value.decode()


def _base(type_text):  # "Tensor(a!)" -> "Tensor", "int[1]" -> "int[]"
    return re.sub(r"\[\d*\]", "[]", re.sub(r"\([^)]*\)", "", type_text))


class Op:
    def __init__(self, registry, handle):
        self.r, self.lib, self.h = registry, registry.lib, handle
        c = self.lib.c
        self.name = c.dk_abi_op_name(handle).decode()
        self.refresh()

    def refresh(self):  # what the def says (none: no schema)
        c, h = self.lib.c, self.h
        self.schema = _text(c.dk_abi_op_schema, h)
        self.args = [(_text(c.dk_abi_op_argument_name, h, i), _base(_text(c.dk_abi_op_argument_type, h, i)),
                      _text(c.dk_abi_op_argument_default, h, i), c.dk_abi_op_argument_kwarg_only(h, i) == 1)
                     for i in range(max(c.dk_abi_op_num_arguments(h), 0))]
        self.returns = [_base(_text(c.dk_abi_op_return_type, h, i)) for i in range(max(c.dk_abi_op_num_returns(h), 0))]

    # --- boxing by schema type: what is pushed is not copied, `keep` holds it
    def _push(self, stack, t, v, keep):
        c = self.lib.c
        if v is None and t.endswith("?"):
            return c.dk_abi_stack_push_none(stack)
        t = t.rstrip("?") if not t.endswith("[]") else t
        if t.endswith("[]"):
            elem = t[:-2].rstrip("?")
            if elem in ("int", "SymInt"):
                arr = (C.c_int64 * len(v))(*v)
                keep.append(arr)
                return c.dk_abi_stack_push_ints(stack, arr, len(v))
            if elem == "float":
                arr = (C.c_double * len(v))(*v)
                keep.append(arr)
                return c.dk_abi_stack_push_doubles(stack, arr, len(v))
            vals = C.create_string_buffer(max(len(v), 1) * c.dk_abi_value_size())
            keep.append(vals)
            for i, x in enumerate(v):
                if x is None:
                    c.dk_abi_value_set_none(vals, i)
                else:
                    c.dk_abi_value_set_tensor(vals, i, C.addressof(x))
            return c.dk_abi_stack_push_list(stack, vals, len(v))
        if t == "Tensor":
            return c.dk_abi_stack_push_tensor(stack, C.addressof(v))
        if t == "int":
            return c.dk_abi_stack_push_int(stack, v)
        if t == "float":
            return c.dk_abi_stack_push_double(stack, float(v))
        if t == "bool":
            return c.dk_abi_stack_push_bool(stack, 1 if v else 0)
        if t == "str":
            b = v.encode()
            keep.append(b)
            return c.dk_abi_stack_push_string(stack, b)
        raise TypeError("%s: no boxing for %s in this binding" % (self.name, t))

    def _pop(self, stack, t):
        c = self.lib.c
        if t.endswith("?") and c.dk_abi_stack_peek_tag(stack, 0) == 0:  # DK_VALUE_NONE
            self.lib.check(c.dk_abi_stack_pop_none(stack), self.name)
            return None
        t = t.rstrip("?") if not t.endswith("[]") else t
        n = C.c_size_t()
        if t.endswith("[]"):
            elem = t[:-2].rstrip("?")
            if elem in ("int", "SymInt", "float"):
                p = C.POINTER(C.c_int64 if elem != "float" else C.c_double)()
                pop = c.dk_abi_stack_pop_ints if elem != "float" else c.dk_abi_stack_pop_doubles
                self.lib.check(pop(stack, C.byref(p), C.byref(n)), self.name)
                return [p[i] for i in range(n.value)]
            items = C.c_void_p()
            self.lib.check(c.dk_abi_stack_pop_list(stack, C.byref(items), C.byref(n)), self.name)
            return [Tensor.live.get(c.dk_abi_value_tensor(items, i)) for i in range(n.value)]
        if t == "Tensor":
            p = C.c_void_p()
            self.lib.check(c.dk_abi_stack_pop_tensor(stack, C.byref(p)), self.name)
            return Tensor.live[p.value]
        ctype, pop = {"int": (C.c_int64, c.dk_abi_stack_pop_int), "float": (C.c_double, c.dk_abi_stack_pop_double),
                      "bool": (C.c_int, c.dk_abi_stack_pop_bool), "str": (C.c_char_p, c.dk_abi_stack_pop_string)}[t]
        out = ctype()
        self.lib.check(pop(stack, C.byref(out)), self.name)
        return out.value.decode() if t == "str" else bool(out.value) if t == "bool" else out.value

    def _box(self, stack, args, kwargs, keep):
        if self.schema is None:  # no def: no schema to box by (tensors pushed as such, to show the call fail)
            for a in args:
                self._push(stack, "Tensor", a, keep)
        for i, (name, t, default, kwarg_only) in enumerate(self.args):
            if i < len(args) and not kwarg_only:
                self._push(stack, t, args[i], keep)
            elif name in kwargs:
                self._push(stack, t, kwargs[name], keep)
            else:  # the library pushes the schema's default (or names the argument that has none)
                self.lib.check(self.lib.c.dk_stack_push_default(self.h, stack), self.name)

    def _unbox(self, stack):
        out = [self._pop(stack, t) for t in reversed(self.returns)][::-1]
        return out[0] if len(out) == 1 else tuple(out) if out else None

    def _run(self, call, args, kwargs):
        keep, stack = [], self.lib.c.dk_abi_stack_create(len(self.args) + len(self.returns) + 1)
        try:
            self._box(stack, args, kwargs, keep)
            self.lib.check(call(stack), self.name)
            return self._unbox(stack)
        finally:
            self.lib.c.dk_abi_stack_destroy(stack)

    def __call__(self, *args, **kwargs):
        return self._run(lambda s: self.lib.c.dk_abi_call_boxed(self.h, s), args, kwargs)

    def redispatch(self, ks, *args, **kwargs):  # from a kernel: the kernel of ks, as given
        return self._run(lambda s: self.lib.c.dk_abi_redispatch_boxed(self.h, ks, s), args, kwargs)

    def impl(self, key):  # decorator: a Python kernel fn(ks, *args) at key
        def register(fn):
            self.r.impl(self.name, key, fn)
            return fn
        return register


class Registry:
    def __init__(self, lib, log=None):
        self.lib, self.keep, self.ops = lib, [], {}
        self.log = LOG_FN(lambda level, item, msg, ud: log(lib.c.dk_log_item_name(item).decode(), msg.decode())) \
            if log else LOG_FN()
        self.h = C.c_void_p()
        lib.check(lib.c.dk_abi_registry_create_with(None, None, self.log, None, C.byref(self.h)), "registry")

    def op(self, name):
        h = C.c_void_p()
        self.lib.check(self.lib.c.dk_abi_op_lookup(self.h, name.encode(), C.byref(h)), "lookup")
        if h.value not in self.ops:
            self.ops[h.value] = Op(self, h.value)
        return self.ops[h.value]

    def _op_of(self, handle):  # the Op a kernel or fallback receives
        if handle not in self.ops:
            self.ops[handle] = Op(self, handle)
        return self.ops[handle]

    def define(self, schema):
        h = C.c_void_p()
        f = sys._getframe(1)  # the caller's site, as C's __FILE__ and __LINE__
        self.lib.check(self.lib.c.dk_abi_def_at(self.h, schema.encode(), os.path.basename(f.f_code.co_filename).encode(),
                                                 f.f_lineno, C.byref(h)), "def")
        op = self.op(schema.split("(")[0])
        op.refresh()
        return op

    def _kernel(self, fn, body):
        # the callback object and its buffer live as long as the registry
        # (the ABI: a callback stays alive while registered)
        cb = BOXED_FN(body)
        desc = C.create_string_buffer(self.lib.c.dk_abi_kernel_desc_size())
        self.lib.c.dk_abi_boxed(desc, cb, None)
        name = fn.__name__.encode()  # read when the description is registered: kept until then (and after)
        self.lib.c.dk_abi_kernel_named(desc, name)
        self.keep.append((cb, desc, name))
        return desc, os.path.basename(fn.__code__.co_filename).encode(), fn.__code__.co_firstlineno

    def _fail(self, kernel, op, ks, e):
        message = ("%s: %s" % (type(e).__name__, e)).encode()
        self.lib.c.dk_abi_call_fail(op, kernel, ks, self.lib.status["DK_ERR_KERNEL_FAILED"], message)

    def impl(self, name, key, fn):
        def body(kernel, op_handle, ks, stack):
            try:  # an exception must not cross the C frames: it fails the call instead
                op = self._op_of(op_handle)
                args = [op._pop(stack, t) for (_, t, _, _) in reversed(op.args)][::-1]
                out = fn(ks, *args)
                outs = out if isinstance(out, tuple) else () if out is None else (out,)
                keep = []
                for t, v in zip(op.returns, outs):
                    op._push(stack, t, v, keep)
                if keep:
                    self.keep.append(keep)  # results' strings and arrays live until the caller pops them
            except Exception as e:
                self._fail(kernel, op_handle, ks, e)
        desc, site, line = self._kernel(fn, body)
        h = C.c_void_p()
        self.lib.check(self.lib.c.dk_abi_impl_at(self.h, name.encode(), self.lib.key(key), desc, site, line,
                                                  C.byref(h)), "impl %s at %s" % (name, key))
        return h

    def fallback(self, key):  # decorator: a boxed fn(op, ks, redispatch) for every operator at key
        def register(fn):
            def body(kernel, op_handle, ks, stack):
                try:
                    fn(self._op_of(op_handle), ks, lambda below: self.lib.c.dk_abi_redispatch_boxed(op_handle, below, stack))
                except Exception as e:
                    self._fail(kernel, op_handle, ks, e)
            desc, site, line = self._kernel(fn, body)
            h = C.c_void_p()
            self.lib.check(self.lib.c.dk_abi_fallback_at(self.h, self.lib.key(key), desc, site, line, C.byref(h)),
                           "fallback at %s" % key)
            return fn
        return register

    def destroy(self):
        self.lib.check(self.lib.c.dk_abi_registry_destroy(self.h), "destroy")
