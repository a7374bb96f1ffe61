#!/usr/bin/env python3
"""Clip mode: how long after a resume the first frame of the new clip is written, side by side
for two (or more) reel binaries, with the CPU each spends and a check of every frame.

Each run records the test pattern in clip mode,

    reel record --test-pattern --size 1920x1080 --fps 30 --preset veryfast --crf 23
        --keyframe-interval 60 --pause-mode clips --keep-clips DIR --frame-log FRAMES.csv
        --json -o OUT.mp4 --no-adapt

pauses and resumes it --pauses times with SIGUSR1 (every version toggles pause with it when
standard input is not a terminal: --clip seconds recorded, --gap seconds paused), records --clip
seconds more and stops it with SIGINT. The binaries take turns, the order rotating from one
repetition to the next. reel runs with bench/resumeprobe.c as an LD_PRELOAD shim (compiled here
with gcc against the FFmpeg headers) that logs, on CLOCK_MONOTONIC, every video frame handed to
an encoder (avcodec_send_frame), every video packet that comes out of one
(avcodec_receive_packet) and goes into a file's muxer (av_interleaved_write_frame,
av_write_frame), every muxer begun (avformat_write_header) and every video encoder opened
(avcodec_open2, with how long it took). The frame log gives each frame's capture time on the
same clock and whether the file holds it.

For each resume, R being the moment just before the script sends the resuming SIGUSR1:

  resume → first frame captured   the capture time (frame log) of the first frame the new clip
                                  holds, minus R. What the clip misses of the time after the
                                  request: signal handling plus the wait for the next frame
                                  (0–33 ms at 30 fps). Frames captured in between and not in the
                                  clip are counted as "lost at resumes".
  resume → first frame to encoder the first avcodec_send_frame after R, minus R: when the new
                                  clip's first frame reached an encoder (an encoder opened first,
                                  where one is opened per clip).
  resume → first frame in file    the first video packet given to a muxer begun after R (the new
                                  clip's file), minus R: when the first frame of the new clip
                                  reached its file, encoded. It includes x264's own delay (it
                                  gives out a frame once it has seen ~17 more at veryfast with
                                  its default threads), the same in any version. The bytes then
                                  reach the disk with the fragment (every 0.5 s).
  first frame capture → in file   the two above: how long the first frame was inside reel.

Per run: CPU seconds per recorded second (ru_utime + ru_stime from wait4: the whole life,
start-up and the merge at the stop included; and "recording" from /proc/PID/stat read just
before the stop signal), peak RSS, the video encoders opened, and the checks: reel exits 0; one
clip file per interval (--pauses + 1); the frames in each clip and in the merged file
(ffprobe -count_packets) add up to the frames the frame log says were recorded; the merged
file's frames, read from the test pattern's burned-in frame counter, are exactly the recorded
frames of the frame log, in order, none repeated or missing. A failed check marks the run BAD
and the script exits 1.

    bench/resume.py before=/tmp/wt-before/.build/release/reel after=.build/release/reel
    bench/resume.py -r 3 --pauses 10 before=PATH after=PATH    # the defaults: about 5 minutes
    bench/resume.py -r 1 --pauses 2 --size 640x360 a=PATH b=PATH   # a quick look
    bench/resume.py --from bench/out/resume-DATE.json          # reprint an old table

Raw figures (every resume, every run, the commands, the machine) go to
bench/out/resume-DATE.json; --keep keeps the recordings in bench/out/resume/runs/. Needs gcc,
the FFmpeg development headers (libavcodec-dev, libavformat-dev), ffmpeg and ffprobe.
Standard library Python only.
"""
import argparse
import csv
import datetime as dt
import json
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "bench" / "out"
CLK_TCK = os.sysconf("SC_CLK_TCK")


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def run(cmd: list[str], **kw) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def system_busy() -> float:
    """CPU seconds all CPUs have spent busy since boot (user, nice, system, irq, softirq)."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]] + [0] * 8
    return (v[0] + v[1] + v[2] + v[5] + v[6]) / CLK_TCK


def proc_cpu(pid: int) -> float | None:
    """User + system CPU seconds of a process (its threads included), or None once it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / CLK_TCK
    except (OSError, IndexError, ValueError):
        return None


