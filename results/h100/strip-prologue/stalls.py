# Stall reasons summed over a kernel: the per-instruction warp-state samples of an Nsight Compute
# source page (`ncu -i REP --page source --csv --print-source sass | gzip`), one file per argument.
import csv,gzip,sys,collections
def load(f):
    r=list(csv.reader(gzip.open(f,'rt')))
    h=r[1]; rows=[dict(zip(h,x)) for x in r[2:] if len(x)>=len(h)-1]
    return h,rows
for f in sys.argv[1:]:
    h,rows=load(f)
    st=[c for c in h if c.startswith('stall_') and 'Not Issued' not in c]
    tot=collections.Counter(); n=0; ex=0
    for r in rows:
        for c in st:
            try: tot[c]+=int(r[c])
            except: pass
        try: n+=int(r['Warp Stall Sampling (All Samples)']); ex+=int(r['Instructions Executed'])
        except: pass
    print(f,'samples',n,'instr',ex)
    for c,v in tot.most_common(12): print('  %-28s %7d %5.1f%%'%(c,v,100*v/n))
