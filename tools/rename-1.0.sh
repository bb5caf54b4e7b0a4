#!/bin/sh
# Applies the 1.0 renames (tools/rename-1.0.txt) to the files named, in place:
#   tools/rename-1.0.sh dispatch.h tests/*.c ...
# Every pair is replaced with word boundaries, so dk_push becomes
# dk_stack_push but dk_abi_push_int and dk_stack_push_default stay. Running it
# twice is harmless (no new name is an old one). Besides the table, one
# signature changed: dk_backend_rename lost its ignored registry argument,
# which the first expression drops (dk_rename_backend(r, b, "x") ->
# dk_backend_rename(b, "x")), and dk_op_table's field reasons is
# source_details (->reasons / .reasons are renamed); the def macros were merged (dk_def_with_adapters
# is gone: use dk_def_with with dk_def_options.adapters; dk_def_at takes a
# const dk_def_options * where it took adapters): a compile error points at
# what is left to do by hand.
set -e
table="$(dirname "$0")/rename-1.0.txt"
# the argument drop and dk_op_table's field reasons -> source_details first,
# then the table
script='s/\<dk_rename_backend( *[^,()]*, */dk_backend_rename(/g;s/\(->\|\.\)reasons\>/\1source_details/g;'
script="$script$(grep -v '^#' "$table" | awk 'NF == 2 { printf "s/\\<%s\\>/%s/g;", $1, $2 }')"
for f in "$@"; do sed -i "$script" "$f"; done
