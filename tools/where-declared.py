#!/usr/bin/env python3
"""where-declared.py HEADER NAME...: prints, for each name, the >>tag
section of the header where it is first declared or defined ('?' when it
is not). where-declared.py HEADER --check: checks the manual's THE API BY
TASK: every name of a group is declared in one of the >>tags the group
names (make structure runs it)."""
import re, sys
src = open(sys.argv[1] if len(sys.argv) > 1 else 'dispatch.h').read().split('\n')
end = next(i for i, l in enumerate(src) if l.startswith('*/'))
tag, where = None, {}
for i, l in enumerate(src[end + 1:], end + 1):
    m = re.match(r'/\* (>>[a-z-]+)', l)
    if m: tag = m.group(1)
    if tag is None: continue
    for m in re.finditer(r'#define ([A-Za-z_][A-Za-z0-9_]*)', l):
        where.setdefault(m.group(1), tag)
    if re.match(r'\s*(DK_API|DK_INLINE)\b', l):
        m = re.search(r'\b([A-Za-z_][A-Za-z0-9_]*)\s*\(', l)
        if m: where.setdefault(m.group(1), tag)
    for m in re.finditer(r'\}\s*([A-Za-z_][A-Za-z0-9_]*)\s*;', l):
        where.setdefault(m.group(1), tag)
    m = re.match(r'\s*typedef\b.*?\(?\*?\s*\b([A-Za-z_][A-Za-z0-9_]*)\)?\s*(\(.*)?;\s*$', l)
    if m: where.setdefault(m.group(1), tag)
    m = re.match(r'\s*typedef (struct|enum) ([A-Za-z_][A-Za-z0-9_]*)', l)
    if m: where.setdefault(m.group(2), tag)
    m = re.match(r'\s+(DK_[A-Za-z0-9_]+)\s*(=[^=]|,)', l)
    if m: where.setdefault(m.group(1), tag)
if sys.argv[2:3] == ['--check']:
    manual = '\n'.join(src[:end])
    api = manual[manual.index('THE API BY TASK'):]
    groups = re.findall(r'\n   ([A-Z][A-Za-z ,]*) \(((?:>>[a-z-]+(?:, )?)+)\):(.*?)(?=\n   [A-Z]|\Z)', api, re.S)
    bad = 0
    for title, tags, body in groups:
        for n in re.findall(r'\b(?:dk|DK)_[A-Za-z0-9_]*[A-Za-z0-9]\b', body):
            if n.startswith('dk_abi_'): continue
            t = where.get(n, '?')
            if t not in tags.split(', '):
                print('%s: %s is declared in %s, the group says %s' % (title, n, t, tags)); bad += 1
    if not groups: print('no API BY TASK groups found'); bad += 1
    sys.exit(1 if bad else 0)
names = sys.argv[2:] or sys.stdin.read().split()
for n in names: print(n, where.get(n, '?'))
