#!/usr/bin/env python3
"""one-line-api.py [HEADER [DATA]] [--check]: gives every declaration of
the header's >>public block a one-line comment and moves the full comment
it had (its contract) beside the definition, where a maintainer reads it
with the code.

DATA (tools/one-line-api.txt) holds the one-liners, written by hand:

    NAME: TEXT                 the item declaring NAME first gets /* TEXT */;
                               its old comment moves above NAME's definition
    NAME -> TARGET: TEXT       the old comment moves above TARGET's definition
                               (a function defined after the block, or a
                               #define: a macro's expansion, a type's reader)
    NAME -> drop: TEXT         the old comment is a duplicate: it goes (the
                               run lists it)
        fix: OLD => NEW        in the moved comment, OLD becomes NEW (\\n for a
                               newline); for words that read right only in the
                               block ("below", "the three functions below")
    --- TITLE                  the group banner whose title starts as TITLE
                               does (up to its first ':' or '(') becomes
                               /* --- TITLE --- */
    = NAME NAME...             the items these names start, without a comment
                               of their own, share the line of the item before
                               them: the blank line between goes

An item is a run of comments and declarations without a blank line; it is
named by its first declaration. A NAME that is not an item's first
declaration gets its one-liner inserted above its own declaration (the item
is split). A definition is the first one after the block: a line at column 0
whose first identifier before '(' is the name and which reaches '{' before
';', or '#define NAME'. The moved comment goes above the definition and
above a comment already touching it (the contract first, then the notes on
the code).

The run is idempotent: an item whose comment is its one-liner is left alone.
Nothing is dropped but what DATA marks drop: an item without an entry, or
whose target is not found, or whose one-line comment is not its entry, is
left as it is and listed (to change a one-liner after a run, edit it here
and in the header, or mark it drop: the run replaces the line). --check changes nothing and fails
when a declaration in >>public has a comment longer than one line, when a
run would change the header, or when a one-liner and its entry differ (make
structure runs it)."""
import re, sys

args = [a for a in sys.argv[1:] if not a.startswith('--')]
check = '--check' in sys.argv[1:]
header = args[0] if args else 'dispatch.h'
datafile = args[1] if len(args) > 1 else 'tools/one-line-api.txt'
src = open(header).read().split('\n')


def block_bounds(lines):
    b = next((i for i, l in enumerate(lines) if l.startswith('/* >>public')), None)
    e = next((i for i, l in enumerate(lines) if l.startswith('/* >>private')), None)
    if b is None or e is None or e < b:
        sys.exit('%s: no >>public block followed by >>private' % header)
    return b, e


def code_end(lines, k, hi):
    """The line after the declaration or directive that starts at k."""
    s = lines[k].strip()
    if s.startswith('#if'):
        d, j = 0, k
        while j < hi:
            t = lines[j].strip()
            if t.startswith('#if'): d += 1
            elif t.startswith('#endif'): d -= 1
            j += 1
            if d == 0: return j
        return hi
    if s.startswith('#'):
        j = k
        while j < hi - 1 and lines[j].rstrip().endswith('\\'): j += 1
        return j + 1
    j, d = k, 0
    while j < hi:
        t = re.sub(r'/\*.*?\*/', '', lines[j])
        d += t.count('{') - t.count('}') + t.count('(') - t.count(')')
        if d <= 0 and t.rstrip().endswith(';'): return j + 1
        j += 1
    return hi


def elements(lines, lo, hi):
    """(kind, first, end) for each comment, declaration and blank line."""
    out, k = [], lo
    while k < hi:
        s = lines[k].strip()
        if s == '':
            out.append(('blank', k, k + 1)); k += 1
        elif s.startswith('/*'):
            j = k
            while j < hi - 1 and '*/' not in lines[j]: j += 1
            out.append(('comment', k, j + 1)); k = j + 1
        else:
            j = code_end(lines, k, hi)
            out.append(('code', k, j)); k = j
    return out


