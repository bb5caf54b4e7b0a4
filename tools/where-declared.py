#!/usr/bin/env python3
"""where-declared.py HEADER NAME...: prints, for each name, the >>tag
section of the header where it is first declared or defined ('?' when it
is not). where-declared.py HEADER --check: checks that the API has one
home: every exported (DK_API) or inline public dk_ function, every public
DK_ macro and every public type is first declared in the >>public block, or
before it (the configuration, the lists and what they generate: >>config,
>>lists, >>enums), the implementation included (a public function it
defines is declared in the block first); make structure runs it."""
import re, sys
src = open(sys.argv[1] if len(sys.argv) > 1 else 'dispatch.h').read().split('\n')
end = next(i for i, l in enumerate(src) if l.startswith('*/'))
tag, where = None, {}
# Enumerators an X-macro list generates (enum dk_role from DK__FORALL_ROLES):
# each row X(NAME, ...) declares prefix + NAME where the list is.
generated = {'DK__FORALL_ROLES': 'DK_R_'}
in_list = None
for i, l in enumerate(src[end + 1:], end + 1):
    m = re.match(r'/\* (>>[a-z-]+)', l)
    if m: tag = m.group(1)
    if tag is None: continue
    m = re.match(r'#define (DK__FORALL_[A-Z_]+)\(X\)', l)
    if m: in_list = generated.get(m.group(1))
    if in_list:
        for m in re.finditer(r'\bX\(([A-Z][A-Z0-9_]*)\s*,', l):
            where.setdefault(in_list + m.group(1), tag)
        if not l.rstrip().endswith('\\'): in_list = None
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
    # Names that look public but are the library's own: the link check's
    # symbols (their names are their message) and the thread-local model
    # the private variables are declared with.
    own = {'dk_no_file_defines_DISPATCH_IMPLEMENTATION_before_including_dispatch_h',
           'dk_plugin_finds_no_dispatch_h_in_its_host__link_the_host_with_rdynamic_or_libdispatch_so',
           'DK_TLS_MODEL'}
    home = {'>>config', '>>lists', '>>enums', '>>public'}
    bad = 0
    if '>>public' not in where.values():
        print('no >>public block'); bad += 1
    # The implementation's unit has configuration macros of its own
    # (DK_HASH64, DK_ASSERT...): the manual's CONFIGURATION lists them.
    manual = '\n'.join(src[:end])
    conf = manual[manual.index('   CONFIGURATION ('):manual.index('   THE API BY TASK')]
    own |= set(re.findall(r'\n {7}(DK_[A-Z0-9_]+)', conf))
    for n, t in where.items():
        if n in own: continue
        if not re.match(r'(dk|DK)_[A-Za-z0-9]', n): continue
        if t not in home:
            print('%s is public but first declared in %s, not in >>public' % (n, t)); bad += 1
    sys.exit(1 if bad else 0)
names = sys.argv[2:] or sys.stdin.read().split()
for n in names: print(n, where.get(n, '?'))
