import os, sys, re
tag=sys.argv[1]
def load(n):
    d={}
    for l in open(os.environ.get("DIR", "/tmp/ring7") + f"/fn.{tag}.{n}"):
        c,name=l.rstrip("\n").split("\t",1)
        name=name.strip()
        if "PROGRAM TOTALS" in name: continue
        name=re.sub(r" \[.*\]$","",name)
        name=name.split(":",1)[1] if ":" in name else name
        name=re.sub(r"'\d+$","",name)
        d[name]=d.get(name,0)+int(c)
    return d
a=load(200000); b=load(2000000)
rows=sorted(((b.get(k,0)-a.get(k,0))/1.8e6,k) for k in set(a)|set(b))[::-1]
cat={"harness":0,"memmove":0,"ring":0,"runtime/other":0}
for v,k in rows:
    if k.startswith("github.com/wirespeed/wirespeed/ring_test."): c="harness"
    elif k in("runtime.memmove","runtime.typedmemmove") : c="memmove"
    elif k.startswith("github.com/wirespeed/wirespeed/ring."): c="ring"
    else: c="runtime/other"
    cat[c]+=v
verbose=len(sys.argv)>2
for v,k in rows:
    if verbose and abs(v)>=0.1 or (not verbose and abs(v)>=0.1 and ("ring" in k or "memmove" in k)): print(f"{v:8.2f}  {k[:140]}")
print(tag, " ".join(f"{k}={v:.2f}" for k,v in cat.items()), f"total={sum(cat.values()):.2f}")
