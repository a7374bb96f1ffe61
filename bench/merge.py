#!/usr/bin/env python3
"""reel merge against ffmpeg's concat demuxer and a plain copy, side by side in one run.

Makes (once, cached in bench/out/merge/clips/) ten one-minute clips with
`reel record --test-pattern --tone` (1280x720, 30 fps, H.264 + AAC in MP4), then joins them
in turn, repetition after repetition with the order rotating, with:

  reel            reel merge clip01.mp4 … clip10.mp4 -o out.mp4          (index at the front)
  ffmpeg          ffmpeg -f concat -safe 0 -i list.txt -c copy -movflags +faststart out.mp4
  ffmpeg-plain    the same without -movflags +faststart (index at the end, one pass less)
  cat             cat clip01.mp4 … clip10.mp4 > out.bin: the same bytes, the disk's limit
                  (GNU cat copies inside the kernel with copy_file_range, never through memory
                  of its own)
  dd              for f in clips; do dd if=$f bs=1M; done > out.bin: the same copy through a
                  program's memory (read + write), the floor for any program that looks at
                  the bytes

and reports wall time and CPU time (user + system of the process, from wait4) with ratios.
Each output is checked with ffprobe (duration and frame count; the joined files must hold
every frame). Before each run the page cache is flushed to disk (`sync`), so no run pays for
the previous one's writes; the clips themselves stay cached, as they would right after a
recording. The table goes to standard output, raw figures to bench/out/merge-DATE.json.

Python 3 standard library only.
"""

from __future__ import annotations

import argparse
import array
import datetime as dt
import json
import math
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def system_busy() -> float:
    """CPU seconds all CPUs have spent busy since boot (user, nice, system, irq, softirq)."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]] + [0] * 8
    return (v[0] + v[1] + v[2] + v[5] + v[6]) / os.sysconf("SC_CLK_TCK")


def wait_quiet(limit: float, timeout: float) -> float:
    """Waits until the machine's other work uses less than `limit` CPUs (over one second);
    returns the load last seen. Other people's builds and benchmarks share this machine."""
    deadline = time.monotonic() + timeout
    while True:
        before = system_busy()
        time.sleep(1)
        load = system_busy() - before
        if load < limit or time.monotonic() > deadline:
            return load
        log(f"  waiting for quiet: other processes use {load:.2f} CPUs")
        time.sleep(4)


def need(tool: str) -> str:
    path = shutil.which(tool)
    if not path:
        sys.exit(f"merge.py: '{tool}' is not installed")
    return path


def probe(path: Path) -> dict:
    """Duration (s), video frames and codecs of a media file, from ffprobe."""
    r = subprocess.run(["ffprobe", "-v", "error", "-count_packets", "-show_entries",
                        "format=duration:stream=codec_type,codec_name,nb_read_packets,width,height",
                        "-of", "json", str(path)], capture_output=True, text=True)
    if r.returncode != 0:
        return {"error": r.stderr.strip()}
    j = json.loads(r.stdout)
    video = [s for s in j.get("streams", []) if s.get("codec_type") == "video"]
    audio = [s for s in j.get("streams", []) if s.get("codec_type") == "audio"]
    return {
        "duration": float(j.get("format", {}).get("duration", 0)),
        "frames": int(video[0].get("nb_read_packets", 0)) if video else 0,
        "video": f"{video[0]['codec_name']} {video[0]['width']}x{video[0]['height']}" if video else None,
        "audio": audio[0]["codec_name"] if audio else None,
    }


def moov_first(path: Path) -> bool:
    """Whether the MP4's index (moov) comes before its media data (mdat)."""
    with open(path, "rb") as f:
        offset = 0
        size = os.fstat(f.fileno()).st_size
        while offset < size:
            f.seek(offset)
            head = f.read(16)
            if len(head) < 8:
                return False
            box = int.from_bytes(head[:4], "big")
            kind = head[4:8]
            if box == 1:
                box = int.from_bytes(head[8:16], "big")
            if kind == b"moov":
                return True
            if kind == b"mdat":
                return False
            if box < 8:
                return False
            offset += box
    return False