def wait_quiet(limit: float, timeout: float) -> float:
    """Waits until other processes use less than `limit` CPUs over a second, or `timeout`
    seconds have passed; returns the load last seen."""
    deadline = time.monotonic() + timeout
    said = 0.0
    while True:
        before, t0 = system_busy(), time.monotonic()
        time.sleep(1)
        load = (system_busy() - before) / (time.monotonic() - t0)
        if load < limit or time.monotonic() > deadline:
            return load
        if time.monotonic() - said >= 15:
            log(f"  waiting for quiet: other processes use {load:.2f} CPUs")
            said = time.monotonic()


def machine_info(binaries: dict[str, Path]) -> dict:
    cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")), "?")
    info = {
        "date": dt.datetime.now().astimezone().isoformat(timespec="seconds"),
        "nproc": os.cpu_count(),
        "cpu_model": cpu,
        "kernel": os.uname().release,
        "ffmpeg": run(["ffmpeg", "-hide_banner", "-version"]).stdout.splitlines()[0],
        "uptime_at_start": run(["uptime"]).stdout.strip(),
        "binaries": {},
    }
    for name, path in binaries.items():
        version = run([str(path), "--version"]).stdout.splitlines()
        info["binaries"][name] = {"path": str(path), "version": version[0] if version else "?",
                                  "built": dt.datetime.fromtimestamp(path.stat().st_mtime).astimezone().isoformat(timespec="seconds")}
    return info


def build_probe(folder: Path) -> Path:
    """Compiles bench/resumeprobe.c into `folder`/resumeprobe.so (again when the source changed)."""
    source = ROOT / "bench" / "resumeprobe.c"
    shim = folder / "resumeprobe.so"
    if not shim.exists() or shim.stat().st_mtime < source.stat().st_mtime:
        folder.mkdir(parents=True, exist_ok=True)
        flags = run(["pkg-config", "--cflags", "libavcodec", "libavformat"]).stdout.split()
        made = run(["gcc", "-O2", "-Wall", "-shared", "-fPIC", *flags, str(source), "-o", str(shim), "-ldl"])
        if made.returncode != 0:
            sys.exit(f"resume.py: could not compile {source} (needs gcc, libavcodec-dev, libavformat-dev):\n{made.stderr}")
    return shim


# MARK: Reading what a run left

