# The implementation as a shared object, loaded by Python's ctypes (a
# dlopen long after the interpreter started). usage: python3 load_lib.py lib
import ctypes
import sys

lib = ctypes.CDLL(sys.argv[1])
reg = ctypes.c_void_p()
lib.dk_config_signature.restype = ctypes.c_char_p
sig = lib.dk_config_signature()
status = lib.dk__registry_create(None, ctypes.byref(reg), sig)
assert status == 0, status
lib.dk_registry_destroy(reg)
print("ctypes loaded the implementation (version %d) and made a registry" % lib.dk_version_number())
