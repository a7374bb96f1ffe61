#!/usr/bin/env python3
"""How long `reel record` takes to start, and to stop, on a slow disk, with the file written on
the encoding thread (--write-buffer 0) and by its writer thread (the default queue).

The disk is the LD_PRELOAD shim of Tests/ReelCLITests/SlowDiskTests.swift (compiled here with
gcc): every write to the recording's file sleeps as if the disk wrote RATE bytes a second.
Each run records the test pattern (320x240, ultrafast), is stopped with SIGINT 3 s after its
"started" event, and prints launch → started, the whole run, and the frames written/dropped.

    bench/slowstart.py [RATE bytes/s, default 100000] [--reel PATH]
"""
import json, os, re, signal, subprocess, sys, tempfile, time

here = os.path.dirname(os.path.abspath(__file__))
args = sys.argv[1:]
reel = os.environ.get("REEL", os.path.join(here, "..", ".build", "debug", "reel"))
if "--reel" in args:
    i = args.index("--reel"); reel = args[i + 1]; del args[i:i + 2]
rate = int(args[0]) if args else 100_000
work = tempfile.mkdtemp(prefix="reel-slowstart-")
source = open(os.path.join(here, "..", "Tests", "ReelCLITests", "SlowDiskTests.swift")).read()
shim_c = re.search(r'static let shimSource = #"""\n(.*?)\n\s*"""#', source, re.S).group(1)
open(os.path.join(work, "slowdisk.c"), "w").write(re.sub(r"^    ", "", shim_c, flags=re.M))
shim = os.path.join(work, "slowdisk.so")
subprocess.run(["gcc", "-shared", "-fPIC", "-O2", "-o", shim, os.path.join(work, "slowdisk.c"), "-ldl"], check=True)

def run(buffer):
    out = os.path.join(work, f"slow-{buffer}.mp4")
    env = dict(os.environ, LD_PRELOAD=shim, REEL_SLOW_PATH=out, REEL_SLOW_RATE=str(rate))
    t0 = time.time()
    p = subprocess.Popen([reel, "record", "--test-pattern", "--size", "320x240", "--preset", "ultrafast", "--json",
                          "--write-buffer", buffer, "-o", out], env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    started = None
    for line in p.stdout:
        if '"started"' in line:
            started = time.time() - t0
            break
    time.sleep(3)
    p.send_signal(signal.SIGINT)
    rest = p.stdout.read()
    p.wait()
    finished = [json.loads(l) for l in rest.splitlines() if '"finished"' in l]
    f = finished[0] if finished else {}
    print(f"--write-buffer {buffer:>3}: launch → started {started:.2f} s, whole run {time.time() - t0:.1f} s, "
          f"frames {f.get('frames')}, dropped {f.get('dropped')}", flush=True)

print(f"# {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}, disk {rate} B/s, {reel}")
for buffer in ["0", "64M"]:
    run(buffer)
