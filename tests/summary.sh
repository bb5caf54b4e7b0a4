#!/bin/sh
# Adds up the results of `make test` and prints one closing line
# "N passed, M failed"; exits non-zero when anything failed.
dir=$1
passed=0; failed=0
for log in "$dir"/*.log; do
  [ -e "$log" ] || continue
  rc=$(cat "${log%.log}.rc" 2>/dev/null || echo 1)
  p=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' "$log" | tail -n 1)
  f=$(sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' "$log" | tail -n 1)
  passed=$((passed + ${p:-0})); failed=$((failed + ${f:-0}))
  # a crash, a sanitizer report or a non-zero exit without a cmocka failure line
  if [ "$rc" != 0 ] && [ -z "$f" ]; then failed=$((failed + 1)); echo "FAILED: $(basename "$log" .log) exited $rc"; fi
  if grep -q -E 'ERROR: (Address|Leak)Sanitizer|runtime error:|WARNING: ThreadSanitizer' "$log"; then
    failed=$((failed + 1)); echo "FAILED: sanitizer report in $(basename "$log" .log)"
  fi
done
for c in "$dir"/*.count; do
  [ -e "$c" ] || continue
  read ok bad < "$c"
  passed=$((passed + ok)); failed=$((failed + bad))
done
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
