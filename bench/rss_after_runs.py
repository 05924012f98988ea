"""RSS of the server after large runs end (issue 12): starts BINARY, runs RUNS scripted runs that
each stream a 10 MB answer at once, waits until they end and 70 s more (past the 60 s a finished
run stays in memory for late readers), and prints the server's RSS at each point.

    python3 bench/rss_after_runs.py target/release/glassbox 20
"""
import json, os, subprocess, sys, time, urllib.request, tempfile, socket
binary = sys.argv[1]
runs = int(sys.argv[2]) if len(sys.argv) > 2 else 20
d = tempfile.mkdtemp()
os.makedirs(f"{d}/scenarios"); os.makedirs(f"{d}/site/pkg")
open(f"{d}/site/pkg/glassbox.js","w").write("//")
text = ("word " * 2_000_000)  # 10 MB of answer per run
json.dump({"delta_chars": 8000, "delta_interval_ms": 0, "steps": [{"text": text}]}, open(f"{d}/scenarios/big.json","w"))
s = socket.socket(); s.bind(("127.0.0.1",0)); port = s.getsockname()[1]; s.close()
p = subprocess.Popen([binary, "--addr", f"127.0.0.1:{port}", "--data-dir", f"{d}/data", "--site-root", f"{d}/site",
                      "--scenarios-dir", f"{d}/scenarios", "--workspace", d], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
base = f"http://127.0.0.1:{port}"
def rss():
    for line in open(f"/proc/{p.pid}/status"):
        if line.startswith("VmRSS"): return int(line.split()[1]) // 1024
def health():
    return json.load(urllib.request.urlopen(f"{base}/healthz"))
for _ in range(100):
    try: health(); break
    except Exception: time.sleep(0.1)
idle = rss()
for i in range(runs):
    req = urllib.request.Request(f"{base}/api/chat", data=json.dumps({"content": "go", "model": "scenario:big"}).encode(),
                                 headers={"Content-Type": "application/json", "Accept": "application/json"})
    urllib.request.urlopen(req).read()
peak = 0
while health()["runs"] > 0:
    peak = max(peak, rss()); time.sleep(0.2)
peak = max(peak, rss())
ended = rss()
time.sleep(70)  # past the 60 s a finished run stays in memory
after = rss()
print(f"{os.path.basename(os.path.dirname(os.path.dirname(binary)))}: idle {idle} MiB, peak {peak} MiB, at the end {ended} MiB, 70 s later {after} MiB (memory of run logs then: {health()['run_memory_bytes']>>20} MiB)")
p.terminate(); p.wait()