def name_of(lines, lo, hi):
    """The name a declaration or directive declares first."""
    text = '\n'.join(lines[lo:hi])
    t = re.sub(r'/\*.*?\*/', '', text, flags=re.S)
    m = re.search(r'#\s*define\s+([A-Za-z_]\w*)', t)
    if m: return m.group(1)
    s = t.strip()
    if re.match(r'(DK_API|DK_INLINE)\b', s):
        m = re.search(r'([A-Za-z_]\w*)\s*\(', s)
        return m.group(1) if m else None
    if s.startswith('typedef'):
        m = re.search(r'\(\s*\*\s*([A-Za-z_]\w*)\s*\)', s)
        if m and not re.search(r'\{', s): return m.group(1)
        m = re.search(r'([A-Za-z_]\w*)\s*;\s*$', s)
        return m.group(1) if m else None
    m = re.match(r'(struct|enum)\s+([A-Za-z_]\w*)', s)
    if m: return m.group(2)
    m = re.match(r'enum\s*\{\s*([A-Za-z_]\w*)', s)
    if m: return m.group(1)
    return None


def items(lines):
    """Items of the block: {'com': [(lo, hi)], 'code': [(lo, hi, name)]}."""
    b, e = block_bounds(lines)
    out, cur = [], {'com': [], 'code': []}
    for kind, lo, hi in elements(lines, b, e):
        if kind == 'blank' or (kind == 'comment' and cur['code']):
            if cur['com'] or cur['code']: out.append(cur)
            cur = {'com': [], 'code': []}
            if kind == 'blank': continue
        if kind == 'comment': cur['com'].append((lo, hi))
        else: cur['code'].append((lo, hi, name_of(lines, lo, hi)))
    if cur['com'] or cur['code']: out.append(cur)
    return out


def is_banner(lines, it):
    return not it['code'] and len(it['com']) == 1 and lines[it['com'][0][0]].startswith('/* --- ')


def banner_key(title):
    return re.split(r'[:(]', title, 1)[0].strip()


def comment_lines(it):
    return sum(hi - lo for lo, hi in it['com'])


# --- check -----------------------------------------------------------------
its = items(src)
check_bad = 0
if check:
    bad = 0
    for n, it in enumerate(its):
        if not it['code'] or comment_lines(it) <= 1: continue
        if (it['code'][0][2] or '').startswith(('DK__', 'dk__')): continue   # the library's own
        print('%s:%d: %s has a comment of %d lines in >>public, not one (tools/one-line-api.txt)'
              % (header, it['com'][0][0] + 1, it['code'][0][2] or '?', comment_lines(it)))
        bad += 1
    check_bad = bad

# --- the data ----------------------------------------------------------------
data, banners, order, joins = {}, {}, [], {}
for no, l in enumerate(open(datafile).read().split('\n'), 1):
    if not l.strip() or l.lstrip().startswith('#'): continue
    if l.startswith('--- '):
        title = l[4:].strip(); banners[banner_key(title)] = title; continue
    if l.startswith('= '):
        for n in l[2:].split(): joins[n] = False
        continue
    m = re.match(r'\s+fix:\s*(.*?)\s*=>\s*(.*)$', l)
    if m:
        if not order: sys.exit('%s:%d: fix before any entry' % (datafile, no))
        unesc = lambda s: s.replace('\\n', '\n')
        data[order[-1]]['fix'].append((unesc(m.group(1)), unesc(m.group(2).rstrip())))
        continue
    m = re.match(r'([A-Za-z_]\w*)\s*(?:->\s*([A-Za-z_]\w*))?\s*:\s*(.+)$', l)
    if not m: sys.exit('%s:%d: not NAME [-> TARGET]: TEXT' % (datafile, no))
    name, target, text = m.group(1), m.group(2) or m.group(1), m.group(3).strip()
    if '*/' in text or '/*' in text: sys.exit('%s:%d: a one-liner holds no comment marks' % (datafile, no))
    if name in data: sys.exit('%s:%d: %s twice' % (datafile, no, name))
    data[name] = {'target': target, 'text': text, 'fix': [], 'used': False}
    order.append(name)

