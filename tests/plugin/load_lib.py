# The implementation as a shared object, loaded by Python's ctypes (a
# dlopen long after the interpreter started). A foreign caller passes the
# configuration signature itself; it is compared by its text, so one buffer
# reused with a wrong text is refused. usage: python3 load_lib.py lib
import ctypes
import sys

lib = ctypes.CDLL(sys.argv[1])
reg = ctypes.c_void_p()
lib.dk_abi_registry_create.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p)]
lib.dk_abi_registry_destroy.argtypes = [ctypes.c_void_p]
status = lib.dk_abi_registry_create(None, None, ctypes.byref(reg))   # the C ABI (examples/ctypes)
assert status == 0, status
lib.dk_abi_registry_destroy(reg)
lib.dk_config_signature.restype = ctypes.c_char_p
lib.dk_status_message.restype = ctypes.c_char_p
lib.dk_last_error.restype = ctypes.c_char_p
sig = lib.dk_config_signature()
buf = ctypes.create_string_buffer(sig)  # one buffer, reused below
status = lib.dk__registry_create(None, ctypes.byref(reg), buf)
assert status == 0, status
lib.dk_registry_destroy(reg)
# the same buffer, now with another reclamation mode: refused
buf.value = sig.replace(b"reclamation quiescent reclaim", b"reclamation call epochs")
assert buf.value != sig
status = lib.dk__registry_create(None, ctypes.byref(reg), buf)
assert b"configuration" in lib.dk_status_message(status), lib.dk_status_message(status)
assert b"caller 'reclamation call epochs'" in lib.dk_last_error(), lib.dk_last_error()
print("ctypes loaded the implementation (version %d), made a registry, and was refused one with a wrong "
      "signature in the same buffer" % lib.dk_version_number())
