#!/usr/bin/env python3
"""Streaming beside recording: what it costs, against recording alone and against ffmpeg's tee.

Runs, one after the other and in turns, each for N seconds of real time at the same settings
(test source, 30 fps, libx264 PRESET CRF 23, a keyframe every 2 s, AAC 160k stereo):

  reel          reel record --test-pattern --tone -o FILE
  reel+rtmp     the same with --stream rtmp://127.0.0.1:PORT/live/KEY (nginx-rtmp on the loopback)
  ffmpeg        ffmpeg -re -f lavfi testsrc2 + sine, encoded into FILE
  ffmpeg-tee    the same into -f tee "[f=mp4]FILE|[f=flv]rtmp://…" (one encode, two outputs)

and measures each recorder's CPU seconds per recorded second (its own rusage: user + system,
start-up and finalising included) and peak RSS. reel and ffmpeg make their pictures differently
(reel's test pattern, ffmpeg's testsrc2), so compare each with its own line: the cost of the
stream is reel+rtmp − reel and ffmpeg-tee − ffmpeg.

Then a glass-to-glass run: reel streams to nginx-rtmp with --frame-log, and a player (ffmpeg
reading the stream back with -fflags nobuffer, decoding to grey frames on a pipe) reads the
test pattern's frame counter in each picture as it arrives; the delay of a frame is its arrival
at the player minus its capture time in the frame log (both CLOCK_MONOTONIC).

Needs nginx with libnginx-mod-rtmp (scripts/install-deps installs them) and ffmpeg with libx264.
Standard library only. Prints a table to stdout, progress to stderr, raw figures to
bench/out/stream-DATE.json.
"""
import argparse, csv, json, os, resource, shutil, signal, socket, statistics, subprocess, sys, tempfile, threading, time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
NGINX, MODULE = "/usr/sbin/nginx", "/usr/lib/nginx/modules/ngx_rtmp_module.so"


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Nginx:
    """nginx-rtmp in the foreground, one process, its own config, port and folder."""

    def __init__(self, folder):
        self.port = free_port()
        conf = os.path.join(folder, "nginx.conf")
        user = "user root root;\n" if os.getuid() == 0 else ""
        with open(conf, "w") as f:
            f.write(f"""load_module {MODULE};
{user}daemon off;
master_process off;
worker_processes 1;
pid {folder}/nginx.pid;
error_log {folder}/error.log info;
events {{ worker_connections 64; }}
rtmp {{ server {{ listen 127.0.0.1:{self.port}; chunk_size 4096;
    application live {{ live on; }} }} }}
""")
        self.process = subprocess.Popen([NGINX, "-p", folder, "-e", f"{folder}/error.log", "-c", conf],
                                        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return
            except OSError:
                time.sleep(0.05)
        raise SystemExit("nginx did not start; see " + folder + "/error.log")

    def url(self, key):
        return f"rtmp://127.0.0.1:{self.port}/live/{key}"

    def stop(self):
        self.process.kill()
        self.process.wait()


def run_measured(command, quiet=True):
    """Runs command; returns (exit status, CPU seconds, peak RSS MiB, wall seconds)."""
    start = time.monotonic()
    p = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL if quiet else None,
                         stderr=subprocess.PIPE)
    _, status, usage = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    err = p.stderr.read().decode(errors="replace")
    if p.returncode != 0:
        log("  failed:", " ".join(command), "\n ", err[-400:])
    return p.returncode, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, time.monotonic() - start


