#!/usr/bin/env python3
"""spans.py [HEADER]: checks the implementation's optimisation spans (the
header's "Optimisation spans" comment, >>impl): every DK__<KIND>_BEGIN line
is closed by a DK__<KIND>_END of its own kind, spans nest and none is open
at the end; and every function the implementation defines is in its
region's span: >>impl-threads to >>impl-config in none (they inline into
every span), >>impl-registry, >>impl-call and >>impl-schema in the one WARM
span, >>impl-abi in the one COOL span inside it, a COLD region anywhere
(inside a region's own span, never inside another COLD one: which functions
are cold is not checked, only that a COLD region is closed where it opened). A function
moved across a boundary, or a marker lost in a merge, fails here instead
of changing the compile time or the code without a word. make structure
runs it."""
import re, sys

KINDS = ('COLD', 'COOL', 'WARM')
# the span each region's functions are in (outside COLD regions)
REGION_SPAN = {
    'impl-threads': (), 'impl-errors': (), 'impl-epochs': (), 'impl-names': (),
    'impl-slots': (), 'impl-config': (),
    'impl-registry': ('WARM',), 'impl-call': ('WARM',), 'impl-abi': ('WARM', 'COOL'),
    'impl-schema': ('WARM',),
}
# a function's definition: its name's line, with its body's brace or open
# (a prototype ends with ");", a table has its "=" before any parenthesis)
DEF = re.compile(r'^(?:DK_API|DK__PRIVATE|DK_INLINE|static)\b[^;=(]*?\b(dk_\w+|dk__\w+)\s*\((?:.*\{|.*[^;]\s*$)')

src = open(sys.argv[1] if len(sys.argv) > 1 else 'dispatch.h').read().split('\n')
errors, stack, region, count = [], [], None, {k: 0 for k in KINDS}
for n, line in enumerate(src, 1):
    m = re.match(r'/\* >>(impl-[a-z]+)', line)
    if m:
        region = m.group(1)
        if region not in REGION_SPAN:
            errors.append('%d: region >>%s has no span in tools/spans.py' % (n, region))
        continue
    m = re.match(r'\s*DK__(COLD|COOL|WARM)_(BEGIN|END)\b', line)
    if m and line.strip() != m.group(0).strip():
        errors.append('%d: DK__%s_%s not alone on its line' % (n, m.group(1), m.group(2)))
    if m:
        kind, what = m.groups()
        if region is None:
            errors.append('%d: DK__%s_%s before the implementation' % (n, kind, what))
        elif what == 'BEGIN':
            if kind == 'COLD' and 'COLD' in stack:
                errors.append('%d: a COLD region inside a COLD region' % n)
            stack.append(kind)
            count[kind] += 1
        elif not stack or stack[-1] != kind:
            errors.append('%d: DK__%s_END closes %s' % (n, kind, stack[-1] if stack else 'no span'))
        else:
            stack.pop()
        continue
    m = DEF.match(line)
    if m and region in REGION_SPAN:
        base = tuple(k for k in stack if k != 'COLD')
        if base != REGION_SPAN[region]:
            errors.append('%d: %s (>>%s) is in %s, not in %s' % (
                n, m.group(1), region, '/'.join(base) or 'no span', '/'.join(REGION_SPAN[region]) or 'no span'))
if stack:
    errors.append('end of file: %s still open' % '/'.join(stack))
for kind, want in (('WARM', 1), ('COOL', 1)):
    if count[kind] != want:
        errors.append('%d %s spans, not %d' % (count[kind], kind, want))
for e in errors:
    print(e)
sys.exit(1 if errors else 0)
