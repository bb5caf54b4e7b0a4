#!/bin/sh
# Renders the page of dk_registry_html_to_string in headless chromium: the DOM it
# builds has the table (one row per operator, one cell per runtime key),
# and a screenshot is a PNG of the window's size with more than a blank
# page in it. Prints one line per check, writes "<passed> <failed>" to
# $results/html-render.count; without chromium it says SKIP and counts
# nothing (make deps installs it as root).
html=$1; out=$2; results=$3
mkdir -p "$out" "$results"
if ! command -v chromium > /dev/null 2>&1; then
  echo "  SKIP  html render: chromium is not installed (Debian: apt-get install chromium)"
  echo "0 0" > "$results/html-render.count"; exit 0
fi
page="file://$(cd "$(dirname "$html")" && pwd)/$(basename "$html")"
chrome() { timeout 60 chromium --headless --no-sandbox --disable-gpu --hide-scrollbars "$@" "$page" 2> "$out/chromium.err"; }
ok=0; bad=0
check() { # label, command...
  label=$1; shift
  if "$@" > "$out/log" 2>&1; then ok=$((ok + 1)); echo "  ok    $label"
  else bad=$((bad + 1)); echo "  FAIL  $label"; cat "$out/log"; tail -5 "$out/chromium.err"; fi
}
rows=$(grep -o '<tr data-op=' "$html" | wc -l)
cells=$(grep -o '<td class="dk-' "$html" | wc -l)
dom_ok() {
  chrome --dump-dom > "$out/dom.html" || return 1
  grep -q '<table class="dk-table">' "$out/dom.html" || { echo "no table in the DOM"; return 1; }
  r=$(grep -o '<tr data-op=' "$out/dom.html" | wc -l); c=$(grep -o '<td class="dk-' "$out/dom.html" | wc -l)
  [ "$rows" -gt 0 ] && [ "$r" = "$rows" ] && [ "$c" = "$cells" ] || { echo "DOM: $r rows, $c cells; page: $rows, $cells"; return 1; }
}
check "chromium's DOM of the page has the table: $rows operators, $cells cells" dom_ok
# the PNG's IHDR holds width and height (big-endian) at bytes 16..23
png_ok() {
  rm -f "$out/table.png"; chrome --screenshot="$out/table.png" --window-size=900,400 > /dev/null || return 1
  [ "$(od -An -c -j1 -N3 "$out/table.png" | tr -d ' ')" = PNG ] || { echo "not a PNG"; return 1; }
  set -- $(od -An -tu1 -j16 -N8 "$out/table.png")
  [ $(( ($3 << 8) + $4 )) = 900 ] && [ $(( ($7 << 8) + $8 )) = 400 ] || { echo "size $(( ($3 << 8) + $4 ))x$(( ($7 << 8) + $8 ))"; return 1; }
  # a blank 900x400 page compresses to about 2 KB; the table is tens of KB
  [ "$(wc -c < "$out/table.png")" -gt 10000 ] || { echo "the screenshot looks blank"; return 1; }
}
check "chromium renders a 900x400 screenshot of it (not blank)" png_ok
echo "$ok $bad" > "$results/html-render.count"
[ "$bad" = 0 ]
