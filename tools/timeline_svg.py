#!/usr/bin/env python3
"""tools/timeline_svg.py TIMELINE.json OUT.svg [TITLE]: a picture of a
timeline written by dk_timeline_save, as chrome://tracing or Perfetto
would lay it out: one band per thread, one row per nesting depth, one box
per call (time left to right), labelled with the operator and the slot's
key, coloured by what ran (a kernel, a redispatch, a boxed call, a
fallback, a failed call). System python3 only (json, xml escaping).
Gaps between calls longer than the calls themselves are cut short (a
zigzag on the axis), so that short calls stay readable."""
import json
import sys
from xml.sax.saxutils import escape

COLOURS = {"call": "#4e79a7", "redispatch": "#59a14f", "boxed call": "#f28e2b", "fallback": "#b07aa1",
           "failed": "#e15759"}
ROW, BAND_GAP, LEFT, WIDTH = 26, 18, 90, 1100


def kind(e):
    a = e["args"]
    if a.get("failed"):
        return "failed"
    if a.get("fallback"):
        return "fallback"
    return e["cat"] if e["cat"] in COLOURS else "call"


def main():
    doc = json.load(open(sys.argv[1]))
    out = sys.argv[2]
    title = sys.argv[3] if len(sys.argv) > 3 else "dispatch.h timeline"
    events = sorted((e for e in doc["traceEvents"] if e.get("ph") == "X"), key=lambda e: (e["tid"], e["ts"]))
    # the time axis: each top-level call keeps its length, a gap between two
    # is at most a tenth of the longest call (axis breaks drawn there)
    tops = sorted((e for e in events if e["args"]["parent"] == -1), key=lambda e: e["ts"])
    longest = max((e["dur"] for e in tops), default=1.0) or 1.0
    cuts, shift, last_end = [], 0.0, None   # (time, shift from then on)
    for e in tops:
        if last_end is not None and e["ts"] - last_end > longest / 10:
            shift += e["ts"] - last_end - longest / 10
            cuts.append((e["ts"], shift, last_end + (longest / 20)))
        last_end = max(last_end or 0.0, e["ts"] + e["dur"])
    t0 = tops[0]["ts"] if tops else 0.0

    def x_of(t):
        s = 0.0
        for at, sh, _ in cuts:
            if t >= at:
                s = sh
        return t - t0 - s
    span = max((x_of(e["ts"] + e["dur"]) for e in events), default=1.0) or 1.0
    scale = (WIDTH - LEFT - 20) / span
    tids = sorted({e["tid"] for e in events})
    depth = {t: max(e["args"]["depth"] for e in events if e["tid"] == t) + 1 for t in tids}
    y, band_y = 56, {}
    for t in tids:
        band_y[t] = y
        y += depth[t] * ROW + BAND_GAP
    height = y + 40
    o = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="11">'
         % (WIDTH, height),
         '<rect width="100%" height="100%" fill="white"/>',
         '<text x="10" y="22" font-size="15" font-weight="bold">%s</text>' % escape(title),
         '<text x="10" y="40" fill="#555">%d calls, %s; box: operator [slot key]; nested: what the kernel above '
         'redispatched; hover for the kernel and the duration</text>'
         % (len(events), ", ".join("%d dropped" % doc.get("otherData", {}).get("dropped", 0) for _ in [0]))]
    for t in tids:
        o.append('<text x="10" y="%d" font-weight="bold">thread %s</text>' % (band_y[t] + 16, t))
        o.append('<line x1="%d" x2="%d" y1="%d" y2="%d" stroke="#ddd"/>' %
                 (LEFT, WIDTH - 10, band_y[t] + depth[t] * ROW + 4, band_y[t] + depth[t] * ROW + 4))
    for e in events:
        a = e["args"]
        x = LEFT + x_of(e["ts"]) * scale
        w = max(e["dur"] * scale, 1.5)
        yy = band_y[e["tid"]] + a["depth"] * ROW
        label = "%s [%s]" % (e["name"], a["key"])
        tip = "%s at %s: %s, %.3f us%s" % (e["name"], a["key"], a["kernel"], e["dur"],
                                            ", failed: " + a.get("status", "") if a.get("failed") else "")
        o.append('<g><title>%s</title><rect x="%.1f" y="%d" width="%.1f" height="%d" rx="2" fill="%s"/>'
                 % (escape(tip), x, yy, w, ROW - 4, COLOURS[kind(e)]))
        if w > 7 * len(label) * 0.85:
            o.append('<text x="%.1f" y="%d" fill="white">%s</text>' % (x + 3, yy + 15, escape(label)))
        elif w > 30:
            o.append('<text x="%.1f" y="%d" fill="white">%s</text>' % (x + 3, yy + 15, escape(e["name"].split("::")[-1])))
        o.append('</g>')
    for at, _, _ in cuts:
        xx = LEFT + x_of(at) * scale - 3
        o.append('<path d="M%.1f %d l3 -4 l3 8 l3 -4" stroke="#999" fill="none"/>' % (xx - 4, height - 30))
    o.append('<line x1="%d" x2="%d" y1="%d" y2="%d" stroke="#999"/>' % (LEFT, WIDTH - 10, height - 30, height - 30))
    o.append('<text x="%d" y="%d" fill="#555">0 us</text>' % (LEFT, height - 14))
    o.append('<text x="%d" y="%d" fill="#555" text-anchor="end">%.1f us of calls (gaps between calls cut: zigzags)</text>'
             % (WIDTH - 10, height - 14, span))
    x = WIDTH - 10
    for k in reversed(list(COLOURS)):
        x -= 12 + 7 * len(k)
        o.append('<rect x="%d" y="12" width="10" height="10" fill="%s"/><text x="%d" y="21">%s</text>'
                 % (x, COLOURS[k], x + 13, escape(k)))
    o.append('</svg>')
    with open(out, "w") as f:
        f.write("\n".join(o) + "\n")


if __name__ == "__main__":
    main()
