#!/usr/bin/env python3
"""Rename dispatch.h's public names to their 1.0.0 spelling, in place.

  tools/rename-1.0.py FILE...      rewrite each FILE (prints the files it changed)
  tools/rename-1.0.py --check FILE...   change nothing, exit 1 if a FILE would change
  tools/rename-1.0.py --table      print the table (old -> new), one pair a line

Use it to migrate code written against dispatch.h 0.1 / 0.2 to 1.0.0: every
pair of the table below is replaced as a whole word (an identifier), so
dk_abi_push_int becomes dk_abi_stack_push_int while dk_stack_push_default
stays. All pairs are applied in one pass and no new name is an old one, so
running it twice changes nothing. Besides identifiers it drops
dk_rename_backend's old registry argument (dk_rename_backend(r, b, "x") ->
dk_backend_rename(b, "x")) and renames dk_op_table's field reasons
(->reasons, .reasons) to source_details.

A name a program builds from pieces is no whole word and stays: look for
"dk_abi_push_" + kind, "dk_abi_pop_" + ... (a ctypes binding) by hand.
What a rename cannot do is left to the compiler, which points at it: the
changed calls are listed in CHANGELOG.md's 1.0.0 section (dk_def_with_adapters
is gone: dk_def_with with dk_def_options.adapters; dk_def_at takes a
const dk_def_options *; out of range, dk_status_message and dk_log_item_name
return NULL as every name function does).
"""
import re
import sys

# old -> new, in the order they were decided (CHANGELOG.md has them as a table)
TABLE = [
    # ---- 0.1 -> 0.2 (issue #22)
    # dispatch.h 1.0 renames: old name -> new name, one pair a line.
    # Applied with word boundaries by tools/rename-1.0.sh (the whole table, in
    # order, to every file named). Lines starting with # are comments.
    # Slot: one word for a runtime key's place in a table
    ('dk_ks_table_index', 'dk_ks_slot'),
    ('dk_key_table_index', 'dk_key_slot'),
    # Kernels are dispatched (dk_dispatch_kernel, dk_redispatch_kernel);
    # operators are looked up by name (dk_op_lookup, dk_op_lookup_defined)
    ('dk_dispatch', 'dk_dispatch_kernel'),
    ('dk_lookup', 'dk_redispatch_kernel'),
    ('dk_op_find', 'dk_op_lookup_defined'),
    # Stack operations in the dk_stack_* family
    ('dk_push', 'dk_stack_push'),
    ('dk_pop', 'dk_stack_pop'),
    ('dk_peek', 'dk_stack_peek'),
    # Guards in the dk_guard_* family (the thread's state stays dk_tls_*)
    ('dk_include_push', 'dk_guard_include'),
    ('dk_exclude_push', 'dk_guard_exclude'),
    ('dk_force_push', 'dk_guard_force'),
    ('dk_below_autograd_push', 'dk_guard_below_autograd'),
    ('dk_below_inplace_view_push', 'dk_guard_below_inplace_view'),
    ('dk_skip_functionalize_push', 'dk_guard_skip_functionalize'),
    # The public slow path of a typed call written out in full (gen/'s bindings)
    ('dk_call_slow', 'dk_call_packed'),
    # Object + verb
    ('dk_add_listener', 'dk_registry_add_listener'),
    ('dk_set_trace', 'dk_trace_set'),
    ('dk_fail_call', 'dk_call_fail'),
    ('dk_rename_backend', 'dk_backend_rename'),
    # No private type in a public struct
    ('dk__backend_row', 'dk_backend_row'),
    # What a slot holds: its kernel's kind (dk_kernel_kind), where it comes from
    # (dk_source) and c10's words for that (dk_source_detail)
    ('dk_reason', 'dk_source_detail'),
    ('DK_FORALL_REASONS', 'DK_FORALL_SOURCE_DETAILS'),
    ('DK_REASON_KERNEL', 'DK_SOURCE_DETAIL_KERNEL'),
    ('DK_REASON_NON_FUNCTIONAL', 'DK_SOURCE_DETAIL_NON_FUNCTIONAL'),
    ('DK_REASON_BACKEND', 'DK_SOURCE_DETAIL_BACKEND'),
    ('DK_REASON_NESTED', 'DK_SOURCE_DETAIL_NESTED'),
    ('DK_REASON_MATH', 'DK_SOURCE_DETAIL_MATH'),
    ('DK_REASON_AMBIGUOUS', 'DK_SOURCE_DETAIL_AMBIGUOUS'),
    ('DK_REASON_AUTOGRAD', 'DK_SOURCE_DETAIL_AUTOGRAD'),
    ('DK_REASON_BATCHED', 'DK_SOURCE_DETAIL_BATCHED'),
    ('DK_REASON_FALLBACK', 'DK_SOURCE_DETAIL_FALLBACK'),
    ('DK_REASON_MISSING', 'DK_SOURCE_DETAIL_MISSING'),
    # ---- 0.2 -> 1.0.0 (issue #32): the C ABI takes the C API's words
    ('dk_abi_ks_table_index', 'dk_abi_ks_slot'),
    ('dk_abi_num_runtime_entries', 'dk_abi_num_slots'),
    ('DK_NUM_RUNTIME_ENTRIES', 'DK_NUM_SLOTS'),
    ('dk_abi_include_push', 'dk_abi_guard_include'),
    ('dk_abi_exclude_push', 'dk_abi_guard_exclude'),
    ('dk_abi_force_push', 'dk_abi_guard_force'),
    ('dk_abi_below_autograd_push', 'dk_abi_guard_below_autograd'),
    ('dk_abi_below_inplace_view_push', 'dk_abi_guard_below_inplace_view'),
    ('dk_abi_skip_functionalize_push', 'dk_abi_guard_skip_functionalize'),
    # a stack the ABI allocates is created and destroyed (as a registry is);
    # dk_stack_init stays the C API's name for a stack in the caller's storage
    ('dk_abi_stack_new', 'dk_abi_stack_create'),
    ('dk_abi_stack_free', 'dk_abi_stack_destroy'),
    ('dk_abi_peek_tag', 'dk_abi_stack_peek_tag'),
    ('dk_abi_push_bool', 'dk_abi_stack_push_bool'),
    ('dk_abi_push_double', 'dk_abi_stack_push_double'),
    ('dk_abi_push_doubles', 'dk_abi_stack_push_doubles'),
    ('dk_abi_push_int', 'dk_abi_stack_push_int'),
    ('dk_abi_push_ints', 'dk_abi_stack_push_ints'),
    ('dk_abi_push_list', 'dk_abi_stack_push_list'),
    ('dk_abi_push_none', 'dk_abi_stack_push_none'),
    ('dk_abi_push_object', 'dk_abi_stack_push_object'),
    ('dk_abi_push_string', 'dk_abi_stack_push_string'),
    ('dk_abi_push_tensor', 'dk_abi_stack_push_tensor'),
    ('dk_abi_pop_bool', 'dk_abi_stack_pop_bool'),
    ('dk_abi_pop_double', 'dk_abi_stack_pop_double'),
    ('dk_abi_pop_doubles', 'dk_abi_stack_pop_doubles'),
    ('dk_abi_pop_int', 'dk_abi_stack_pop_int'),
    ('dk_abi_pop_ints', 'dk_abi_stack_pop_ints'),
    ('dk_abi_pop_list', 'dk_abi_stack_pop_list'),
    ('dk_abi_pop_none', 'dk_abi_stack_pop_none'),
    ('dk_abi_pop_object', 'dk_abi_stack_pop_object'),
    ('dk_abi_pop_string', 'dk_abi_stack_pop_string'),
    ('dk_abi_pop_tensor', 'dk_abi_stack_pop_tensor'),
    # one getter style: no get_ (the getters name what they return)
    ('dk_registry_get_stats', 'dk_registry_read_stats'),
    # a description is a message; _name is kept for names
    ('dk_status_str', 'dk_status_message'),
    # one word order: what the argument is, then what comes back
    ('dk_autograd_backend_set', 'dk_autograd_key_backend_set'),
    # one text verb: _to_string (each writes into buf, size like snprintf)
    ('dk_op_dump_state', 'dk_op_state_to_string'),
    ('dk_op_dump_computed_table', 'dk_op_computed_table_to_string'),
    ('dk_registry_dump_html', 'dk_registry_html_to_string'),
]

