import sys
src, dst, names = sys.argv[1], sys.argv[2], sys.argv[3:]
lines = open(src).read().split('\n')
out = [l for l in lines[:12] if l.startswith(('.version', '.target', '.address_size'))]
out.append('.extern .shared .align 16 .b8 COALESCE_DYNAMIC_SMEM[];')
for name in names:
    i = next(k for k, l in enumerate(lines) if l.startswith('.visible .entry ' + name + '('))
    j = next(k for k in range(i, len(lines)) if lines[k] == '}')
    out += lines[i:j + 1]
open(dst, 'w').write('\n'.join(out) + '\n')
