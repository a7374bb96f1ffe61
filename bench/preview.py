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

The delay is also measured from outside, by the test pattern's burned-in counter: while the
preview runs, a small X11 client (speaking the protocol over the server's socket, so it costs
one GetImage of a single row) reads the window's counter strip about 3 times a second. A
picture with counter C was captured at the session's time zero (`clockOrigin` in the preview
event, CLOCK_MONOTONIC) plus C/30 s; the screenshot's time minus that is how late the window
shows it. It includes the time a picture stays up until the next (up to one frame), so it is
what a viewer sees: the target is at most 2 frames (66.7 ms).

Python 3 standard library only; needs Xvfb, xdotool and ffprobe.
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


class XRow:
    """A minimal X11 client: connects to display `:N` through its Unix socket (no auth, as
    the bench's own Xvfb has none) and reads one row of the root window with GetImage."""

    def __init__(self, display: str):
        import socket
        import struct
        self.struct = struct
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(f"/tmp/.X11-unix/X{display.lstrip(':')}")
        self.sock.sendall(struct.pack("<BxHHHHxx", ord("l"), 11, 0, 0, 0))
        head = self._read(8)
        if head[0] != 1:
            raise RuntimeError("the X server refused the connection")
        extra = self._read(struct.unpack("<H", head[6:8])[0] * 4)
        vendor_len, = struct.unpack("<H", extra[16:18])
        formats = extra[21]
        screen = 32 + (vendor_len + 3) // 4 * 4 + 8 * formats
        self.root, = struct.unpack("<I", extra[screen:screen + 4])

    def _read(self, n: int) -> bytes:
        data = b""
        while len(data) < n:
            chunk = self.sock.recv(n - len(data))
            if not chunk:
                raise RuntimeError("the X server closed the connection")
            data += chunk
        return data

    def row(self, x: int, y: int, width: int) -> list[int]:
        """The grey levels of `width` pixels from (x, y) of the screen (32-bit BGRX)."""
        st = self.struct
        self.sock.sendall(st.pack("<BBHIhhHHI", 73, 2, 5, self.root, x, y, width, 1, 0xFFFFFFFF))
        reply = self._read(32)
        if reply[0] != 1:
            raise RuntimeError(f"GetImage failed (error {reply[1]})")
        data = self._read(st.unpack("<I", reply[4:8])[0] * 4)
        return [(data[4 * i] + data[4 * i + 1] + data[4 * i + 2]) // 3 for i in range(width)]

    def close(self) -> None:
        self.sock.close()


def counter_in(row: list[int]) -> int | None:
    """The test pattern's frame counter in a row through its strip: 26 cells across the
    picture, a white start cell, 24 bits (most significant first), a black end cell."""
    cells = 26
    cell = len(row) / cells
    level = [row[int((c + 0.5) * cell)] for c in range(cells)]
    if level[0] < 128 or level[-1] > 128:
        return None
    value = 0
    for c in range(1, 25):
        value = value * 2 + (1 if level[c] > 128 else 0)
    return value


def watch_counter(display: str, title: str, until: float, samples: list) -> None:
    """Reads the preview window's counter ~3 times a second until `until` (monotonic):
    appends (time of the screenshot, counter)."""
    window = None
    while window is None and time.monotonic() < until:
        found = subprocess.run(["xdotool", "search", "--name", title], capture_output=True, text=True,
                               env=dict(os.environ, DISPLAY=display))
        ids = found.stdout.split()
        if ids:
            window = ids[0]
        else:
            time.sleep(0.2)
    if window is None:
        return
    time.sleep(2)  # the window takes the picture's size once the first picture comes
    shape = subprocess.run(["xdotool", "getwindowgeometry", "--shell", window], capture_output=True, text=True,
                           env=dict(os.environ, DISPLAY=display)).stdout
    g = dict(line.split("=", 1) for line in shape.split() if "=" in line)
    x, y, w, h = int(g["X"]), int(g["Y"]), int(g["WIDTH"]), int(g["HEIGHT"])
    # The picture fills the window's width (aspect kept, 16:9); the strip is its top tenth,
    # below the 32-pixel status bar drawn over it.
    picture_h = w * 9 // 16
    top = y + (h - picture_h) // 2
    strip = max(8, picture_h // 10)
    row_y = top + max(34, (strip * 3) // 4)
    client = XRow(display)
    try:
        while time.monotonic() < until:
            before = time.monotonic()
            row = client.row(x, row_y, w)
            after = time.monotonic()
            value = counter_in(row)
            if value is not None:
                samples.append(((before + after) / 2, value, after - before))
            time.sleep(0.3)
    finally:
        client.close()


def record(reel: str, display: str, xvfb: int, preview: bool, seconds: int, size: str, out: Path) -> dict:
    command = [reel, "record", "--test-pattern", "--size", size, "--fps", "30", "--preset", "veryfast",
               "--duration", str(seconds), "--json", "--overwrite", "-o", str(out)]
    if preview:
        command.append("--preview")
    env = dict(os.environ, DISPLAY=display)
    x_before = cpu_of(xvfb)
    start = time.monotonic()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    samples: list = []
    watcher = None
    if preview:
        import threading
        watcher = threading.Thread(target=watch_counter, args=(display, out.name, start + seconds - 1.0, samples), daemon=True)
        watcher.start()
    _, status, usage = os.wait4(process.pid, 0)
    if watcher:
        watcher.join(timeout=5)
    wall = time.monotonic() - start
    stdout = process.stdout.read()
    stderr = process.stderr.read()
    x_after = cpu_of(xvfb)
    events = [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]
    finished = next((e for e in events if e.get("event") == "finished"), {})
    shown = next((e for e in events if e.get("event") == "preview"), {})
    # How late the window showed each counter read from it, in ms.
    origin = shown.get("clockOrigin")
    seen = [1000 * (t - (origin + value / 30)) for t, value, _ in samples] if origin is not None else []
    probe = subprocess.run(["ffprobe", "-v", "error", "-select_streams", "v:0", "-count_packets", "-show_entries",
                            "stream=nb_read_packets", "-of", "csv=p=0", str(out)], capture_output=True, text=True)
    return {
        "preview": preview, "status": os.waitstatus_to_exitcode(status), "wall": wall, "seconds": seconds,
        "reel_cpu": (usage.ru_utime + usage.ru_stime) / seconds, "xvfb_cpu": (x_after - x_before) / seconds,
        "peak_rss_mib": usage.ru_maxrss / 1024, "frames": finished.get("frames"), "dropped": finished.get("dropped", finished.get("droppedFrames")),
        "file_frames": int(probe.stdout.strip() or 0), "shown": shown.get("shown"), "skipped": shown.get("skipped"),
        "delay_mean": shown.get("delayMean"), "delay_max": shown.get("delayMax"),
        "seen_delays_ms": seen, "screenshot_ms": [1000 * d for _, _, d in samples],
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
    seen = [d for r in shown for d in r["seen_delays_ms"]]
    if seen:
        seen.sort()
        print(f"| counter on screen, late by ms: mean (min–max), {len(seen)} screenshots | | "
              f"{statistics.mean(seen):.1f} ({seen[0]:.1f}–{seen[-1]:.1f}) | |")
        print(f"| counter on screen, late by frames: mean / 95th percentile / max | | "
              f"{statistics.mean(seen) / 33.33:.2f} / {seen[int(0.95 * (len(seen) - 1))] / 33.33:.2f} / {seen[-1] / 33.33:.2f} | |")
    else:
        print("| counter on screen | | not read (no screenshot found the counter) | |")
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
