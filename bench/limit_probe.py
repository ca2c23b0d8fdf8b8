"""Peak memory and time of one consumer solve at stickyflow.limits.MAX_PARTITIONS (10,000,000 partitions).

    python bench/limit_probe.py MEMBERS TOPICS owned|cold

Prints one JSON line; the figure quoted in docs/format.md ("Limits of one solve") comes from
``python bench/limit_probe.py 2000 100 owned``.
"""
import resource, time, sys, json
import stickyflow
P=10_000_000; M=int(sys.argv[1]); T=int(sys.argv[2]); owned=sys.argv[3]=="owned"
per=P//T
topics={f"t{j}": {"partitions": per} for j in range(T)}
members=[]
for i in range(M):
    m={"id": f"m{i:05d}", "subscription": list(topics), "generation": 1}
    if owned and i < M-1:
        # member i owned a contiguous slice of each topic (member M-1 is new)
        lo=i*per//(M-1); hi=(i+1)*per//(M-1)
        m["owned"]={t: list(range(lo,hi)) for t in topics}
    members.append(m)
doc={"format":"stickyflow.snapshot/1","kind":"consumer","topics":topics,"members":members}
t=time.perf_counter(); r=stickyflow.assign(doc); el=time.perf_counter()-t
print(json.dumps({"partitions":P,"members":M,"topics":T,"owned":owned,"seconds":round(el,2),"status":r.status,"error":r.error,
 "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss/1024)}))