# expressions a table cannot say (0.1 -> 0.2), applied before the table
EXTRA = [
    (re.compile(r'\bdk_rename_backend\( *[^,()]*, *'), 'dk_backend_rename('),
    (re.compile(r'(->|\.)reasons\b'), r'\1source_details'),
]

RENAMES = dict(TABLE)
WORD = re.compile(r'\b(' + '|'.join(sorted(map(re.escape, RENAMES), key=len, reverse=True)) + r')\b')


def rewrite(text):
    for pattern, repl in EXTRA:
        text = pattern.sub(repl, text)
    return WORD.sub(lambda m: RENAMES[m.group(1)], text)


def main(argv):
    if argv[1:2] in (['-h'], ['--help']) or len(argv) < 2:
        print(__doc__.strip())
        return 0 if len(argv) >= 2 else 2
    if argv[1] == '--table':
        for old, new in TABLE:
            print('%-36s %s' % (old, new))
        return 0
    check = argv[1] == '--check'
    changed = 0
    for path in argv[2:] if check else argv[1:]:
        try:
            with open(path, encoding='utf-8', newline='') as f:
                text = f.read()
        except UnicodeDecodeError:
            print('%s: not UTF-8 text, left as it is' % path, file=sys.stderr)
            continue
        new = rewrite(text)
        if new != text:
            changed += 1
            print(path)
            if not check:
                with open(path, 'w', encoding='utf-8', newline='') as f:
                    f.write(new)
    return 1 if check and changed else 0


# the table's own promise: no new name is an old one (so a second run is a no-op)
assert not set(RENAMES) & set(RENAMES.values()), set(RENAMES) & set(RENAMES.values())
assert len(RENAMES) == len(TABLE)

if __name__ == '__main__':
    sys.exit(main(sys.argv))
