# dispatch.h from Python, through its C ABI (the dk_abi_* functions) and
# nothing but ctypes: define an operator, register a Python kernel and a
# boxed Python fallback, call the operator boxed, and turn the fallback's
# layer on and off for one thread.
#
#   usage: python3 example.py path/to/libdispatch.so
import ctypes as C
import sys
import threading

lib = C.CDLL(sys.argv[1])

# --- the C types, spelled in ctypes -----------------------------------------
# dk_keyset is a struct of one uint64_t: passed as a uint64_t. Keys are ints.
Keyset = C.c_uint64
BOXED_FN = C.CFUNCTYPE(None, C.c_void_p, C.c_void_p, Keyset, C.c_void_p)  # kernel, op, ks, stack


class Guard(C.Structure):  # dk_guard: two uint64_t
    _fields_ = [("included_delta", C.c_uint64), ("excluded_delta", C.c_uint64)]


class Tensor(C.Structure):  # a handle whose first 8 bytes are its keyset
    _fields_ = [("ks", Keyset), ("value", C.c_double)]


def sig(name, restype, *argtypes):
    f = getattr(lib, name)
    f.restype = restype
    f.argtypes = list(argtypes)
    return f


sig("dk_abi_registry_create", C.c_int, C.c_void_p, C.c_void_p, C.POINTER(C.c_void_p))
sig("dk_abi_registry_destroy", None, C.c_void_p)
sig("dk_abi_kernel_desc_size", C.c_size_t)
sig("dk_abi_boxed", None, C.c_void_p, BOXED_FN, C.c_void_p)
sig("dk_abi_def", C.c_int, C.c_void_p, C.c_char_p, C.POINTER(C.c_void_p))
sig("dk_abi_impl", C.c_int, C.c_void_p, C.c_char_p, C.c_int, C.c_void_p, C.POINTER(C.c_void_p))
sig("dk_abi_fallback", C.c_int, C.c_void_p, C.c_int, C.c_void_p, C.POINTER(C.c_void_p))
sig("dk_abi_op_name", C.c_char_p, C.c_void_p)
sig("dk_abi_num_backends", C.c_int)
sig("dk_abi_ks_from_key", Keyset, C.c_int)
sig("dk_abi_ks_or", Keyset, Keyset, Keyset)
sig("dk_abi_ks_and", Keyset, Keyset, Keyset)
sig("dk_abi_ks_full_after", Keyset, C.c_int)
sig("dk_abi_ks_highest_key", C.c_int, Keyset)
sig("dk_abi_ks_to_string", C.c_int, Keyset, C.c_char_p, C.c_size_t)
sig("dk_abi_stack_new", C.c_void_p, C.c_size_t)
sig("dk_abi_stack_free", None, C.c_void_p)
sig("dk_abi_stack_size", C.c_size_t, C.c_void_p)
sig("dk_abi_push_tensor", C.c_int, C.c_void_p, C.c_void_p)
sig("dk_abi_push_double", C.c_int, C.c_void_p, C.c_double)
sig("dk_abi_pop_tensor", C.c_int, C.c_void_p, C.POINTER(C.c_void_p))
sig("dk_abi_pop_double", C.c_int, C.c_void_p, C.POINTER(C.c_double))
sig("dk_abi_include_push", None, Keyset, C.POINTER(Guard))
sig("dk_abi_guard_pop", None, C.POINTER(Guard))
sig("dk_abi_tls_included", Keyset)
sig("dk_abi_call_boxed", C.c_int, C.c_void_p, C.c_void_p)
sig("dk_abi_redispatch_boxed", C.c_int, C.c_void_p, Keyset, C.c_void_p)
sig("dk_op_lookup", C.c_void_p, C.c_void_p, C.c_char_p)
sig("dk_key_parse", C.c_int, C.c_char_p, C.POINTER(C.c_int))
sig("dk_key_name", C.c_char_p, C.c_int)
sig("dk_last_error", C.c_char_p)
sig("dk_status_str", C.c_char_p, C.c_int)

DK_OK = 0


def check(status, what):
    if status != DK_OK:
        raise RuntimeError("%s: %s (%s)" % (what, lib.dk_status_str(status).decode(), lib.dk_last_error().decode()))


def key(name):  # the library's own key list names its keys
    k = C.c_int()
    check(lib.dk_key_parse(name.encode(), C.byref(k)), "dk_key_parse(%s)" % name)
    return k.value