b, e = block_bounds(src)


def first_ident_call(line):
    m = re.match(r'[^(]*?([A-Za-z_]\w*)\s*\(', line)
    return m.group(1) if m else None


def find_definition(name):
    """Lines of name's definitions after the block (first one first)."""
    found, k = [], e
    while k < len(src):
        l = src[k]
        if re.match(r'#\s*define\s+%s\b' % re.escape(name), l):
            found.append(k)
        elif l and not l[0].isspace() and l[0] not in '#/*}' and first_ident_call(l) == name:
            j, rest = k, ''
            while j < len(src) and j < k + 40:
                rest += re.sub(r'/\*.*?\*/', '', src[j]) + '\n'
                if '{' in rest or ';' in rest: break
                j += 1
            if '{' in rest and (';' not in rest or rest.index('{') < rest.index(';')):
                found.append(k)
        k += 1
    return found


def insertion_point(k):
    """Above the definition at k (its return type on the line before, if
    it is there) and above a comment touching it."""
    j = k
    p = src[k - 1] if k > 0 else ''
    if (p and not p[0].isspace() and p[0] not in '#/*}' and not p.rstrip().endswith((';', '{', '}', '\\', '*/'))
            and not src[k].startswith(('DK_API', 'DK_INLINE', 'static', '#'))):
        j = k - 1
    if j > 0 and src[j - 1].rstrip().endswith('*/'):
        i = j - 1
        while i > 0 and not src[i].lstrip().startswith('/*'): i -= 1
        if src[i].startswith('/*') and not src[i].startswith('/* >>'): j = i
    return j


# A name several items declare first (a forward declaration, then the
# definition) gets its one-liner where it has a comment, else at the last.
keyed = {}
for it in its:
    if it['code']: keyed.setdefault(it['code'][0][2], []).append(it)
chosen = set()
for key, group in keyed.items():
    with_comment = [it for it in group if it['com']]
    for it in (with_comment or group[-1:]): chosen.add(id(it))

edits = []          # (line, number of lines removed, lines inserted, order)
prev = None
for it in its:      # joined by an earlier run: a later declaration of an item
    for lo, hi, nm in it['code'][1:]:
        if nm in joins: joins[nm] = True
report = {'moved': [], 'new': [], 'dropped': [], 'left': [], 'fix': [], 'banner': [], 'several': [], 'bare': [],
          'joined': []}
