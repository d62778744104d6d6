import sys,statistics as st
rows=[l.split() for l in open(sys.argv[1]) if l.strip()]
for i,lab in enumerate(sys.argv[2:]):
    v=sorted(float(r[i]) for r in rows if len(r)>i and r[i])
    print(f"{lab}: median {st.median(v):.2f} ({v[0]:.2f}-{v[-1]:.2f}) n={len(v)}")