def keyset_str(ks):
    buf = C.create_string_buffer(256)
    lib.dk_abi_ks_to_string(ks, buf, len(buf))
    return buf.value.decode()


CPU, TRACER = key("CPU"), key("Tracer")
print("the library's key list: %d backends; CPU is key %d, Tracer key %d" % (lib.dk_abi_num_backends(), CPU, TRACER))

reg = C.c_void_p()
check(lib.dk_abi_registry_create(None, None, C.byref(reg)), "dk_abi_registry_create")
handle = C.c_void_p()
check(lib.dk_abi_def(reg, b"py::scale(Tensor x, float factor) -> float", C.byref(handle)), "dk_abi_def")


# --- a kernel in Python: pops its arguments (last on top), pushes its return
@BOXED_FN
def scale_cpu(kernel, op, ks, stack):
    factor, tensor = C.c_double(), C.c_void_p()
    check(lib.dk_abi_pop_double(stack, C.byref(factor)), "pop factor")
    check(lib.dk_abi_pop_tensor(stack, C.byref(tensor)), "pop x")
    x = C.cast(tensor, C.POINTER(Tensor)).contents
    lib.dk_abi_push_double(stack, x.value * factor.value)


log = []  # what the tracing layer saw, per thread


# --- a boxed fallback in Python for every operator at Tracer: records the
# call, then redispatches below its own key
@BOXED_FN
def trace_fallback(kernel, op, ks, stack):
    log.append("%s: %s at %s" % (threading.current_thread().name, lib.dk_abi_op_name(op).decode(),
                                 lib.dk_key_name(lib.dk_abi_ks_highest_key(ks)).decode()))
    lib.dk_abi_redispatch_boxed(op, lib.dk_abi_ks_and(ks, lib.dk_abi_ks_full_after(TRACER)), stack)


kernel = C.create_string_buffer(lib.dk_abi_kernel_desc_size())
lib.dk_abi_boxed(kernel, scale_cpu, None)
check(lib.dk_abi_impl(reg, b"py::scale", CPU, kernel, C.byref(handle)), "dk_abi_impl")
lib.dk_abi_boxed(kernel, trace_fallback, None)
check(lib.dk_abi_fallback(reg, TRACER, kernel, C.byref(handle)), "dk_abi_fallback")

# a bad registration: a clear status and message, nothing registered
status = lib.dk_abi_impl(reg, b"py::scale", 100000, kernel, C.byref(handle))
print("impl at key 100000: %s (%s)" % (lib.dk_status_str(status).decode(), lib.dk_last_error().decode()))
assert status != DK_OK

op = lib.dk_op_lookup(reg, b"py::scale")
x = Tensor(lib.dk_abi_ks_from_key(CPU), 1.5)
print("x's keyset: %s" % keyset_str(x.ks))


def scale(t, factor):  # a boxed call: push the arguments, call, pop the return
    stack = lib.dk_abi_stack_new(4)
    lib.dk_abi_push_tensor(stack, C.cast(C.pointer(t), C.c_void_p))
    lib.dk_abi_push_double(stack, factor)
    check(lib.dk_abi_call_boxed(op, stack), "py::scale")
    out = C.c_double()
    check(lib.dk_abi_pop_double(stack, C.byref(out)), "pop the result")
    assert lib.dk_abi_stack_size(stack) == 0
    lib.dk_abi_stack_free(stack)
    return out.value


print("scale(x, 2) = %g (tracing off: %d traced)" % (scale(x, 2.0), len(log)))
assert not log

# the Tracer layer on for this thread only: a guard includes its key
guard = Guard()
lib.dk_abi_include_push(lib.dk_abi_ks_from_key(TRACER), C.byref(guard))
print("this thread includes %s" % keyset_str(lib.dk_abi_tls_included()))
print("scale(x, 3) = %g" % scale(x, 3.0))

other = []
worker = threading.Thread(target=lambda: other.append(scale(x, 4.0)), name="worker")
worker.start()
worker.join()
print("scale(x, 4) on another thread = %g (its layers are its own: not traced)" % other[0])

lib.dk_abi_guard_pop(C.byref(guard))
print("scale(x, 5) = %g (guard popped)" % scale(x, 5.0))
for line in log:
    print("  traced: %s" % line)
assert log == ["MainThread: py::scale at Tracer"], log

lib.dk_abi_registry_destroy(reg)
print("ok")
