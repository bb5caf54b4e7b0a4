# The implementation as a shared object, loaded by Python's ctypes (a
# dlopen long after the interpreter started). usage: python3 load_lib.py lib
import ctypes
import sys

lib = ctypes.CDLL(sys.argv[1])
reg = ctypes.c_void_p()
lib.dk_abi_registry_create.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p)]
lib.dk_abi_registry_destroy.argtypes = [ctypes.c_void_p]
status = lib.dk_abi_registry_create(None, None, ctypes.byref(reg))   # the C ABI (examples/ctypes)
assert status == 0, status
lib.dk_abi_registry_destroy(reg)
print("ctypes loaded the implementation (version %d) and made a registry" % lib.dk_version_number())