def read_counter(strip: bytes, offset: int, width: int, height: int) -> int | None:
    """The test pattern's frame counter (see TestPattern.readCounter) from the top rows of one
    grey frame that start at `offset` in `strip`, or None."""
    cells, bits = 26, 24
    rows = max(8, (height // 10) & ~1)
    cell = max(1, width // cells)

    def level(c):
        x0, x1 = c * cell + cell // 4, max(c * cell + cell // 4 + 1, c * cell + (3 * cell) // 4)
        total = n = 0
        for y in range(rows // 4, max(rows // 4 + 1, (3 * rows) // 4), 2):
            row = strip[offset + y * width + x0: offset + y * width + x1]
            total += sum(row)
            n += len(row)
        return total // max(n, 1)

    if level(0) <= 128 or level(cells - 1) >= 128:
        return None
    value = 0
    for c in range(1, bits + 1):
        value = (value << 1) | (1 if level(c) > 128 else 0)
    return value


def counters(path: Path, width: int, height: int) -> tuple[list[int | None], str]:
    """Every decoded frame's counter, read from its top rows (decoded cropped, in grey)."""
    rows = max(8, (height // 10) & ~1)
    p = subprocess.run(["ffmpeg", "-v", "error", "-nostdin", "-i", str(path), "-map", "0:v:0", "-fps_mode", "passthrough",
                        "-vf", f"crop={width}:{rows}:0:0",
                        "-f", "rawvideo", "-pix_fmt", "gray", "-"], capture_output=True)
    size = width * rows
    return [read_counter(p.stdout, i, width, height) for i in range(0, len(p.stdout) - size + 1, size)], p.stderr.decode()[-300:]


def packets(path: Path) -> int | None:
    p = run(["ffprobe", "-v", "error", "-select_streams", "v:0", "-count_packets", "-show_entries", "stream=nb_read_packets",
             "-of", "csv=p=0", str(path)])
    try:
        return int(p.stdout.strip().split(",")[0])
    except ValueError:
        return None


def duration(path: Path) -> float | None:
    p = run(["ffprobe", "-v", "error", "-show_entries", "format=duration", "-of", "csv=p=0", str(path)])
    try:
        return float(p.stdout.strip())
    except ValueError:
        return None


def read_probe(path: Path) -> list[tuple]:
    """The shim's lines as tuples: (kind, t_ns, ...)."""
    events = []
    for line in path.read_text().splitlines():
        f = line.split()
        if not f:
            continue
        if f[0] == "open":
            events.append(("open", int(f[1]), int(f[2]), f[3], f[4]))
        elif f[0] == "send":
            events.append(("send", int(f[1]), f[2], int(f[3])))
        elif f[0] in ("recv", "write"):
            events.append((f[0], int(f[1]), f[2], int(f[3]), int(f[4])))
        elif f[0] == "header":
            events.append(("header", int(f[1]), f[2]))
    events.sort(key=lambda e: e[1])
    return events


def resume_figures(events: list[tuple], frames: list[dict], pauses: list[int], resumes: list[int], stop: int) -> list[dict]:
    """One dict per resume (see the module's documentation), times in ms after the request."""
    recorded = [r for r in frames if r["recorded"] == "yes"]
    figures = []
    for k, (p, r) in enumerate(zip(pauses, resumes)):
        end = pauses[k + 1] if k + 1 < len(pauses) else stop
        first = next((row for row in recorded if row["capture_ns"] > p), None)
        # No "recorded" column: the recording failed before the frame log was rewritten.
        lost = sum(1 for row in frames if r <= row["capture_ns"] < (first["capture_ns"] if first else end)
                   and row["recorded"] != "yes") if recorded else None
        send = next((e for e in events if e[0] == "send" and e[3] >= 0 and r < e[1] < end), None)
        opened = [e for e in events if e[0] == "open" and r < e[1] < end]
        headers = {e[2] for e in events if e[0] == "header" and r < e[1] < end}
        # A finished clip may be copied into a new file (a clip smaller than the room kept for
        # its index): a muxer that takes its first 10 packets within 10 ms is such a copy, not
        # an encoder's output (one 1080p frame alone takes x264 longer).
        for fmt in list(headers):
            ts = [e[1] for e in events if e[0] == "write" and e[2] == fmt and r < e[1] < end][:10]
            if len(ts) == 10 and ts[-1] - ts[0] < 10_000_000:
                headers.discard(fmt)
        write = next((e for e in events if e[0] == "write" and r < e[1] < end and e[2] in headers), None)
        fig = {
            "resume_ns": r,
            "captured_ms": (first["capture_ns"] - r) / 1e6 if first else None,
            "to_encoder_ms": (send[1] - r) / 1e6 if send else None,
            "in_file_ms": (write[1] - r) / 1e6 if write else None,
            "lost_frames": lost,
            "encoders_opened": len(opened),
            "open_ms": sum((e[2] - e[1]) / 1e6 for e in opened) if opened else None,
        }
        if first and write:
            fig["capture_to_file_ms"] = (write[1] - first["capture_ns"]) / 1e6
        figures.append(fig)
    return figures


def read_frame_log(path: Path) -> list[dict]:
    rows = []
    with open(path, newline="") as f:
        for row in csv.DictReader(r for r in f if not r.startswith("#")):
            rows.append({"frame": int(row["frame"]), "capture_ns": round(float(row["capture_time"]) * 1e9),
                         "recorded": row.get("recorded", "")})
    return rows


# MARK: One run

def record_once(name: str, reel: Path, shim: Path, args, folder: Path) -> dict:
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    out, clips, frame_log, probe = folder / "out.mp4", folder / "clips", folder / "frames.csv", folder / "probe.log"
    cmd = [str(reel), "record", "--test-pattern", "--size", args.size, "--fps", str(args.fps), "--preset", args.preset,
           "--crf", "23", "--keyframe-interval", "60", "--pause-mode", "clips", "--keep-clips", str(clips),
           "--frame-log", str(frame_log), "--json", "-o", str(out)] + ([] if args.adapt else ["--no-adapt"])
    env = dict(os.environ, LD_PRELOAD=str(shim), REEL_RESUMEPROBE_LOG=str(probe))
    lines: list[tuple[int, str]] = []
    busy0, t0 = system_busy(), time.monotonic_ns()
    proc = subprocess.Popen(cmd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=open(folder / "stderr.txt", "w"), text=True)
    started = threading.Event()

    def reader():
        for line in proc.stdout:
            lines.append((time.monotonic_ns(), line.strip()))
            if '"started"' in line:
                started.set()

    thread = threading.Thread(target=reader, daemon=True)
    thread.start()
    pauses, resumes = [], []
    cpu_at_stop = None
    status = rusage = None
    try:
        if not started.wait(30):
            raise RuntimeError("no started event in 30 s")
        for _ in range(args.pauses):
            time.sleep(args.clip)
            pauses.append(time.monotonic_ns())
            os.kill(proc.pid, signal.SIGUSR1)
            # A random part of a frame period more: resumes fall anywhere between two frames.
            time.sleep(args.gap + random.uniform(0, 1 / args.fps))
            resumes.append(time.monotonic_ns())
            os.kill(proc.pid, signal.SIGUSR1)
        time.sleep(args.clip)
        cpu_at_stop = proc_cpu(proc.pid)
        stop = time.monotonic_ns()
        proc.send_signal(signal.SIGINT)
        _, status, rusage = os.wait4(proc.pid, 0)
    except BaseException:
        proc.kill()
        os.wait4(proc.pid, 0)
        raise
    end = time.monotonic_ns()
    busy1 = system_busy()
    thread.join(5)
    reel_cpu = rusage.ru_utime + rusage.ru_stime
    wall = (end - t0) / 1e9
    code = os.waitstatus_to_exitcode(status)

    frames = read_frame_log(frame_log) if frame_log.exists() else []
    events = read_probe(probe) if probe.exists() else []
    recorded = [r for r in frames if r["recorded"] == "yes"]
    clip_files = sorted(clips.glob("clip-*")) if clips.exists() else []
    clip_packets = [packets(c) for c in clip_files]
    merged_packets = packets(out) if out.exists() else None
    recorded_s = duration(out) if out.exists() else None
    read, decode_errors = counters(out, *(int(v) for v in args.size.split("x"))) if out.exists() else ([], "")
    # The counter and the frame log's frame number differ by a constant (the source's first number).
    offset = recorded[0]["frame"] - read[0] if recorded and read and read[0] is not None else 0
    shown = [c + offset if c is not None else None for c in read]
    expected = [r["frame"] for r in recorded]
    problems = []
    if code != 0:
        problems.append(f"exit {code}: {(folder / 'stderr.txt').read_text()[-200:]!r}")
    if len(clip_files) != args.pauses + 1:
        problems.append(f"{len(clip_files)} clip files, expected {args.pauses + 1}")
    if None in clip_packets or merged_packets is None or sum(c or 0 for c in clip_packets) != merged_packets:
        problems.append(f"clips' frames {clip_packets} do not add up to the file's {merged_packets}")
    if merged_packets != len(recorded):
        problems.append(f"file has {merged_packets} frames, the frame log says {len(recorded)} were recorded")
    if shown != expected:
        missing = sorted(set(expected) - set(c for c in shown if c is not None))
        extra = len(shown) - len(set(shown))
        problems.append(f"counters read from the file are not the recorded frames: {len(shown)} read, {len(expected)} expected, "
                        f"missing {missing[:10]}, unreadable {shown.count(None)}, repeated {extra}")
    # Passed through, two frames of a file may share a timestamp in the raw output: not the file's fault.
    decode_errors = "\n".join(l for l in decode_errors.splitlines() if "non monotonically increasing dts" not in l)
    if decode_errors.strip():
        problems.append(f"decoding said: {decode_errors.strip()!r}")
    per_resume = resume_figures(events, frames, pauses, resumes, stop)
    if any(f["in_file_ms"] is None for f in per_resume):
        problems.append("a resume with no first frame found in the probe log")
    opens = [e for e in events if e[0] == "open"]
    runs = 1 + sum(1 for a, b in zip(recorded, recorded[1:]) if b["frame"] != a["frame"] + 1)
    result = {
        "name": name,
        "command": cmd,
        "exit": code,
        "wall_s": wall,
        "recorded_s": recorded_s,
        "cpu_s": reel_cpu,
        "cpu_until_stop_s": cpu_at_stop,
        "cpu_per_s": reel_cpu / recorded_s if recorded_s else None,
        "cpu_until_stop_per_s": cpu_at_stop / recorded_s if recorded_s and cpu_at_stop is not None else None,
        "peak_rss_mib": rusage.ru_maxrss / 1024,
        "other_cpus": max(0.0, (busy1 - busy0 - reel_cpu) / wall),
        "loadavg": open("/proc/loadavg").read().strip(),
        "encoders_opened": len(opens),
        "encoder_open_ms": [(e[2] - e[1]) / 1e6 for e in opens],
        "clips": len(clip_files),
        "clip_frames": clip_packets,
        "file_frames": merged_packets,
        "frame_log_recorded": len(recorded),
        "frame_log_rows": len(frames),
        "counter_runs": runs,
        "counters_match": shown == expected,
        "resumes": per_resume,
        "problems": problems,
        "events": [(t - t0, line) for t, line in lines if '"progress"' not in line],
    }
    if problems:
        log(f"  {name}: BAD: {'; '.join(problems)}")
    if not problems and not args.keep:
        shutil.rmtree(folder)
    return result


# MARK: The table

def cell(values: list[float], digits: int = 0) -> str:
    values = [v for v in values if v is not None]
    if not values:
        return "–"
    if len(values) == 1:
        return f"{values[0]:.{digits}f}"
    return f"{statistics.mean(values):.{digits}f} ({min(values):.{digits}f}–{max(values):.{digits}f})"


def table(data: dict) -> str:
    names = data["names"]
    runs = {n: [r for r in data["runs"] if r["name"] == n] for n in names}
    resumes = {n: [f for r in runs[n] for f in r["resumes"]] for n in names}
    rows = [
        ("resume → first frame captured, ms", lambda n: cell([f["captured_ms"] for f in resumes[n]], 1), "resume"),
        ("resume → first frame to encoder, ms", lambda n: cell([f["to_encoder_ms"] for f in resumes[n]], 1), "resume"),
        ("resume → first frame in file, ms", lambda n: cell([f["in_file_ms"] for f in resumes[n]], 1), "resume"),
        ("first frame capture → in file, ms", lambda n: cell([f.get("capture_to_file_ms") for f in resumes[n]], 1), "resume"),
        ("encoder open at a resume, ms", lambda n: cell([f["open_ms"] for f in resumes[n]], 1), "resume"),
        ("frames lost at resumes (total)", lambda n: str(sum(f["lost_frames"] or 0 for f in resumes[n])), None),
        ("video encoders opened per run", lambda n: cell([r["encoders_opened"] for r in runs[n]]), None),
        ("CPU s per recorded s (whole life)", lambda n: cell([r["cpu_per_s"] for r in runs[n]], 3), "run"),
        ("CPU s per recorded s (until stop)", lambda n: cell([r["cpu_until_stop_per_s"] for r in runs[n]], 3), "run"),
        ("recorded s", lambda n: cell([r["recorded_s"] for r in runs[n]], 2), None),
        ("frames in file (ffprobe)", lambda n: cell([r["file_frames"] for r in runs[n]]), None),
        ("frames recorded (frame log)", lambda n: cell([r["frame_log_recorded"] for r in runs[n]]), None),
        ("clips (files)", lambda n: cell([r["clips"] for r in runs[n]]), None),
        ("counters in file = recorded frames", lambda n: f"{sum(r['counters_match'] for r in runs[n])}/{len(runs[n])}", None),
        ("peak RSS MiB", lambda n: cell([r["peak_rss_mib"] for r in runs[n]], 1), None),
        ("other processes, CPUs", lambda n: cell([r["other_cpus"] for r in runs[n]], 2), None),
        ("runs with problems", lambda n: str(sum(1 for r in runs[n] if r["problems"])), None),
    ]
    ratio_of = names[-1] + "/" + names[0] if len(names) == 2 else None
    head = ["", *names] + ([ratio_of] if ratio_of else [])
    body = []
    for label, fn, kind in rows:
        line = [label, *(fn(n) for n in names)]
        if ratio_of:
            if kind:
                key = {"resume → first frame captured, ms": "captured_ms", "resume → first frame to encoder, ms": "to_encoder_ms",
                       "resume → first frame in file, ms": "in_file_ms", "first frame capture → in file, ms": "capture_to_file_ms",
                       "encoder open at a resume, ms": "open_ms", "CPU s per recorded s (whole life)": "cpu_per_s",
                       "CPU s per recorded s (until stop)": "cpu_until_stop_per_s"}[label]
                src = resumes if kind == "resume" else runs
                a = [x.get(key) for x in src[names[0]] if x.get(key) is not None]
                b = [x.get(key) for x in src[names[1]] if x.get(key) is not None]
                line.append(f"{statistics.mean(b) / statistics.mean(a):.2f}" if a and b and statistics.mean(a) else "–")
            else:
                line.append("")
        body.append(line)
    widths = [max(len(str(r[i])) for r in [head, *body]) for i in range(len(head))]
    out = []
    a = data["args"]
    out.append(f"# clip mode, {a['size']} {a['fps']} fps test pattern, {a['preset']}; {a['pauses']} pauses × {a['repetitions']} runs "
               f"per binary ({a['clip']} s recorded, {a['gap']} s paused); {data['machine']['date']}")
    for n in names:
        b = data["machine"]["binaries"][n]
        out.append(f"# {n}: {b['path']} ({b['version']}, built {b['built']})")
    out.append(f"# load: {data['machine']['uptime_at_start']}  →  {data['machine'].get('uptime_at_end', '?')}")
    out.append("| " + " | ".join(h.ljust(w) for h, w in zip(head, widths)) + " |")
    out.append("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for line in body:
        out.append("| " + " | ".join(str(c).ljust(w) for c, w in zip(line, widths)) + " |")
    out.append("Cells: mean (min–max); latencies over every resume of every run, the rest over runs. "
               + (f"{ratio_of}: ratio of the means." if ratio_of else ""))
    return "\n".join(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("binaries", nargs="*", metavar="NAME=PATH", help="reel binaries to compare (the first is the baseline)")
    ap.add_argument("-r", "--repetitions", type=int, default=3)
    ap.add_argument("--pauses", type=int, default=10, help="pauses (and resumes) per run (10)")
    ap.add_argument("--clip", type=float, default=2.0, help="seconds recorded between pauses (2)")
    ap.add_argument("--gap", type=float, default=1.5, help="seconds paused (1.5)")
    ap.add_argument("--size", default="1920x1080")
    ap.add_argument("--fps", type=int, default=30)
    ap.add_argument("--preset", default="veryfast")
    ap.add_argument("--quiet-wait", type=float, default=120, help="wait at most this long before each run for quiet (120 s)")
    ap.add_argument("--quiet", type=float, default=0.3, help="quiet: other processes under this many CPUs (0.3)")
    ap.add_argument("--adapt", action="store_true", help="let the encoder step to faster presets when it falls behind "
                    "(without it every run has --no-adapt: one preset throughout, so the latencies compare)")
    ap.add_argument("--keep", action="store_true", help="keep the recordings in bench/out/resume/runs/")
    ap.add_argument("--from", dest="source", help="reprint the table of an earlier JSON")
    args = ap.parse_args()
    if args.source:
        print(table(json.load(open(args.source))))
        return 0
    binaries: dict[str, Path] = {}
    for i, item in enumerate(args.binaries):
        name, _, path = item.rpartition("=")
        name = name or f"reel{i + 1}"
        if not os.access(path, os.X_OK):
            sys.exit(f"resume.py: no reel binary at {path}")
        binaries[name] = Path(path).resolve()
    if not binaries:
        sys.exit("resume.py: give the reel binaries to compare, e.g. before=PATH after=PATH")
    for tool in ("gcc", "ffmpeg", "ffprobe", "pkg-config"):
        if not shutil.which(tool):
            sys.exit(f"resume.py: needs {tool}")
    shim = build_probe(OUT / "resume")
    names = list(binaries)
    data = {"names": names, "args": vars(args), "machine": machine_info(binaries), "runs": []}
    stamp = time.strftime("%Y%m%d-%H%M%S")
    for rep in range(args.repetitions):
        order = names[rep % len(names):] + names[:rep % len(names)]
        for name in order:
            load = wait_quiet(args.quiet, args.quiet_wait)
            log(f"run {rep + 1}/{args.repetitions}: {name} (other processes {load:.2f} CPUs before)")
            result = record_once(name, binaries[name], shim, args, OUT / "resume" / "runs" / f"{name}-{rep + 1}")
            result["repetition"] = rep + 1
            result["other_cpus_before"] = load
            data["runs"].append(result)
            ms = [f["in_file_ms"] for f in result["resumes"] if f["in_file_ms"] is not None]
            log(f"  {name}: resume → in file {statistics.mean(ms):.0f} ms, CPU {result['cpu_per_s']:.3f} s/s, "
                f"{result['file_frames']} frames" if ms and result["cpu_per_s"] else f"  {name}: no figures")
    data["machine"]["uptime_at_end"] = run(["uptime"]).stdout.strip()
    OUT.mkdir(parents=True, exist_ok=True)
    path = OUT / f"resume-{stamp}.json"
    path.write_text(json.dumps(data, indent=1))
    print(table(data))
    log(f"raw figures: {path}")
    return 1 if any(r["problems"] for r in data["runs"]) else 0


if __name__ == "__main__":
    sys.exit(main())
