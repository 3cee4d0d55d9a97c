# Warp-state samples and executed instructions per address range of a kernel (offsets from its
# first instruction, `LO-HI` in hex), from the same gzipped source-page CSV: regions.py FILE LO-HI ...
import csv,gzip,sys,collections
r=list(csv.reader(gzip.open(sys.argv[1],'rt'))); h=r[1]; rows=[dict(zip(h,x)) for x in r[2:]]
base=int(rows[0]['Address'],16)
regs=[tuple(int(v,16) for v in x.split('-'))+(x,) for x in sys.argv[2:]]
st=[c for c in h if c.startswith('stall_') and 'Not Issued' not in c]
def iv(x):
    try: return int(x)
    except: return 0
agg=collections.defaultdict(collections.Counter)
for r in rows:
    a=int(r['Address'],16)-base
    name='other'
    for lo,hi,nm in regs:
        if lo<=a<=hi: name=nm
    agg[name]['samples']+=iv(r['Warp Stall Sampling (All Samples)'])
    agg[name]['instr']+=iv(r['Instructions Executed'])
    for c in st: agg[name][c[6:]]+=iv(r[c])
for nm,c in sorted(agg.items(),key=lambda x:-x[1]['samples']):
    print('%-14s samples %6d instr %10d'%(nm,c['samples'],c['instr']),[(k,v) for k,v in c.most_common(9) if k not in('samples','instr')])
