#!/usr/bin/env python3
"""Soak benchmark: a long synthetic recording made faster than real time on reel's virtual clock.

Records the test pattern and tone for --minutes (default 60) minutes of media with
`reel record --faster-than-real-time`, sampling the recorder's resident memory as it goes and
mapping each sample to the recorded time reel reports in its --json progress events. Then it
decodes the first and the last ten seconds and measures audio/video sync from the beeps and
flashes: drift is how much the beep-to-flash offset moved from the start to the end.

Figures: peak RSS after the first recorded minute vs. peak RSS over the whole recording, and the
drift in milliseconds per minute. Standard library only; needs ffmpeg/ffprobe.
"""
import argparse, json, os, struct, subprocess, sys, tempfile, threading, time, math

def rss_kib(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        return None

def decode_gray(path, start, seconds, w, h):
    out = subprocess.run(["ffmpeg", "-v", "error", "-ss", str(start), "-i", path, "-t", str(seconds), "-map", "0:v:0",
                          "-fps_mode", "passthrough", "-f", "rawvideo", "-pix_fmt", "gray", "-"], capture_output=True, check=True).stdout
    n = w * h
    return [out[i:i + n] for i in range(0, len(out) - n + 1, n)]

def frame_times(path, start, seconds):
    out = subprocess.run(["ffprobe", "-v", "error", "-read_intervals", f"{start}%+{seconds}", "-select_streams", "v:0",
                          "-show_entries", "packet=pts_time", "-of", "csv=p=0", path], capture_output=True, text=True, check=True).stdout
    return sorted(float(x) for x in out.split() if x.strip() and start - 0.001 <= float(x) < start + seconds)

def decode_audio(path, start, seconds):
    out = subprocess.run(["ffmpeg", "-v", "error", "-ss", str(start), "-i", path, "-t", str(seconds), "-map", "0:a:0", "-ac", "1",
                          "-ar", "48000", "-f", "f32le", "-"], capture_output=True, check=True).stdout
    return struct.unpack(f"<{len(out) // 4}f", out)

def beep_onsets(samples, start, rate=48000, freq=1000.0, win=240):
    powers = []
    for i in range(0, len(samples) - win + 1, win):
        re = im = 0.0
        for k in range(win):
            a = 2 * math.pi * freq * k / rate
            re += samples[i + k] * math.cos(a); im -= samples[i + k] * math.sin(a)
        powers.append(math.hypot(re, im))
    peak = max(powers) if powers else 0
    onsets, inside = [], False
    for i, p in enumerate(powers):
        if not inside and p > peak / 4:
            inside = True; onsets.append(start + i * win / rate)
        elif inside and p < peak / 16:
            inside = False
    return onsets

def flash_onsets(frames, times, w, h):
    strip = max(8, (h // 10) & ~1)
    out, prev = [], False
    for f, t in zip(frames, times):
        body = f[strip * w + 2 * w:]
        sample = body[::97]
        bright = sum(sample) / max(1, len(sample)) > 215
        if bright and not prev: out.append(t)
        prev = bright
    return out

def sync_offsets(path, start, seconds, w, h):
    frames = decode_gray(path, start, seconds, w, h)
    times = frame_times(path, start, seconds)[:len(frames)]
    flashes = flash_onsets(frames, times, w, h)
    beeps = beep_onsets(decode_audio(path, start, seconds), start)
    pairs = []
    for f in flashes:
        b = min(beeps, key=lambda x: abs(x - f), default=None)
        if b is not None and abs(b - f) < 0.25: pairs.append(b - f)
    return pairs

def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reel", default=".build/release/reel")
    ap.add_argument("--minutes", type=float, default=60)
    ap.add_argument("--size", default="320x240")
    args = ap.parse_args()
    w, h = map(int, args.size.split("x"))
    outdir = os.path.join(os.path.dirname(__file__), "out"); os.makedirs(outdir, exist_ok=True)
    path = os.path.join(outdir, "soak.mp4")
    cmd = [args.reel, "record", "--test-pattern", "--tone", "--size", args.size, "--preset", "ultrafast",
           "--duration", str(args.minutes * 60), "--faster-than-real-time", "--json", "--overwrite", "-o", path]
    print("command:", " ".join(cmd), file=sys.stderr)
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    recorded = [0.0]
    def read_events():
        for line in proc.stdout:
            try:
                e = json.loads(line)
            except ValueError:
                continue
            if e.get("event") == "progress": recorded[0] = e.get("duration", recorded[0])
    reader = threading.Thread(target=read_events, daemon=True); reader.start()
    samples = []
    while proc.poll() is None:
        r = rss_kib(proc.pid)
        if r: samples.append((recorded[0], r))
        time.sleep(0.1)
    reader.join(timeout=5)
    wall = time.monotonic() - t0
    if proc.returncode != 0:
        print(f"reel failed with status {proc.returncode}", file=sys.stderr); return 1
    total = args.minutes * 60
    first_minute = max((r for t, r in samples if t <= 60), default=0)
    # While recording (up to the last progress event before the end), and then while finalising
    # (the remux to a regular MP4 holds the whole index, like any MP4 muxer does at its end).
    recording = [(t, r) for t, r in samples if t < total - 1]
    peak = max((r for _, r in recording), default=0)
    finalising_peak = max((r for t, r in samples if t >= total - 1), default=0)
    by_ten_minutes = {}
    for t, r in recording:
        k = int(t // 600) * 10
        by_ten_minutes[k] = max(by_ten_minutes.get(k, 0), r)
    start_pairs = sync_offsets(path, 0, 10, w, h)
    end_pairs = sync_offsets(path, total - 10, 10, w, h)
    start_off = sum(start_pairs) / len(start_pairs) if start_pairs else float("nan")
    end_off = sum(end_pairs) / len(end_pairs) if end_pairs else float("nan")
    drift_per_min = (end_off - start_off) / ((total - 10) / 60) * 1000
    probe = json.loads(subprocess.run(["ffprobe", "-v", "error", "-print_format", "json", "-show_format", "-show_streams",
                                       "-count_packets", path], capture_output=True, text=True).stdout)
    v = [s for s in probe["streams"] if s["codec_type"] == "video"][0]
    result = {
        "recorded_seconds": total, "wall_seconds": round(wall, 1), "speed_vs_real_time": round(total / wall, 1),
        "rss_peak_first_minute_mib": round(first_minute / 1024, 1), "rss_peak_while_recording_mib": round(peak / 1024, 1),
        "rss_peak_per_10_minutes_mib": {f"{k}-{k + 10} min": round(v / 1024, 1) for k, v in sorted(by_ten_minutes.items())},
        "rss_peak_finalising_mib": round(finalising_peak / 1024, 1),
        "video_packets": int(v.get("nb_read_packets", 0)), "expected_frames": int(total * 30),
        "av_offset_start_ms": round(start_off * 1000, 2), "av_offset_end_ms": round(end_off * 1000, 2),
        "drift_ms_per_minute": round(drift_per_min, 4), "flash_beep_pairs": [len(start_pairs), len(end_pairs)],
        "command": " ".join(cmd),
    }
    with open(os.path.join(outdir, f"soak-{time.strftime('%Y%m%d-%H%M%S')}.json"), "w") as f: json.dump(result, f, indent=1)
    for k, val in result.items(): print(f"{k:28} {val}")
    ok = peak <= first_minute * 1.05 + 1024 and abs(drift_per_min) < 1 and result["video_packets"] == result["expected_frames"]
    print("targets met" if ok else "targets NOT met")
    return 0 if ok else 1

if __name__ == "__main__":
    sys.exit(main())
