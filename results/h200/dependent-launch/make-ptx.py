# Writes base.ptx (conv2d_boxr3_u8_w5 cut from the build's sm_90 PTX), wait.ptx (griddepcontrol.wait first) and
# pdl.ptx (griddepcontrol.launch_dependents, then the wait) for pdl.cu.
# Usage: python3 make-ptx.py target/release/build/coalesce-host-*/out/coalesce_kernels.sm_90.ptx
import re, sys
t = open(sys.argv[1]).read()
hdr = [l for l in t.split('\n')[:400] if l.startswith(('.version', '.target', '.address_size', '.extern .shared'))]
i = t.find('.entry conv2d_boxr3_u8_w5(')
j = t.rfind('\n', 0, i)
m = re.compile(r'// -- End function\n}\n').search(t, i)
base = '\n'.join(hdr) + '\n' + t[j + 1:m.end()] + '\n'
k = base.index('\tld.param')
open('base.ptx', 'w').write(base)
open('wait.ptx', 'w').write(base[:k] + '\tgriddepcontrol.wait;\n' + base[k:])
open('pdl.ptx', 'w').write(base[:k] + '\tgriddepcontrol.launch_dependents;\n\tgriddepcontrol.wait;\n' + base[k:])