def goertzel(samples, rate: int, frequency: float) -> float:
    """Power of `samples` at `frequency` (the mean square of its sine component)."""
    coefficient = 2 * math.cos(2 * math.pi * frequency / rate)
    s1 = s2 = 0.0
    for x in samples:
        s1, s2 = x + coefficient * s1 - s2, s1
    n = len(samples)
    return 2 * max(0.0, s1 * s1 + s2 * s2 - coefficient * s1 * s2) / (n * n) if n else 0.0


def av_offsets(path: Path, start: float, length: float, from_start: bool = False) -> list[float]:
    """For each beep of the test tone between `start` and `start + length` seconds, how long
    after the test pattern's flash it starts, in ms (negative: the sound comes first). Video
    times are the frames' presentation times. Audio times count decoded samples: from `start`
    (found by timestamp, as a player that follows timestamps hears it), or with `from_start`
    from the beginning of the file (as a player that plays sample after sample hears it)."""
    r = subprocess.run(["ffprobe", "-v", "error", "-f", "lavfi", "-i", f"movie={path}:seek_point={start},signalstats",
                        "-show_entries", "frame=pts_time:frame_tags=lavfi.signalstats.YAVG", "-of", "csv=p=0"],
                       capture_output=True, text=True)
    flashes, previous = [], False
    for line in r.stdout.split():
        parts = line.split(",")
        if len(parts) < 2:
            continue
        t, y = float(parts[0]), float(parts[1])
        if not start <= t < start + length:
            continue
        flash = y > 180  # a flash frame is white below the counter strip; the bars average ~100
        if flash and not previous:
            flashes.append(t)
        previous = flash
    seek = [] if from_start else ["-ss", str(start), "-t", str(length)]
    a = subprocess.run(["ffmpeg", "-nostdin", "-v", "error", *seek, "-i", str(path), "-map", "0:a:0",
                        "-ac", "1", "-ar", "48000", "-f", "f32le", "-"], capture_output=True)
    samples = array.array("f")
    if from_start:
        first = int(start * 48000) * 4
        samples.frombytes(a.stdout[first: first + int(length * 48000) * 4])
    else:
        samples.frombytes(a.stdout[: len(a.stdout) // 4 * 4])
    window = 240
    powers = [goertzel(samples[i:i + window], 48000, 1000) for i in range(0, len(samples) - window + 1, window)]
    beeps, inside = [], False
    peak = max(powers, default=0)
    for i, p in enumerate(powers):
        if not inside and p > peak / 4:
            inside = True
            beeps.append(start + i * window / 48000)
        elif inside and p < peak / 16:
            inside = False
    offsets = []
    for f in flashes:
        nearest = min(beeps, key=lambda b: abs(b - f), default=None)
        if nearest is not None and abs(nearest - f) < 0.5:
            offsets.append((nearest - f) * 1000)
    return offsets


# ----------------------------------------------------------------------------------------------
# the clips


# The noisy clips: the same size and rate, ffmpeg's moving test source with grain, about
# 6.5 Mb/s (a busy screen recording), so that the files are large enough for the disk to count.
NOISY = ["-f", "lavfi", "-i", "testsrc2=size=1280x720:rate=30,noise=alls=4:allf=t",
         "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000",
         "-c:v", "libx264", "-preset", "ultrafast", "-crf", "23", "-g", "60", "-pix_fmt", "yuv420p",
         "-c:a", "aac", "-b:a", "160k", "-ac", "2"]


def make_clips(reel: str, folder: Path, count: int, seconds: int, parallel: int, scenario: str) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    clips = [folder / f"clip{i + 1:02d}.mp4" for i in range(count)]
    expected = seconds * 30
    if scenario == "noisy":
        parallel = 1  # ffmpeg uses both CPUs; no real-time deadline

    def good(clip: Path) -> bool:
        if not clip.exists():
            return False
        p = probe(clip)
        return p.get("frames") == expected and p.get("video") == "h264 1280x720" and p.get("audio") == "aac"

    missing = [c for c in clips if not good(c)]
    if missing:
        how = "ffmpeg" if scenario == "noisy" else f"{reel} ({parallel} at a time, in real time)"
        log(f"making {len(missing)} {scenario} clips of {seconds} s with {how}")

    def record(clip: Path) -> None:
        for attempt in range(3):
            clip.unlink(missing_ok=True)
            if scenario == "noisy":
                cmd = ["ffmpeg", "-nostdin", "-v", "error", *NOISY, "-t", str(seconds), str(clip)]
            else:
                cmd = [reel, "record", "--test-pattern", "--tone", "--size", "1280x720", "--fps", "30",
                       "--duration", str(seconds), "-o", str(clip)]
            r = subprocess.run(cmd, capture_output=True, text=True)
            if r.returncode == 0 and good(clip):
                log(f"  {clip.name}: ok")
                return
            log(f"  {clip.name}: attempt {attempt + 1} not clean ({r.stderr.strip() or probe(clip)}), again")
        sys.exit(f"merge.py: could not record a clean {clip.name}")

    with ThreadPoolExecutor(max_workers=parallel) as pool:
        list(pool.map(record, missing))
    return clips


# ----------------------------------------------------------------------------------------------
# the runs


def timed(cmd: list[str], stdout_path: Path | None = None) -> dict:
    """Runs `cmd`; returns wall seconds, CPU seconds (user + system) and the exit status."""
    out = open(stdout_path, "wb") if stdout_path else subprocess.DEVNULL
    try:
        busy = system_busy()
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
        err = proc.stderr.read()
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        busy = system_busy() - busy
        proc.returncode = os.waitstatus_to_exitcode(status)
    finally:
        if stdout_path:
            out.close()
    cpu = usage.ru_utime + usage.ru_stime
    return {"wall": wall, "user": usage.ru_utime, "sys": usage.ru_stime, "cpu": cpu,
            "other_cpu": max(0.0, busy - cpu),
            "rss_mib": usage.ru_maxrss / 1024, "status": proc.returncode,
            "stderr": err.decode(errors="replace").strip()[-2000:]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reel", default="/tmp/build-merge/release/reel",
                    help="the reel binary (default: %(default)s; build with swift build -c release --scratch-path /tmp/build-merge)")
    ap.add_argument("-n", "--clips", type=int, default=10, help="clips to join (default 10)")
    ap.add_argument("-s", "--seconds", type=int, default=60, help="length of each clip (default 60)")
    ap.add_argument("-r", "--repetitions", type=int, default=3, help="repetitions of each joiner (default 3)")
    ap.add_argument("--quiet", type=float, default=0.15,
                    help="before each run, wait until other processes use less than this many CPUs (default 0.15)")
    ap.add_argument("--quiet-wait", type=float, default=600, help="but no longer than this many seconds (default 600)")
    ap.add_argument("--parallel", type=int, default=2, help="clips recorded at once when making them (default 2)")
    ap.add_argument("--scenario", choices=["pattern", "noisy"], default="pattern",
                    help="pattern: clips recorded by reel record --test-pattern --tone (small: the test pattern "
                         "compresses to ~0.25 Mb/s); noisy: clips made by ffmpeg at ~6.5 Mb/s (default pattern)")
    ap.add_argument("--work", type=Path, default=None, help="working folder (default bench/out/merge-SCENARIO)")
    ap.add_argument("--no-sync", dest="keep", action="store_false",
                    help="skip measuring sound against picture in the outputs (pattern scenario)")
    args = ap.parse_args()

    reel = str(Path(args.reel).resolve())
    if not os.access(reel, os.X_OK):
        sys.exit(f"merge.py: no reel binary at {reel} (swift build -c release --scratch-path /tmp/build-merge)")
    ffmpeg = need("ffmpeg")
    need("ffprobe")
    cat = need("cat")

    work = args.work or BENCH / "out" / f"merge-{args.scenario}"
    clips = make_clips(reel, work / "clips", args.clips, args.seconds, args.parallel, args.scenario)
    total_bytes = sum(c.stat().st_size for c in clips)
    runs_dir = work / "runs"
    runs_dir.mkdir(parents=True, exist_ok=True)
    listing = runs_dir / "list.txt"
    listing.write_text("".join(f"file '{c}'\n" for c in clips))

    joiners = {
        "reel": lambda out: ([reel, "merge", *map(str, clips), "-o", str(out)], None),
        "ffmpeg": lambda out: ([ffmpeg, "-nostdin", "-v", "error", "-f", "concat", "-safe", "0", "-i", str(listing),
                                "-c", "copy", "-movflags", "+faststart", str(out)], None),
        "ffmpeg-plain": lambda out: ([ffmpeg, "-nostdin", "-v", "error", "-f", "concat", "-safe", "0", "-i", str(listing),
                                      "-c", "copy", str(out)], None),
        "cat": lambda out: ([cat, *map(str, clips)], out),
        # cat copies inside the kernel (copy_file_range); anything that passes the bytes
        # through a program reads and writes them: that floor, with 1 MiB blocks.
        "dd": lambda out: (["sh", "-c", 'for f in "$@"; do dd if="$f" bs=1M status=none; done', "sh", *map(str, clips)], out),
    }
    names = list(joiners)
    # Read every clip once so that all runs find them in the page cache.
    for c in clips:
        with open(c, "rb") as f:
            while f.read(1 << 22):
                pass

    results: dict[str, list[dict]] = {n: [] for n in names}
    expected_frames = args.clips * args.seconds * 30
    bad = False
    for rep in range(args.repetitions):
        order = names[rep % len(names):] + names[:rep % len(names)]
        for name in order:
            out = runs_dir / (f"{name}.bin" if name in ("cat", "dd") else f"{name}.mp4")
            out.unlink(missing_ok=True)
            subprocess.run(["sync"])
            r0 = wait_quiet(args.quiet, args.quiet_wait)
            cmd, stdout_path = joiners[name](out)
            r = timed(cmd, stdout_path)
            r["load_before"] = r0
            r["command"] = " ".join(cmd) + (f" > {out}" if stdout_path else "")
            r["bytes"] = out.stat().st_size if out.exists() else 0
            if name not in ("cat", "dd") and r["status"] == 0:
                p = probe(out)
                r["probe"] = p
                r["moov_first"] = moov_first(out)
                r["ok"] = p.get("frames") == expected_frames
            else:
                r["ok"] = r["status"] == 0 and (name not in ("cat", "dd") or r["bytes"] == total_bytes)
            bad |= not r["ok"]
            log(f"rep {rep + 1} {name:13s} wall {r['wall']:.3f} s  cpu {r['cpu']:.3f} s  other {r['other_cpu']:.3f} s  "
                f"{'ok' if r['ok'] else 'BAD ' + r['stderr']}")
            results[name].append(r)
            if not (args.keep and args.scenario == "pattern" and rep == args.repetitions - 1):
                out.unlink(missing_ok=True)

    # Sound against picture in the last output of each joiner (pattern clips beep and flash
    # each second): in the first clip, and in the last, after every join.
    sync: dict[str, dict] = {}
    if args.scenario == "pattern" and args.keep:
        end = args.clips * args.seconds
        for name in ["reel", "ffmpeg", "ffmpeg-plain"]:
            out = runs_dir / f"{name}.mp4"
            first = av_offsets(out, 0, 10)
            last = av_offsets(out, end - 10, 10)
            counted = av_offsets(out, end - 10, 10, from_start=True)
            sync[name] = {"first": first, "last": last, "last_counting_samples": counted}
            log(f"{name}: beep − flash in the first clip {statistics.fmean(first):+.1f} ms, in the last "
                f"{statistics.fmean(last):+.1f} ms by timestamps, {statistics.fmean(counted):+.1f} ms counting samples")

    def cell(xs: list[float]) -> str:
        return f"{statistics.fmean(xs):.3f} ({min(xs):.3f}–{max(xs):.3f})"

    def avg(name: str, key: str) -> float:
        return statistics.fmean(r[key] for r in results[name])

    lines = [
        f"{args.clips} clips × {args.seconds} s, 1280x720 30 fps H.264 + AAC, {total_bytes / 1e6:.1f} MB in all; "
        f"{args.repetitions} repetitions, order rotating; mean (min–max)",
        "",
        "| joiner | wall s | CPU s (user+sys) | other processes, CPU s | wall / cat | wall / dd | wall / reel | frames | duration s | index first | beep − flash: first / last clip (last, counting samples) |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name in names:
        rs = results[name]
        media = name not in ("cat", "dd")
        frames = rs[-1].get("probe", {}).get("frames", "—") if media else "—"
        duration = f"{rs[-1]['probe']['duration']:.3f}" if media and "probe" in rs[-1] else "—"
        first = ("yes" if rs[-1].get("moov_first") else "no") if media else "—"
        offsets = "—"
        if name in sync and all(sync[name].values()):
            offsets = (f"{statistics.fmean(sync[name]['first']):+.0f} / {statistics.fmean(sync[name]['last']):+.0f} "
                       f"({statistics.fmean(sync[name]['last_counting_samples']):+.0f}) ms")
        lines.append(f"| {name} | {cell([r['wall'] for r in rs])} | {cell([r['cpu'] for r in rs])} | "
                     f"{statistics.fmean(r['other_cpu'] for r in rs):.3f} | "
                     f"{avg(name, 'wall') / avg('cat', 'wall'):.2f} | {avg(name, 'wall') / avg('dd', 'wall'):.2f} | "
                     f"{avg(name, 'wall') / avg('reel', 'wall'):.2f} | "
                     f"{frames} | {duration} | {first} | {offsets} |")
    lines += [
        "",
        f"reel / ffmpeg (faststart): wall {avg('reel', 'wall') / avg('ffmpeg', 'wall'):.2f}, "
        f"CPU {avg('reel', 'cpu') / avg('ffmpeg', 'cpu'):.2f}; "
        f"reel / ffmpeg-plain: wall {avg('reel', 'wall') / avg('ffmpeg-plain', 'wall'):.2f}; "
        f"reel / cat: wall {avg('reel', 'wall') / avg('cat', 'wall'):.2f}; "
        f"reel / dd: wall {avg('reel', 'wall') / avg('dd', 'wall'):.2f}",
        "",
        "Commands:",
        "",
    ]
    for name in names:
        lines.append(f"- `{name}`: `{results[name][0]['command']}`")
    print("\n".join(lines))

    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    report = {
        "date": stamp, "machine": {"cpus": os.cpu_count(), "platform": platform.platform()},
        "reel": reel, "ffmpeg": subprocess.run([ffmpeg, "-version"], capture_output=True, text=True).stdout.splitlines()[0],
        "scenario": args.scenario, "clips": [str(c) for c in clips], "clip_bytes": total_bytes, "results": results,
        "sync_ms": sync,
    }
    (BENCH / "out").mkdir(exist_ok=True)
    (BENCH / "out" / f"merge-{stamp}.json").write_text(json.dumps(report, indent=1))
    log(f"raw figures in bench/out/merge-{stamp}.json")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
