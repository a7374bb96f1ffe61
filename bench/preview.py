#!/usr/bin/env python3
"""The preview window's cost and delay: `reel record --preview` against the same recording
without it, side by side in one run.

Starts an Xvfb (1920x1080x24) for the window and records, repetition after repetition with the
order alternating,

  plain     reel record --test-pattern --size WxH --fps 30 --preset veryfast --duration N --json -o a.mp4
  preview   the same with --preview (the window on the Xvfb display)

Measures CPU seconds per recorded second of reel (wait4, its whole life) and of the X server
(/proc/PID/stat before and after: the window's pictures are drawn by the X server too, so its
work counts against the preview), frames and dropped frames (the JSON `finished` event), and
the preview's own figures (the JSON `preview` event: pictures shown, and the delay from each
picture's capture to the return of SDL's present call, mean and maximum). Checks every file
with ffprobe (frame count). Prints a table; raw figures go to bench/out/preview-DATE.json.

Python 3 standard library only; needs Xvfb and ffprobe.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
CLK_TCK = os.sysconf("SC_CLK_TCK")


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def cpu_of(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def record(reel: str, display: str, xvfb: int, preview: bool, seconds: int, size: str, out: Path) -> dict:
    command = [reel, "record", "--test-pattern", "--size", size, "--fps", "30", "--preset", "veryfast",
               "--duration", str(seconds), "--json", "--overwrite", "-o", str(out)]
    if preview:
        command.append("--preview")
    env = dict(os.environ, DISPLAY=display)
    x_before = cpu_of(xvfb)
    start = time.monotonic()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.monotonic() - start
    stdout = process.stdout.read()
    stderr = process.stderr.read()
    x_after = cpu_of(xvfb)
    events = [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]
    finished = next((e for e in events if e.get("event") == "finished"), {})
    shown = next((e for e in events if e.get("event") == "preview"), {})
    probe = subprocess.run(["ffprobe", "-v", "error", "-select_streams", "v:0", "-count_packets", "-show_entries",
                            "stream=nb_read_packets", "-of", "csv=p=0", str(out)], capture_output=True, text=True)
    return {
        "preview": preview, "status": os.waitstatus_to_exitcode(status), "wall": wall, "seconds": seconds,
        "reel_cpu": (usage.ru_utime + usage.ru_stime) / seconds, "xvfb_cpu": (x_after - x_before) / seconds,
        "peak_rss_mib": usage.ru_maxrss / 1024, "frames": finished.get("frames"), "dropped": finished.get("dropped", finished.get("droppedFrames")),
        "file_frames": int(probe.stdout.strip() or 0), "shown": shown.get("shown"), "skipped": shown.get("skipped"),
        "delay_mean": shown.get("delayMean"), "delay_max": shown.get("delayMax"),
        "stderr": stderr[-400:] if os.waitstatus_to_exitcode(status) != 0 else "",
    }


def mean_range(values: list[float], digits: int = 3) -> str:
    if not values:
        return "-"
    return f"{statistics.mean(values):.{digits}f} ({min(values):.{digits}f}–{max(values):.{digits}f})"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reel", default=os.environ.get("REEL", str(ROOT / ".build/release/reel")))
    parser.add_argument("-n", "--seconds", type=int, default=20)
    parser.add_argument("-r", "--repetitions", type=int, default=3)
    parser.add_argument("--size", default="1280x720")
    args = parser.parse_args()
    display = ":" + str(120 + os.getpid() % 200)
    xvfb = subprocess.Popen(["Xvfb", display, "-screen", "0", "1920x1080x24", "-nolisten", "tcp"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(1.5)
    runs = []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for rep in range(args.repetitions):
                order = [False, True] if rep % 2 == 0 else [True, False]
                for preview in order:
                    log(f"repetition {rep + 1}: {'preview' if preview else 'plain'}")
                    runs.append(record(args.reel, display, xvfb.pid, preview, args.seconds, args.size, Path(tmp) / "out.mp4"))
    finally:
        xvfb.kill()
    plain = [r for r in runs if not r["preview"]]
    shown = [r for r in runs if r["preview"]]
    expected = args.seconds * 30
    rows = [
        ("reel CPU s per s", [r["reel_cpu"] for r in plain], [r["reel_cpu"] for r in shown]),
        ("Xvfb CPU s per s", [r["xvfb_cpu"] for r in plain], [r["xvfb_cpu"] for r in shown]),
        ("reel+Xvfb CPU s per s", [r["reel_cpu"] + r["xvfb_cpu"] for r in plain], [r["reel_cpu"] + r["xvfb_cpu"] for r in shown]),
        ("peak RSS MiB", [r["peak_rss_mib"] for r in plain], [r["peak_rss_mib"] for r in shown]),
        ("frames in the file", [r["file_frames"] for r in plain], [r["file_frames"] for r in shown]),
        ("dropped frames", [r["dropped"] or 0 for r in plain], [r["dropped"] or 0 for r in shown]),
    ]
    print(f"**{args.size} test pattern @ 30 fps, {args.seconds} s × {args.repetitions} runs each, libx264 veryfast, "
          f"expected {expected} frames** (reel {args.reel})\n")
    print("| metric (mean (min–max)) | plain | --preview | preview/plain |")
    print("|---|---|---|---|")
    for name, a, b in rows:
        ratio = f"{statistics.mean(b) / statistics.mean(a):.2f}" if a and statistics.mean(a) > 0 else "-"
        print(f"| {name} | {mean_range(a)} | {mean_range(b)} | {ratio} |")
    print(f"| pictures shown | | {mean_range([r['shown'] or 0 for r in shown], 0)} | |")
    print(f"| pictures skipped (newer came) | | {mean_range([r['skipped'] or 0 for r in shown], 0)} | |")
    print(f"| capture → screen, mean ms | | {mean_range([1000 * (r['delay_mean'] or 0) for r in shown], 1)} | |")
    print(f"| capture → screen, max ms | | {mean_range([1000 * (r['delay_max'] or 0) for r in shown], 1)} | |")
    failed = [r for r in runs if r["status"] != 0 or r["file_frames"] != expected]
    for r in failed:
        print(f"\nrun failed or short: {r}", file=sys.stderr)
    out = BENCH / "out"
    out.mkdir(exist_ok=True)
    path = out / f"preview-{dt.datetime.now():%Y%m%d-%H%M%S}.json"
    path.write_text(json.dumps({"args": vars(args), "runs": runs}, indent=1))
    log(f"raw figures in {path}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
