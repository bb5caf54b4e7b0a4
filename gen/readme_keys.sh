#!/bin/sh
# Prints a markdown file (docs/keys.md) with the section between <!-- dkgen:keys --> and
# <!-- /dkgen:keys --> replaced by `dkgen --keys` (the key tables of the
# default lists), so the documentation cannot drift from the lists.
dkgen=$1; readme=$2
tables=$(mktemp)
"$dkgen" --keys > "$tables" || exit 1
awk -v tables="$tables" '
  /^<!-- dkgen:keys -->$/ { print; print ""; while ((getline line < tables) > 0) print line; print ""; skip = 1; next }
  /^<!-- \/dkgen:keys -->$/ { skip = 0 }
  !skip' "$readme"
rm -f "$tables"
