# dispatch.h from Python, through its C ABI and nothing but ctypes (the
# binding: dkbind.py, beside this file): operators from schema strings,
# Python kernels on CPU and an autograd kernel that redispatches below
# autograd, a boxed Python fallback for a tracing layer, a kernel that fails,
# lists, guards, two threads, and the mistakes a Python user makes.
#
#   usage: python3 example.py path/to/libdispatch-epochs.so
#   (the call-epochs build is the one a Python host loads: see the ABI
#   section of dispatch.h; the plain libdispatch.so runs this too)
import os
import re
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from dkbind import DispatchError, Library, Registry, Tensor  # noqa: E402

lib = Library(sys.argv[1])
CPU, AUTOGRAD_CPU, TRACER = lib.key("CPU"), lib.key("AutogradCPU"), lib.key("Tracer")
BELOW_TRACER = lib.c.dk_abi_ks_full_after(TRACER)
BELOW_AUTOGRAD = lib.named("DK_KS_AFTER_AUTOGRAD")


def error(e):  # a message without the line numbers of this file
    return re.sub(r"example\.py:\d+", "example.py:N", str(e))


logged = []
r = Registry(lib, log=lambda item, message: logged.append(item))

# --- operators from schemas; the binding reads names, types and defaults back
scale = r.define("mini::scale(Tensor x, float factor=2.0) -> Tensor")
total = r.define("mini::sum(Tensor?[] xs, int[] at=[0]) -> float")
div = r.define("mini::div(Tensor x, float by) -> Tensor")
forgetful = r.define("mini::forgetful(Tensor x) -> Tensor")
for op in (scale, total):
    print("%s: %s" % (op.name, ", ".join("%s %s%s" % (t, n, "" if d is None else "=" + d) for n, t, d, _ in op.args)))


# --- kernels in Python: arguments unboxed by the schema, results boxed back
@scale.impl("CPU")
def scale_cpu(ks, x, factor):
    return Tensor.of(x.ks, [v * factor for v in x.values()])


tape = []


@scale.impl("AutogradCPU")
def scale_autograd(ks, x, factor):
    tape.append("scale by %g" % factor)
    return scale.redispatch(ks & BELOW_AUTOGRAD, x, factor)


@total.impl("CPU")
def total_cpu(ks, xs, at):
    return sum(t.values()[i] for t in xs if t is not None for i in at)


@div.impl("CPU")
def div_cpu(ks, x, by):
    return Tensor.of(x.ks, [v / by for v in x.values()])  # raises for by == 0: the call fails


@forgetful.impl("CPU")
def forgetful_cpu(ks, x):
    return None  # returns nothing where the schema says Tensor


traced = []


# --- a boxed fallback in Python for every operator at Tracer: records the
# call and redispatches below its own key (ignoring the status: a failure
# below still reaches the outer call)
@r.fallback("Tracer")
def trace(op, ks, redispatch):
    traced.append("%s: %s at %s" % (threading.current_thread().name, op.name,
                                     lib.key_name(lib.c.dk_abi_ks_highest_key(ks))))
    redispatch(ks & BELOW_TRACER)


x = Tensor.of(lib.ks(CPU), [1.0, 2.0, 3.0])
y = Tensor.of(lib.ks(CPU), [10.0, 20.0, 30.0])
print("scale(x) = %s (the schema's default factor)" % scale(x).values())
print("scale(x, factor=10) = %s" % scale(x, factor=10).values())
print("sum([x, None, y], at=[0, 2]) = %g" % total([x, None, y], at=[0, 2]))
print("sum([x, y]) = %g (at=[0] by default)" % total([x, y]))
xg = Tensor.of(lib.ks(CPU, AUTOGRAD_CPU), [1.0, 2.0])
print("scale(xg, 3) = %s, tape %s" % (scale(xg, 3).values(), tape))

# --- errors: a kernel that raises, one that returns too little
for what, f in (("div(x, 0)", lambda: div(x, 0.0)), ("forgetful(x)", lambda: forgetful(x))):
    try:
        f()
    except DispatchError as e:
        print("%s: %s" % (what, error(e)))
with lib.include(lib.ks(TRACER)):  # the same failure below the tracing fallback is not lost
    try:
        div(x, 0.0)
    except DispatchError as e:
        print("div(x, 0) traced: %s" % e.status)

# --- guards and two threads: the Tracer layer on for the main thread only
N = 200
results = {}


def calls(name):
    results[name] = sum(scale(x, 1.0).values()[0] for _ in range(N))


worker = threading.Thread(target=calls, args=("worker",), name="worker")
del traced[:]
with lib.include(lib.ks(TRACER)):
    worker.start()
    calls("main")
worker.join()
print("two threads, %d calls each: results %g and %g, traced %d (all on %s)" % (
    N, results["main"], results["worker"], len(traced), sorted(set(t.split(":")[0] for t in traced))))
assert len(traced) == N and all(t.startswith("MainThread: mini::scale at Tracer") for t in traced)

# --- a kernel registered again: the registry's logger says so; deregistered: the old one again
h = r.impl("mini::scale", "CPU", lambda ks, x, factor: Tensor.of(x.ks, [0.0] * x.n))
print("after a second CPU kernel: scale(x) = %s, logged %s" % (scale(x).values(), logged))
lib.check(lib.c.dk_deregister(h), "deregister")
print("deregistered: scale(x) = %s" % scale(x).values())

# --- mistakes: a typo in the name given to impl, a registry used after destroy
r.impl("mini::scal", "CPU", scale_cpu)
try:
    r.op("mini::scal")(x)
except DispatchError as e:
    print("typo: %s" % e.status)
    print("  %s" % [line for line in str(e).split("\n") if "likely cause" in line][0].strip())
r.destroy()
for what, f in (("destroy again", r.destroy), ("define after destroy", lambda: r.define("mini::late(Tensor x) -> Tensor"))):
    try:
        f()
    except DispatchError as e:
        print("%s: %s" % (what, e.status))
print("ok")
