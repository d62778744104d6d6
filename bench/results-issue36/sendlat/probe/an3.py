import sys, statistics as st
evs=[]
for i,f in enumerate(sys.argv[1:]):
    for l in open(f):
        ns,tag,arg=map(int,l.split()); evs.append((ns,i,tag,arg))
evs.sort()
seg={}
def add(k,v): seg.setdefault(k,[]).append(v/1000)
last={}
for e in evs:
    ns,p,tag,arg=e
    if tag==9: continue
    key=(p,tag); 
    if tag==11 and (p,1) in last: add('post->commit', ns-last[(p,1)][0])
    if tag==3:
        q=1-p
        if (q,11) in last: add('commit->pull0(peer)', ns-last[(q,11)][0])
    if tag==4 and (p,3) in last: add('pull', ns-last[(p,3)][0])
    if tag==10 and (p,4) in last: add('pull1->alive', ns-last[(p,4)][0])
    if tag==5 and (p,10) in last and last[(p,10)][0]>last.get((p,5),(0,))[0]: add('alive->ack', ns-last[(p,10)][0])
    if tag==2 and arg==128 and (p,5) in last: add('ack->recvpoll', ns-last[(p,5)][0])
    if tag==1 and (p,2) in last and last[(p,2)][1]==128: add('recvpoll->post', ns-last[(p,2)][0])
    if tag==1 and (1-p,1) in last: add('oneway(post->post)', ns-last[(1-p,1)][0])
    last[key]=(ns,arg)
for k,v in seg.items():
    v=v[50:-50] if len(v)>200 else v
    print("%-22s n=%4d median %7.2f  p10 %7.2f p90 %7.2f"%(k,len(v),st.median(v),sorted(v)[len(v)//10],sorted(v)[len(v)*9//10]))
