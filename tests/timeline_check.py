#!/usr/bin/env python3
"""tests/timeline_check.py TIMELINE [EXPECT]: checks a timeline written by
dk_timeline_save with Python's json module (system python3, nothing else).

Every file: Chrome trace event JSON (an object with traceEvents and
otherData); every complete event ("ph": "X") has a name, a thread, a
non-negative begin and duration, the slot's key and the kernel; every
event's parent is an event of the same thread one level up, whose time
span holds the child's; otherData says the cap and how many were dropped,
and the number of events written. EXPECT (a JSON file) adds what one
recording must hold: the number of events and threads, events per name,
[child name, child key, parent name, parent key] pairs, failed and
fallback calls by name. Prints one line per check; exits 1 on a failure.
"""
import json
import sys

failures = 0


def check(ok, what):
    global failures
    print(("  ok    " if ok else "  FAIL  ") + what)
    if not ok:
        failures += 1


def main():
    with open(sys.argv[1]) as f:
        doc = json.load(f)
    name = sys.argv[1]
    check(isinstance(doc, dict) and isinstance(doc.get("traceEvents"), list),
          "%s: Chrome trace event JSON (an object with traceEvents)" % name)
    events = [e for e in doc["traceEvents"] if e.get("ph") == "X"]
    meta = [e for e in doc["traceEvents"] if e.get("ph") == "M"]
    other = doc.get("otherData", {})
    fields = ("name", "tid", "ts", "dur", "args")
    check(all(all(k in e for k in fields) and all(k in e["args"] for k in ("id", "parent", "depth", "key", "kernel"))
              for e in events),
          "every event has a name, thread, begin, duration, id, parent, depth, key and kernel")
    check(all(e["ts"] >= 0 and e["dur"] >= 0 for e in events), "no begin or duration is negative")
    check(all(isinstance(e["name"], str) and e["name"] for e in events), "every event names its operator")
    by_id = {e["args"]["id"]: e for e in events}
    check(len(by_id) == len(events), "event ids are unique")
    nested_ok, why = True, ""
    for e in events:
        p = e["args"]["parent"]
        if p == -1:
            if e["args"]["depth"] != 0:
                nested_ok, why = False, "top-level event %d at depth %d" % (e["args"]["id"], e["args"]["depth"])
            continue
        q = by_id.get(p)
        if q is None or q["tid"] != e["tid"] or q["args"]["depth"] + 1 != e["args"]["depth"]:
            nested_ok, why = False, "event %d: parent %d not one level up on its thread" % (e["args"]["id"], p)
        elif not (q["ts"] <= e["ts"] and e["ts"] + e["dur"] <= q["ts"] + q["dur"] + 0.0015):
            nested_ok, why = False, "event %d does not lie inside its parent %d" % (e["args"]["id"], p)
    check(nested_ok, "every parent is on the same thread, one level up, and spans its child" +
          (" (" + why + ")" if why else ""))
    tids = {e["tid"] for e in events}
    named = {m["tid"] for m in meta if m.get("name") == "thread_name"}
    check(tids <= named, "every thread with events is named")
    check(all(k in other for k in ("events_per_thread", "dropped", "events")) and other["events"] == len(events),
          "otherData says the cap, the number dropped and the events written (%s)" %
          {k: other.get(k) for k in ("events_per_thread", "dropped", "events")})
    if len(sys.argv) > 2:
        with open(sys.argv[2]) as f:
            want = json.load(f)
        if "events" in want:
            check(len(events) == want["events"], "%d events (want %d)" % (len(events), want["events"]))
        if "threads" in want:
            check(len(tids) == want["threads"], "%d threads (want %d)" % (len(tids), want["threads"]))
        if "dropped" in want:
            check(other.get("dropped") == want["dropped"], "%s dropped (want %d)" % (other.get("dropped"), want["dropped"]))
        for n, k in sorted(want.get("names", {}).items()):
            got = sum(1 for e in events if e["name"] == n)
            check(got == k if k >= 0 else got > 0, "%s: %d events (want %s)" % (n, got, k if k >= 0 else "some"))
        for cn, ck, pn, pk in want.get("nested", []):
            got = [e for e in events if e["name"] == cn and e["args"]["key"] == ck and e["args"]["parent"] != -1 and
                   by_id[e["args"]["parent"]]["name"] == pn and by_id[e["args"]["parent"]]["args"]["key"] == pk]
            check(bool(got), "%s at %s nested under %s at %s" % (cn, ck, pn, pk))
        for n in want.get("failed", []):
            check(any(e["name"] == n and e["args"].get("failed") == 1 and e["args"].get("status") for e in events),
                  "a failed call of %s, with its status" % n)
        for n in want.get("fallback", []):
            check(any(e["name"] == n and e["args"].get("fallback") == 1 for e in events),
                  "a call of %s on a fallback" % n)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
