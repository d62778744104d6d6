import sys, statistics as st
evs=[]
for i,f in enumerate(sys.argv[1:]):
    for l in open(f):
        ns,tag,arg=map(int,l.split()); evs.append((ns,i,tag,arg))
evs.sort()
seg={}
def add(k,v): seg.setdefault(k,[]).append(v/1000)
last={}
for ns,p,tag,arg in evs:
    if tag==7 and (p,6) in last: add('writev', ns-last[(p,6)])
    if tag==1 and (1-p,6) in last: add('wv0->peer post', ns-last[(1-p,6)])
    if tag==1 and (1-p,1) in last: add('oneway', ns-last[(1-p,1)])
    if tag==6 and (p,1) in last: add('post->wv0', ns-last[(p,1)])
    last[(p,tag)]=ns
for k,v in seg.items():
    v=v[50:-50]
    print("%-22s n=%4d median %7.2f  p10 %7.2f p90 %7.2f"%(k,len(v),st.median(v),sorted(v)[len(v)//10],sorted(v)[len(v)*9//10]))