def commands(args, nginx, out, key):
    w, h = args.size.split("x")
    reel = [args.reel, "record", "--test-pattern", "--tone", "--size", args.size, "--preset", args.preset, "--crf", "23",
            "--keyframe-interval", "60", "--duration", str(args.seconds), "--overwrite"]
    ff = ["ffmpeg", "-v", "error", "-y", "-re", "-f", "lavfi", "-i", f"testsrc2=size={w}x{h}:rate=30",
          "-re", "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000", "-t", str(args.seconds),
          "-map", "0:v", "-map", "1:a", "-c:v", "libx264", "-preset", args.preset, "-crf", "23", "-g", "60", "-pix_fmt", "yuv420p",
          "-c:a", "aac", "-b:a", "160k", "-ac", "2"]
    return {
        "reel": reel + ["-o", f"{out}/reel.mp4"],
        "reel+rtmp": reel + ["-o", f"{out}/reel-rtmp.mp4", "--stream", nginx.url(key)],
        "ffmpeg": ff + [f"{out}/ffmpeg.mp4"],
        "ffmpeg-tee": ff + ["-flags", "+global_header", "-f", "tee", f"[f=mp4]{out}/ffmpeg-tee.mp4|[f=flv]{nginx.url(key + 'ff')}"],
    }