seq = 0
for it in its:
    seq += 1
    if is_banner(src, it):
        lo = it['com'][0][0]
        m = re.match(r'/\* --- (.*?)\s*-*\s*\*/$', src[lo])
        title = m.group(1) if m else ''
        key = banner_key(title)
        if key in banners:
            new = '/* --- %s ' % banners[key]
            new += '-' * max(3, 77 - len(new)) + ' */'
            if new != src[lo]:
                edits.append((lo, 1, [new], seq)); report['banner'].append(banners[key])
            banners[key] = None
        continue
    if not it['code']: prev = None; continue
    last, prev = prev, it
    first_lo, first_hi, key = it['code'][0]
    # one-liners for the later declarations of the item (the item splits)
    for lo, hi, nm in it['code'][1:]:
        if nm in data and nm != key:
            d = data[nm]; d['used'] = True
            if d['target'] != nm and d['target'] != 'drop':
                report['left'].append('%s: not first in its item, its target %s is not used' % (nm, d['target']))
            edits.append((lo, 0, ['/* %s */' % d['text']], seq)); report['new'].append(nm)
    if key in joins and id(it) in chosen:
        joins[key] = True
        gap = range(last['code'][-1][1], first_lo) if last else range(0)
        if it['com'] or not last or not gap or any(src[k].strip() for k in gap):
            report['left'].append('%s (line %d): to share the line before, it needs no comment and only blank '
                                  'lines after a declaration' % (key, first_lo + 1))
        else:
            edits.append((gap[0], len(gap), [], seq)); report['joined'].append(key)
        continue
    if key not in data or id(it) not in chosen:
        if comment_lines(it) > 1:
            report['left'].append('%s (line %d): no one-liner in %s' % (key, first_lo + 1, datafile))
        elif not it['com'] and key in data: data[key]['used'] = True
        elif not it['com'] and key and not key.startswith(('DK__', 'dk__')):
            report['bare'].append('%s (line %d)' % (key, first_lo + 1))
        continue
    d = data[key]; d['used'] = True
    new = '/* %s */' % d['text']
    com_lo = it['com'][0][0] if it['com'] else first_lo
    old = src[com_lo:first_lo]
    if old == [new]: continue
    if not old:
        edits.append((first_lo, 0, [new], seq)); report['new'].append(key); continue
    if len(old) == 1 and d['target'] != 'drop':
        # A one-line comment other than its entry: an earlier run's line
        # edited since in one place, or a line of the author's. Neither is
        # moved: edit one of them (or mark the entry drop to replace it).
        report['left'].append('%s (line %d): its one-line comment is not its entry (edit one; drop replaces it)'
                              % (key, com_lo + 1))
        continue
    moved = '\n'.join(old)
    for a, c in d['fix']:
        if a in moved:
            moved = moved.replace(a, c); report['fix'].append('%s: %r -> %r' % (key, a, c))
        else:
            report['left'].append('%s: fix %r not found in its comment (not applied)' % (key, a))
    if d['target'] == 'drop':
        edits.append((com_lo, first_lo - com_lo, [new], seq))
        report['dropped'].append('%s:\n%s' % (key, '\n'.join(old)))
        continue
    defs = find_definition(d['target'])
    if not defs:
        report['left'].append('%s: no definition of %s after the block (left as it is)' % (key, d['target']))
        continue
    if len(defs) > 1:
        report['several'].append('%s: %d definitions of %s, lines %s; moved above the first'
                                 % (key, len(defs), d['target'], ', '.join(str(x + 1) for x in defs)))
    edits.append((com_lo, first_lo - com_lo, [new], seq))
    edits.append((insertion_point(defs[0]), 0, moved.split('\n'), seq))
    report['moved'].append('%s -> %s (%d lines)' % (key, d['target'], len(old)))

for key, title in banners.items():
    if title is not None: report['left'].append('banner "%s": no such group in the block' % key)
for name, used in joins.items():
    if not used: report['left'].append('%s: in %s (=) but no item of the block starts with it' % (name, datafile))
for name in order:
    if not data[name]['used']: report['left'].append('%s: in %s but declared nowhere in the block' % (name, datafile))

if check:
    # The header must also be what a run makes of it (the data applied).
    if edits:
        print('%s: %d changes of tools/one-line-api.py pending (run it: python3 tools/one-line-api.py %s)'
              % (header, len(edits), header))
    drift = [x for x in report['left'] if 'is not its entry' in x]
    for x in drift: print('%s: %s' % (header, x))
    sys.exit(1 if check_bad or edits or drift else 0)

# Apply from the bottom up; edits at one line keep the items' order.
for line, nrm, ins, s in sorted(edits, key=lambda x: (-x[0], -x[3])):
    src[line:line + nrm] = ins
if edits:
    open(header, 'w').write('\n'.join(src))
for what, title in (('banner', 'banners rewritten'), ('moved', 'comments moved beside their definitions'),
                    ('new', 'one-liners added to declarations without a comment'), ('fix', 'fixes applied'),
                    ('joined', 'items joined to the line before them'),
                    ('several', 'targets defined more than once'),
                    ('dropped', 'comments dropped as duplicates (marked drop)'),
                    ('bare', 'public items without a comment and without an entry'),
                    ('left', 'left as they are, or to look at')):
    if report[what]:
        print('%s (%d):' % (title, len(report[what])))
        for x in report[what]: print('  ' + x.replace('\n', '\n    '))
if not edits: print('nothing to change')