def read_counter(frame, width, height):
    """The test pattern's frame counter (see TestPattern.readCounter), or None."""
    cells, bits = 26, 24
    strip = max(8, (height // 10) & ~1)
    cell = max(1, width // cells)

    def level(c):
        x0, x1 = c * cell + cell // 4, c * cell + (3 * cell) // 4
        y0, y1 = strip // 4, max(strip // 4 + 1, (3 * strip) // 4)
        total = n = 0
        for y in range(y0, y1, 2):
            row = frame[y * width + x0: y * width + max(x0 + 1, x1)]
            total += sum(row)
            n += len(row)
        return total // max(n, 1)

    if level(0) <= 128 or level(cells - 1) >= 128:
        return None
    value = 0
    for c in range(1, bits + 1):
        value = (value << 1) | (1 if level(c) > 128 else 0)
    return value


def glass_to_glass(args, nginx, out):
    """Streams with a frame log while a player reads the stream back; returns the delays (s)."""
    w, h = (int(v) for v in args.size.split("x"))
    url = nginx.url("g2g")
    player = subprocess.Popen(["ffmpeg", "-v", "error", "-fflags", "nobuffer", "-flags", "low_delay", "-probesize", "32768",
                               "-analyzeduration", "0", "-i", url, "-map", "0:v", "-f", "rawvideo", "-pix_fmt", "gray", "-"],
                              stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    arrivals = []

    def read():
        size = w * h
        while True:
            data = player.stdout.read(size)
            if len(data) < size:
                return
            arrivals.append((time.monotonic(), read_counter(data, w, h)))

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    time.sleep(1)
    logfile = f"{out}/g2g.csv"
    status = subprocess.run([args.reel, "record", "--test-pattern", "--tone", "--size", args.size, "--preset", args.preset,
                             "--crf", "23", "--keyframe-interval", "60", "--duration", str(args.seconds), "--overwrite",
                             "-o", f"{out}/g2g.mp4", "--frame-log", logfile, "--stream", url],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    if status.returncode != 0:
        log("  glass-to-glass run failed:", status.stderr.decode()[-400:])
    time.sleep(3)
    player.send_signal(signal.SIGINT)
    try:
        player.wait(10)
    except subprocess.TimeoutExpired:
        player.kill()
    reader.join(5)
    # The file's first frame and the log's first recorded row are the same frame.
    rows = list(csv.DictReader(open(logfile)))
    first = next(r for r in rows if r["recorded"] == "yes")
    probe = subprocess.run(["ffmpeg", "-v", "error", "-i", f"{out}/g2g.mp4", "-frames:v", "1", "-f", "rawvideo", "-pix_fmt", "gray", "-"],
                           capture_output=True).stdout
    offset = int(first["frame"]) - read_counter(probe, w, h)
    captured = {int(r["frame"]) - offset: float(r["capture_time"]) for r in rows}
    delays = [t - captured[c] for t, c in arrivals if c is not None and c in captured]
    return delays, len(arrivals)


def summary(values):
    return {"mean": statistics.mean(values), "min": min(values), "max": max(values)} if values else None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reel", default=os.environ.get("REEL", os.path.join(ROOT, ".build/release/reel")))
    ap.add_argument("-n", "--seconds", type=int, default=20)
    ap.add_argument("-r", "--repetitions", type=int, default=3)
    ap.add_argument("--size", default="1280x720")
    ap.add_argument("--preset", default="veryfast")
    ap.add_argument("--recorders", default="reel,reel+rtmp,ffmpeg,ffmpeg-tee")
    ap.add_argument("--no-g2g", action="store_true", help="skip the glass-to-glass run")
    args = ap.parse_args()
    if not os.access(args.reel, os.X_OK):
        raise SystemExit(f"no reel at {args.reel} (swift build -c release, or --reel PATH)")
    if not (os.access(NGINX, os.X_OK) and os.path.exists(MODULE)):
        raise SystemExit("needs nginx and libnginx-mod-rtmp (scripts/install-deps)")
    work = tempfile.mkdtemp(prefix="reel-bench-stream-")
    nginx = Nginx(work)
    results = {name: [] for name in args.recorders.split(",")}
    try:
        for rep in range(args.repetitions):
            for name, command in commands(args, nginx, work, f"bench{rep}").items():
                if name not in results:
                    continue
                log(f"[{rep + 1}/{args.repetitions}] {name}")
                status, cpu, rss, wall = run_measured(command)
                results[name].append({"status": status, "cpu_per_s": cpu / args.seconds, "peak_rss_mib": rss, "wall_s": wall})
        g2g = None
        if not args.no_g2g:
            log("glass-to-glass")
            delays, frames = glass_to_glass(args, nginx, work)
            g2g = {"frames_played": frames, "frames_matched": len(delays),
                   "median_s": statistics.median(delays) if delays else None,
                   "p90_s": sorted(delays)[int(0.9 * (len(delays) - 1))] if delays else None,
                   "min_s": min(delays) if delays else None, "max_s": max(delays) if delays else None}
    finally:
        nginx.stop()
        shutil.rmtree(work, ignore_errors=True)

    print(f"{args.size} @ 30 fps, {args.seconds} s x {args.repetitions}, libx264 {args.preset} crf 23 keyint 60, AAC 160k; "
          f"nproc {os.cpu_count()}; mean (min–max)\n")
    print("| recorder | CPU s per s | peak RSS MiB | exit statuses |")
    print("|---|---|---|---|")
    for name, runs in results.items():
        cpu, rss = summary([r["cpu_per_s"] for r in runs]), summary([r["peak_rss_mib"] for r in runs])
        if cpu:
            print(f"| {name} | {cpu['mean']:.3f} ({cpu['min']:.3f}–{cpu['max']:.3f}) | {rss['mean']:.0f} ({rss['min']:.0f}–{rss['max']:.0f}) "
                  f"| {','.join(str(r['status']) for r in runs)} |")
    for base, streamed in (("reel", "reel+rtmp"), ("ffmpeg", "ffmpeg-tee")):
        if results.get(base) and results.get(streamed):
            ratios = [s["cpu_per_s"] / b["cpu_per_s"] for b, s in zip(results[base], results[streamed])]
            print(f"\n{streamed} / {base} CPU (pairs): {statistics.mean(ratios):.3f} ({min(ratios):.3f}–{max(ratios):.3f})", end="")
    print()
    if g2g:
        print(f"\nglass-to-glass through nginx-rtmp (capture → decoded by an ffmpeg player, nobuffer): "
              f"median {g2g['median_s']:.3f} s, p90 {g2g['p90_s']:.3f} s, min {g2g['min_s']:.3f} s, max {g2g['max_s']:.3f} s "
              f"({g2g['frames_matched']} of {g2g['frames_played']} played frames read)")
    os.makedirs(os.path.join(HERE, "out"), exist_ok=True)
    path = os.path.join(HERE, "out", time.strftime("stream-%Y%m%d-%H%M%S.json"))
    with open(path, "w") as f:
        json.dump({"args": vars(args), "runs": results, "glass_to_glass": g2g, "commands": commands(args, nginx, "OUT", "KEY")}, f, indent=1)
    log("raw figures:", path)


if __name__ == "__main__":
    main()
