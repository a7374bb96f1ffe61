#!/usr/bin/env python3
"""reel's picture-in-picture compositor against ffmpeg's overlay filter, side by side in one run.

Makes (once, cached in bench/out/pip/inputs/) two 1280x720 30 fps H.264 files with the ffmpeg
command line: a.mp4 (testsrc2) and b.mp4 (mandelbrot), each with a barcode of its own frame
number in its top rows. Then records, repetition after repetition with the order alternating,

  reel     reel record --camera=a.mp4 --camera=b.mp4 --size 1280x720 --fps 30 --codec h264 …
           --pip-corner bottom-right --pip-size 0.25 --duration N -o out.mp4
  ffmpeg   ffmpeg -re -stream_loop -1 -i a.mp4 -re -stream_loop -1 -i b.mp4 -filter_complex
           "[1:v]scale=320:180:flags=bilinear[s];[0:v][s]overlay=W-w-16:H-h-16" -c:v libx264 … -t N

both reading the files in real time (reel's file cameras play at the files' own pace, ffmpeg
with -re), composing b as a 320x180 inset 16 px from the bottom-right corner of a (bilinear,
yuv420p) and encoding with the same libx264 settings. Measures CPU seconds per recorded second
(wait4 for the whole life, /proc/PID/stat sampled for the steady middle and per thread), peak
RSS, frames and drops; checks each output by decoding it: frame count, size, every frame's
barcodes (which frame of a is the picture, which frame of b the inset), and one frame against
the inputs (where the inset is, that the main picture is a and the inset is b scaled). Prints
a table; raw figures go to bench/out/pip-DATE.json. See bench/README.md.

Python 3 standard library only; needs ffmpeg/ffprobe with libx264.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import re
import shutil
import signal
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
CLK_TCK = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")

W, H = 1280, 720
# The barcodes: 20 blocks of 64 px across the top rows; block 0 is white, block 1 black (a
# marker that says the code reads), blocks 2–19 the frame number, most significant bit first.
BLOCKS, BLOCK_W, BITS = 20, 64, 18
A_BAR_H = 16  # in a (the main picture), read from the composed picture's top rows
B_BAR_H = 48  # in b: 12 rows of the 320x180 inset, blocks 16 px wide


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def run(cmd: list[str], **kw) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def need(tool: str) -> str:
    path = shutil.which(tool)
    if not path:
        sys.exit(f"pip.py: '{tool}' is not installed")
    return path


def system_busy() -> float:
    """CPU seconds all CPUs have spent busy since boot (user, nice, system, irq, softirq)."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]] + [0] * 8
    return (v[0] + v[1] + v[2] + v[5] + v[6]) / CLK_TCK


def proc_stat(path: str) -> tuple[str, float, int]:
    """(name, user + system CPU seconds, RSS bytes) of a process or thread from its stat file."""
    with open(path) as f:
        text = f.read()
    name = text[text.index("(") + 1: text.rindex(")")]
    fields = text.rsplit(")", 1)[1].split()
    return name, (int(fields[11]) + int(fields[12])) / CLK_TCK, int(fields[21]) * PAGE


def builds_running() -> list[str]:
    """Names of compilers, builds and fuzzers running now (other people's work on this machine)."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/comm") as f:
                comm = f.read().strip()
        except OSError:
            continue
        if comm.startswith(("swift-build", "swift-frontend", "swiftc", "clang", "cc1", "ld", "xctest")) \
                or "fuzz" in comm.lower() or comm.endswith(".xctest"):
            found.append(comm)
    return sorted(set(found))


def wait_quiet(limit: float, timeout: float, poll: float = 1, say_every: float = 10) -> float:
    """Waits until the machine's other work uses less than `limit` CPUs (over one second) or
    `timeout` seconds have passed; returns the load last seen."""
    deadline = time.monotonic() + timeout
    said = 0.0
    while True:
        before, t0 = system_busy(), time.monotonic()
        time.sleep(1)
        load = (system_busy() - before) / (time.monotonic() - t0)
        if load < limit or time.monotonic() > deadline:
            return load
        if time.monotonic() - said >= say_every:
            log(f"  waiting for quiet: other processes use {load:.2f} CPUs")
            said = time.monotonic()
        time.sleep(max(0.0, poll - 1))


def wait_for_machine(limit: float, timeout: float) -> dict:
    """Before the first run: waits (polling every 30 s) until no build or fuzzer runs and the
    machine is quiet over 5 s, or `timeout` passes. Says how it went."""
    start = time.monotonic()
    while True:
        before, t0 = system_busy(), time.monotonic()
        time.sleep(5)
        load = (system_busy() - before) / (time.monotonic() - t0)
        builds = builds_running()
        waited = time.monotonic() - start
        if (load < limit and not builds) or waited > timeout:
            return {"waited_s": round(waited), "load": load, "builds": builds, "quiet": load < limit and not builds,
                    "loadavg": open("/proc/loadavg").read().strip()}
        log(f"machine busy: {load:.2f} CPUs, loadavg {open('/proc/loadavg').read().split()[0]}"
            + (f", running {' '.join(builds)}" if builds else "") + f"; waiting ({waited / 60:.0f} of {timeout / 60:.0f} min)")
        time.sleep(25)


def machine_info(reel: Path) -> dict:
    cpu = "?"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    with open("/proc/meminfo") as f:
        mem_kib = next((int(line.split()[1]) for line in f if line.startswith("MemTotal:")), 0)
    commit = run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"]).stdout.strip()
    dirty = run(["git", "-C", str(ROOT), "status", "--porcelain", "--", "Sources", "Package.swift"]).stdout.strip()
    return {
        "date": dt.datetime.now().astimezone().isoformat(timespec="seconds"),
        "nproc": os.cpu_count(),
        "cpu_model": cpu,
        "memory_gib": round(mem_kib / 1024 / 1024, 1),
        "kernel": os.uname().release,
        "platform": platform.platform(),
        "ffmpeg": run(["ffmpeg", "-hide_banner", "-version"]).stdout.splitlines()[0],
        "reel_binary": str(reel),
        "reel_binary_built": dt.datetime.fromtimestamp(reel.stat().st_mtime).astimezone().isoformat(timespec="seconds")
        if reel.exists() else None,
        "head_at_run": commit + ("+uncommitted changes in Sources/" if dirty else ""),
    }


def build_head(folder: Path) -> tuple[Path, str]:
    """Builds reel (release) from the committed HEAD in `folder`; returns the binary and the commit."""
    head = run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"]).stdout.strip()
    src = folder / "src"
    if src.exists():
        shutil.rmtree(src)
    src.mkdir(parents=True)
    log(f"building reel {head} (release) in {folder}")
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", "--format=tar", "HEAD"], capture_output=True)
    if archive.returncode != 0:
        sys.exit(f"pip.py: git archive failed: {archive.stderr.decode()}")
    subprocess.run(["tar", "-x", "-C", str(src)], input=archive.stdout, check=True)
    r = run(["swift", "build", "-c", "release", "--product", "reel", "--package-path", str(src),
             "--scratch-path", str(folder)])
    if r.returncode != 0:
        sys.exit(f"pip.py: swift build failed:\n{r.stdout[-3000:]}{r.stderr[-3000:]}")
    return (folder / "release" / "reel").resolve(), f"{head} (committed HEAD)"


# ----------------------------------------------------------------------------------------------
# the inputs


def barcode_expr() -> str:
    """geq luma expression: the frame number N as the barcode described above."""
    blk = f"floor(X/{BLOCK_W})"
    return (f"if(eq({blk},0),235,if(eq({blk},1),16,"
            f"if(mod(floor(N/pow(2,{BLOCKS - 1}-{blk})),2),235,16)))")


INPUTS = {
    "a": ("testsrc2=size=1280x720:rate=30", A_BAR_H),
    "b": ("mandelbrot=size=1280x720:rate=30", B_BAR_H),
}


def probe_input(path: Path) -> dict:
    r = run(["ffprobe", "-v", "error", "-count_packets", "-select_streams", "v:0", "-show_entries",
             "stream=codec_name,width,height,pix_fmt,r_frame_rate,nb_read_packets", "-of", "json", str(path)])
    if r.returncode != 0:
        return {}
    s = json.loads(r.stdout).get("streams", [{}])
    return s[0] if s else {}


def make_inputs(folder: Path, seconds: int) -> dict[str, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    paths = {}
    for name, (source, bar_h) in INPUTS.items():
        path = folder / f"{name}.mp4"
        paths[name] = path
        p = probe_input(path)
        if p.get("nb_read_packets") == str(seconds * 30) and p.get("width") == W and p.get("pix_fmt") == "yuv420p":
            continue
        log(f"making {path} ({source}, {seconds} s, barcode in the top {bar_h} rows)")
        cmd = ["ffmpeg", "-nostdin", "-v", "error", "-y", "-f", "lavfi", "-i", source,
               "-f", "lavfi", "-i", f"color=c=black:size={W}x{bar_h}:rate=30,format=gray,geq=lum='{barcode_expr()}'",
               "-filter_complex", "[0:v]format=yuv420p[m];[m][1:v]overlay=0:0:shortest=1,format=yuv420p",
               "-t", str(seconds), "-c:v", "libx264", "-preset", "medium", "-crf", "20", "-g", "60",
               "-colorspace", "bt709", "-color_primaries", "bt709", "-color_trc", "bt709", "-color_range", "tv",
               str(path)]
        r = run(cmd)
        p = probe_input(path)
        if r.returncode != 0 or p.get("nb_read_packets") != str(seconds * 30):
            sys.exit(f"pip.py: could not make {path}: {r.stderr.strip()} {p}")
    return paths


# ----------------------------------------------------------------------------------------------
# the recorders


def inset_rect(args) -> tuple[int, int, int, int]:
    """Where both recorders put the inset: x, y, width, height (even numbers)."""
    w = int(round(W * args.pip_size)) & ~1
    h = int(round(w * H / W)) & ~1
    return W - args.margin - w, H - args.margin - h, w, h


def recorder_command(name: str, reel: Path, inputs: dict[str, Path], args, output: Path) -> list[str]:
    n = str(args.duration)
    if name == "reel":
        return [str(reel), "record", f"--camera={inputs['a']}", f"--camera={inputs['b']}", "--size", f"{W}x{H}",
                "--fps", "30", "--codec", "h264", "--preset", args.preset, "--crf", str(args.crf),
                "--keyframe-interval", str(args.gop), "--pip-corner", "bottom-right", "--pip-size", str(args.pip_size),
                "--duration", n, "--json", "-o", str(output)]
    if name == "ffmpeg":
        x, y, w, h = inset_rect(args)
        return ["ffmpeg", "-nostdin", "-hide_banner", "-loglevel", "error", "-y",
                "-re", "-stream_loop", "-1", "-i", str(inputs["a"]),
                "-re", "-stream_loop", "-1", "-i", str(inputs["b"]),
                "-filter_complex", f"[1:v]scale={w}:{h}:flags=bilinear[s];[0:v][s]overlay=W-w-{args.margin}:H-h-{args.margin}",
                "-c:v", "libx264", "-preset", args.preset, "-crf", str(args.crf), "-g", str(args.gop),
                "-pix_fmt", "yuv420p",
                "-colorspace", "bt709", "-color_primaries", "bt709", "-color_trc", "bt709", "-color_range", "tv",
                "-an", "-t", n, "-movflags", "+faststart", "-progress", "pipe:1", "-nostats", str(output)]
    raise ValueError(name)


class LineReader(threading.Thread):
    """Collects a pipe's lines with the monotonic time each arrived."""

    def __init__(self, stream):
        super().__init__(daemon=True)
        self.stream = stream
        self.lines: list[tuple[int, str]] = []

    def run(self):
        for raw in iter(self.stream.readline, b""):
            self.lines.append((time.monotonic_ns(), raw.decode(errors="replace").rstrip("\n")))


class Sampler(threading.Thread):
    """Samples a process's CPU time and RSS, and each of its threads' CPU time, from /proc every
    `period` seconds while it runs."""

    def __init__(self, pid: int, period: float = 0.25):
        super().__init__(daemon=True)
        self.pid, self.period = pid, period
        self.samples: list[tuple[float, float, int]] = []  # (monotonic s, CPU s, RSS bytes)
        self.threads: dict[str, tuple[str, float]] = {}  # tid → (name, CPU s at its last sample)
        self.done = threading.Event()

    def run(self):
        while not self.done.is_set():
            try:
                _, cpu, rss = proc_stat(f"/proc/{self.pid}/stat")
                now = time.monotonic()
                for tid in os.listdir(f"/proc/{self.pid}/task"):
                    try:
                        name, tcpu, _ = proc_stat(f"/proc/{self.pid}/task/{tid}/stat")
                        self.threads[tid] = (name, tcpu)
                    except (OSError, ValueError):
                        pass
                self.samples.append((now, cpu, rss))
            except (OSError, ValueError):
                pass
            self.done.wait(self.period)

    def between(self, t0: float, t1: float) -> float | None:
        """CPU seconds per second between the samples nearest to t0 and t1 (monotonic s)."""
        inside = [s for s in self.samples if t0 <= s[0] <= t1]
        if len(inside) < 2 or inside[-1][0] - inside[0][0] < 1:
            return None
        return (inside[-1][1] - inside[0][1]) / (inside[-1][0] - inside[0][0])

    def by_thread(self) -> dict[str, float]:
        """CPU seconds of each thread ("name:tid"), at its last sample."""
        out = {f"{name}:{tid}": cpu for tid, (name, cpu) in self.threads.items()}
        return dict(sorted(out.items(), key=lambda kv: -kv[1]))


def parse_progress(name: str, lines: list[tuple[int, str]], launch: int) -> dict:
    """What the recorder itself said: frames and drops."""
    reported: dict = {}
    if name == "reel":
        for t, line in lines:
            try:
                event = json.loads(line)
            except ValueError:
                continue
            kind = event.get("event")
            if kind == "started" and "started_s" not in reported:
                reported["started_s"] = (t - launch) / 1e9
            if kind in ("progress", "finished"):
                reported["frames"] = event.get("frames")
                reported["dropped"] = event.get("dropped")
            if kind == "failed":
                reported["failed"] = event.get("message")
            if kind not in ("started", "progress", "finished", "clipStarted"):
                reported.setdefault("other_events", []).append(event)
    else:
        block: dict = {}
        for t, line in lines:
            if "=" not in line:
                continue
            key, value = line.split("=", 1)
            block[key.strip()] = value.strip()
            if key == "progress":
                reported["frames"] = int(block.get("frame", 0))
                reported["dup"] = int(block.get("dup_frames", 0))
                reported["drop"] = int(block.get("drop_frames", 0))
                reported["dropped"] = reported["dup"] + reported["drop"]
    return reported


# ----------------------------------------------------------------------------------------------
# checking an output


def x264_options(path: Path) -> str | None:
    """The options string x264 writes into its SEI."""
    try:
        data = path.read_bytes()[:4_000_000]
    except OSError:
        return None
    i = data.find(b"x264 - core")
    if i < 0:
        return None
    j = data.find(b"\x00", i)
    text = data[i:j if j > 0 else i + 2000].decode(errors="replace")
    m = re.search(r"options: (.*)", text)
    return m.group(1).strip() if m else text


def read_codes(strip: bytes, width: int, height: int, block_w: int, frames: int) -> list[int | None]:
    """The frame number in each frame's barcode strip (`width` x `height` grey; None when it
    does not read)."""
    out: list[int | None] = []
    size = width * height
    half = max(1, block_w // 4)
    for k in range(frames):
        row = k * size + (height // 2) * width
        bits = []
        for b in range(BLOCKS):
            x = b * block_w + block_w // 2
            level = sum(strip[row + x - half: row + x + half]) / (2 * half)
            bits.append(1 if level >= 128 else 0)
        if bits[0] != 1 or bits[1] != 0:
            out.append(None)
            continue
        value = 0
        for bit in bits[2:]:
            value = value << 1 | bit
        out.append(value)
    return out


def decode_strip(path: Path, crop: str, extra: list[str] | None = None) -> tuple[bytes, str, int]:
    r = subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-i", str(path), "-map", "0:v:0",
                        "-vf", f"{crop},format=gray", "-fps_mode", "passthrough", *(extra or []), "-f", "rawvideo", "-"],
                       capture_output=True)
    return r.stdout, r.stderr.decode(errors="replace").strip(), r.returncode


def decode_frame(path: Path, index: int, vf: str = "") -> bytes:
    """Frame `index` of a file (counting decoded frames from 0) as grey bytes."""
    chain = f"select=eq(n\\,{index}),{vf + ',' if vf else ''}format=gray"
    r = subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-i", str(path), "-map", "0:v:0", "-vf", chain,
                        "-frames:v", "1", "-fps_mode", "passthrough", "-f", "rawvideo", "-"], capture_output=True)
    return r.stdout


def mad(a: bytes, a_w: int, b: bytes, b_w: int, rect: tuple[int, int, int, int], b_origin=(0, 0), step: int = 1,
        exclude: tuple[int, int, int, int] | None = None) -> float:
    """Mean absolute difference of the grey pixels of `rect` in a and (shifted by b_origin) in b."""
    x0, y0, w, h = rect
    total = count = 0
    for y in range(y0, y0 + h, step):
        ra = y * a_w
        rb = (y - b_origin[1]) * b_w - b_origin[0]
        for x in range(x0, x0 + w, step):
            if exclude and exclude[0] <= x < exclude[0] + exclude[2] and exclude[1] <= y < exclude[1] + exclude[3]:
                continue
            total += abs(a[ra + x] - b[rb + x])
            count += 1
    return total / count if count else float("nan")


def find_inset(out: bytes, main: bytes, small: bytes, expected: tuple[int, int, int, int], search: int = 8
               ) -> tuple[tuple[int, int, int, int], float]:
    """Where the inset is: the position, within `search` px of the expected one, at which the
    main picture with the scaled b pasted in matches the composed picture best (the mean
    absolute difference over the inset and a `search` px frame around it). Returns the
    rectangle and that difference."""
    x0, y0, w, h = expected
    rx0, ry0 = max(0, x0 - 2 * search), max(0, y0 - 2 * search)
    rx1, ry1 = min(W, x0 + w + 2 * search), min(H, y0 + h + 2 * search)
    best = None
    for dy in range(-search, search + 1, 2):
        for dx in range(-search, search + 1, 2):
            x, y = x0 + dx, y0 + dy
            total = count = 0
            for py in range(ry0, ry1, 2):
                row = py * W
                inside_y = y <= py < y + h
                srow = (py - y) * w - x
                for px in range(rx0, rx1, 2):
                    model = small[srow + px] if inside_y and x <= px < x + w else main[row + px]
                    total += abs(out[row + px] - model)
                    count += 1
            score = total / count
            if best is None or score < best[1]:
                best = ((x, y, w, h), score)
    return best


def verify(path: Path, inputs: dict[str, Path], args, input_frames: int) -> dict:
    """Checks the file (one H.264 yuv420p 1280x720 stream of about N s), decodes all of it,
    reads each frame's barcodes and compares one frame with the inputs."""
    v: dict = {"ok": False, "problems": []}
    if not path.exists() or path.stat().st_size == 0:
        v["problems"].append("no output file")
        return v
    v["bytes"] = path.stat().st_size
    r = run(["ffprobe", "-v", "error", "-count_packets", "-show_entries",
             "stream=codec_type,codec_name,width,height,pix_fmt,r_frame_rate,nb_read_packets,color_range,color_space"
             ":format=duration", "-of", "json", str(path)])
    if r.returncode != 0:
        v["problems"].append(f"ffprobe failed: {r.stderr.strip()[:300]}")
        return v
    info = json.loads(r.stdout)
    streams = info.get("streams", [])
    video = [s for s in streams if s.get("codec_type") == "video"]
    if len(video) != 1 or len(streams) != 1:
        v["problems"].append(f"expected exactly one video stream, found {[s.get('codec_type') for s in streams]}")
        if not video:
            return v
    s = video[0]
    v.update({"codec": s.get("codec_name"), "pix_fmt": s.get("pix_fmt"), "size": f"{s.get('width')}x{s.get('height')}",
              "color": f"{s.get('color_space', '?')}/{s.get('color_range', '?')}",
              "packets": int(s.get("nb_read_packets", 0)),
              "duration_s": float(info.get("format", {}).get("duration", 0) or 0)})
    if v["codec"] != "h264" or v["pix_fmt"] != "yuv420p" or v["size"] != f"{W}x{H}":
        v["problems"].append(f"stream is {v['codec']} {v['pix_fmt']} {v['size']}")
    if abs(v["duration_s"] - args.duration) > 0.25:
        v["problems"].append(f"duration {v['duration_s']:.3f} s, asked for {args.duration}")
    expected = args.duration * 30
    if abs(v["packets"] - expected) > 3:
        v["problems"].append(f"{v['packets']} frames, expected {expected}")

    r = run(["ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries", "packet=pts_time",
             "-of", "csv=p=0", str(path)])
    pts = sorted(float(x) for x in r.stdout.split() if x.strip())
    v["timeline_missing_slots"] = sum(max(0, round((b - a) * 30) - 1) for a, b in zip(pts, pts[1:]))

    # Every frame: the main picture's barcode (top rows) and the inset's (its top rows).
    strip, errors, code = decode_strip(path, f"crop={W}:{A_BAR_H}:0:0")
    decoded = len(strip) // (W * A_BAR_H)
    v["decoded_frames"] = decoded
    if code != 0 or errors:
        v["problems"].append(f"decoding reported: {errors[:300] or code}")
    if decoded != v["packets"]:
        v["problems"].append(f"{decoded} frames decode from {v['packets']} packets")
    a_codes = [c if c is not None and c < input_frames else None
               for c in read_codes(strip, W, A_BAR_H, BLOCK_W, decoded)]
    x, y, w, h = inset_rect(args)
    scale = w / W
    b_rows = int(B_BAR_H * scale)
    strip, _, _ = decode_strip(path, f"crop={w}:{b_rows}:{x}:{y}")
    b_codes = [c if c is not None and c < input_frames else None
               for c in read_codes(strip, w, b_rows, int(BLOCK_W * scale), len(strip) // (w * b_rows))]
    v["codes"] = {"a": a_codes, "b": b_codes}
    v["content"] = content(a_codes, b_codes, input_frames)

    # One frame in the middle against the inputs: where the inset is, what is in it.
    k = decoded // 2
    a_index = a_codes[k] if k < len(a_codes) else None
    b_index = b_codes[k] if k < len(b_codes) else None
    if a_index is None or b_index is None:
        v["problems"].append(f"frame {k}: barcodes do not read ({a_index}, {b_index})")
    else:
        out = decode_frame(path, k)
        main = decode_frame(inputs["a"], a_index)
        small = decode_frame(inputs["b"], b_index, f"scale={w}:{h}:flags=bilinear")
        if len(out) != W * H or len(main) != W * H or len(small) != w * h:
            v["problems"].append("could not decode the frames to compare")
        else:
            found, fit = find_inset(out, main, small, (x, y, w, h))
            v["inset_found"] = found
            v["inset_fit_mad"] = fit
            v["inset_expected"] = (x, y, w, h)
            v["frame_checked"] = {"output": k, "a": a_index, "b": b_index}
            v["main_mad"] = mad(out, W, main, W, (0, 0, W, H), step=2, exclude=(x, y, w, h))
            v["inset_vs_b_mad"] = mad(out, W, small, w, (x, y + b_rows, w, h - b_rows), b_origin=(x, y))
            v["inset_vs_a_mad"] = mad(out, W, main, W, (x, y, w, h))
            if found != (x, y, w, h):
                v["problems"].append(f"inset found at {found}, expected {(x, y, w, h)}")
            if v["main_mad"] > 6:
                v["problems"].append(f"main picture differs from a (mean |Δ| {v['main_mad']:.1f})")
            if v["inset_vs_b_mad"] > 8:
                v["problems"].append(f"inset differs from b scaled (mean |Δ| {v['inset_vs_b_mad']:.1f})")
            if v["inset_vs_a_mad"] < 20:
                v["problems"].append(f"inset hardly differs from the main picture (mean |Δ| {v['inset_vs_a_mad']:.1f})")
    v["x264_options"] = x264_options(path)
    v["ok"] = not v["problems"]
    return v


def content(a_codes: list[int | None], b_codes: list[int | None], period: int) -> dict:
    """From each composed frame's barcodes: how many distinct frames of a (the main picture)
    and of b (the inset) were recorded, repeated or skipped, and b's frame against a's."""
    c: dict = {}
    a_codes = [x if x is not None and x < period else None for x in a_codes]
    b_codes = [x if x is not None and x < period else None for x in b_codes]
    for key, codes in (("a", a_codes), ("b", b_codes)):
        valid = [x for x in codes if x is not None]
        c[f"{key}_unreadable"] = len(codes) - len(valid)
        if not valid:
            continue
        c[f"{key}_fresh"] = len(set(valid))
        c[f"{key}_repeats"] = sum(1 for p, q in zip(codes, codes[1:]) if p is not None and p == q)
        # Frames of the input passed over between two recorded ones (the file loops every
        # `period` frames).
        c[f"{key}_skipped"] = sum(((q - p) % period) - 1 for p, q in zip(valid, valid[1:]) if q != p)
        c[f"{key}_first"] = valid[0]
    lags = [((b - a + period // 2) % period) - period // 2 for a, b in zip(a_codes, b_codes)
            if a is not None and b is not None]
    if lags:
        c["b_minus_a"] = {"median": statistics.median(lags), "min": min(lags), "max": max(lags),
                          "same": lags.count(0), "one_behind": lags.count(-1),
                          "other": len(lags) - lags.count(0) - lags.count(-1)}
    return c


# ----------------------------------------------------------------------------------------------
# one recording


def record_once(name: str, rep: int, reel: Path, inputs: dict[str, Path], args, input_frames: int, out: Path) -> dict:
    output = out / "runs" / f"{name}-{rep}.mp4"
    output.parent.mkdir(parents=True, exist_ok=True)
    output.unlink(missing_ok=True)
    cmd = recorder_command(name, reel, inputs, args, output)
    quiet = wait_quiet(args.quiet_threshold, args.quiet_wait)

    busy0 = system_busy()
    launch = time.monotonic_ns()
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    sampler = Sampler(proc.pid)
    sampler.start()
    out_reader, err_reader = LineReader(proc.stdout), LineReader(proc.stderr)
    out_reader.start()
    err_reader.start()

    def kill():
        try:
            os.kill(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    timer = threading.Timer(args.duration + args.timeout, kill)
    timer.start()
    _, status, usage = os.wait4(proc.pid, 0)
    end = time.monotonic_ns()
    timer.cancel()
    sampler.done.set()
    sampler.join(2)
    proc.returncode = os.waitstatus_to_exitcode(status)
    busy1 = system_busy()
    out_reader.join(5)
    err_reader.join(5)

    n = args.duration
    wall = (end - launch) / 1e9
    cpu = usage.ru_utime + usage.ru_stime
    t0 = launch / 1e9
    result = {
        "recorder": name, "rep": rep, "command": cmd, "exit_code": proc.returncode,
        "wall_s": wall, "overhead_s": wall - n,
        "cpu_s": cpu, "user_s": usage.ru_utime, "sys_s": usage.ru_stime,
        "cpu_per_s": cpu / n,
        # The steady middle: from 2 s after launch to 1 s before the end (no start-up, no
        # finalising), from /proc/PID/stat.
        "steady_cpu_per_s": sampler.between(t0 + 2, t0 + n - 1),
        "other_cpu_s": (busy1 - busy0) - cpu,
        "other_cpu_before_per_s": quiet,
        "peak_rss_mib": usage.ru_maxrss / 1024,
        "voluntary_switches": usage.ru_nvcsw, "involuntary_switches": usage.ru_nivcsw,
        "threads_cpu_s": sampler.by_thread(),
        "stderr": "\n".join(l for _, l in err_reader.lines)[-2000:],
    }
    result["reported"] = parse_progress(name, out_reader.lines, launch)
    v = verify(output, inputs, args, input_frames)
    if proc.returncode != 0:
        v["problems"].insert(0, f"exit code {proc.returncode}")
        v["ok"] = False
    result["verify"] = v
    if not args.keep and v["ok"]:
        output.unlink(missing_ok=True)
    return result


# ----------------------------------------------------------------------------------------------
# the table


def cell(runs, key, digits=3):
    xs = [key(r) for r in runs]
    xs = [x for x in xs if x is not None]
    if not xs:
        return "—"
    m, lo, hi = statistics.fmean(xs), min(xs), max(xs)
    if len(xs) == 1 or lo == hi:
        return f"{m:.{digits}f}"
    return f"{m:.{digits}f} ({lo:.{digits}f}–{hi:.{digits}f})"


def content_key(field):
    return lambda r: r["verify"].get("content", {}).get(field)


METRICS = [
    # label, key, digits, ratio?
    ("CPU s per s (whole life)", lambda r: r["cpu_per_s"], 3, True),
    ("  user", lambda r: r["user_s"] / r["cpu_s"] * r["cpu_per_s"], 3, False),
    ("  system", lambda r: r["sys_s"] / r["cpu_s"] * r["cpu_per_s"], 3, False),
    ("CPU s per s (steady, 2 s … N−1 s)", lambda r: r["steady_cpu_per_s"], 3, True),
    ("other processes CPU s per s", lambda r: r["other_cpu_s"] / r["wall_s"], 3, False),
    ("peak RSS MiB", lambda r: r["peak_rss_mib"], 0, True),
    ("frames in file", lambda r: r["verify"].get("packets"), 0, False),
    ("drops the recorder reported", lambda r: r["reported"].get("dropped"), 0, False),
    ("missing timestamp slots", lambda r: r["verify"].get("timeline_missing_slots"), 0, False),
    ("main picture: distinct frames of a", content_key("a_fresh"), 0, False),
    ("  repeated / skipped frames of a", lambda r: _pair(r, "a"), 0, False),
    ("  first frame of a in the file", content_key("a_first"), 0, False),
    ("inset: distinct frames of b", content_key("b_fresh"), 0, False),
    ("  repeated / skipped frames of b", lambda r: _pair(r, "b"), 0, False),
    ("  frames with no inset of b (code unreadable)", content_key("b_unreadable"), 0, False),
    ("  inset's b frame = a's frame", lambda r: _lag(r, "same"), 0, False),
    ("  inset's b frame = a's frame − 1", lambda r: _lag(r, "one_behind"), 0, False),
    ("  inset's b frame, other offsets", lambda r: _lag(r, "other"), 0, False),
    ("inset found at (x, y, w, h) (one frame)", None, 0, False),
    ("mean abs. luma Δ: main vs a / inset vs b / fit", None, 1, False),
    ("wall − N (start+finish) s", lambda r: r["overhead_s"], 2, False),
    ("file MB", lambda r: r["verify"].get("bytes", 0) / 1e6, 2, False),
    ("output checks", None, 0, False),
    ("disturbed runs (others > --disturbed)", None, 0, False),
]


def _lag(r, field):
    return r["verify"].get("content", {}).get("b_minus_a", {}).get(field)


def _pair(r, key):
    c = r["verify"].get("content", {})
    rep, skip = c.get(f"{key}_repeats"), c.get(f"{key}_skipped")
    return None if rep is None else rep + (skip or 0)


def special(label: str, runs: list[dict]) -> str:
    if label.startswith("output checks"):
        bad = sum(not r["verify"]["ok"] for r in runs)
        return "ok" if runs and not bad else f"{bad} BAD"
    if label.startswith("disturbed"):
        return str(sum(r.get("disturbed", False) for r in runs))
    if label.startswith("inset found"):
        found = {tuple(r["verify"]["inset_found"]) for r in runs if r["verify"].get("inset_found")}
        return ", ".join("(" + ", ".join(map(str, f)) + ")" for f in sorted(found)) or "—"
    if label.startswith("mean abs."):
        vals = [[r["verify"].get(k) for r in runs if r["verify"].get(k) is not None]
                for k in ("main_mad", "inset_vs_b_mad", "inset_fit_mad")]
        return " / ".join(f"{statistics.fmean(x):.1f}" for x in vals) if all(vals) else "—"
    return "—"


def repeated_skipped(runs: list[dict], key: str) -> str:
    rs = [r["verify"].get("content", {}) for r in runs]
    reps = [c.get(f"{key}_repeats") for c in rs if c.get(f"{key}_repeats") is not None]
    skips = [c.get(f"{key}_skipped") for c in rs if c.get(f"{key}_skipped") is not None]
    if not reps:
        return "—"
    def part(xs):
        return f"{statistics.fmean(xs):.1f}" + (f" ({min(xs)}–{max(xs)})" if min(xs) != max(xs) else "")
    return f"{part(reps)} / {part(skips)}"


def header(machine: dict) -> str:
    return (f"reel pip vs ffmpeg overlay — {machine['date']}, {machine['nproc']} CPUs ({machine['cpu_model']}), "
            f"{machine['ffmpeg'].split(' Copyright')[0]}, reel binary {machine['reel_binary']} built "
            f"{machine.get('reel_binary_built')}"
            + (f" from {machine['built_from']}" if machine.get("built_from") else "")
            + f", HEAD {machine.get('head_at_run')}")


def table(results: list[dict], args, recorders: list[str]) -> str:
    runs = {name: [r for r in results if r["recorder"] == name] for name in recorders}
    x, y, w, h = inset_rect(args)
    lines = [f"picture-in-picture: a.mp4 1280x720 + b.mp4 as a {w}x{h} inset at ({x}, {y}), 30 fps, {args.duration} s × "
             f"{len(runs.get(recorders[0], []))} runs, libx264 {args.preset} crf {args.crf} keyint {args.gop}, "
             f"expected {args.duration * 30} frames", ""]
    both = "reel" in recorders and "ffmpeg" in recorders
    head = ["metric (mean (min–max))"] + recorders + (["reel/ffmpeg (pairs)"] if both else [])
    rows = [head]
    for label, key, digits, ratio in METRICS:
        if key is None:
            row = [label] + [special(label, runs[n]) for n in recorders]
        elif label.strip().startswith("repeated / skipped"):
            row = [label] + [repeated_skipped(runs[n], "a" if "of a" in label else "b") for n in recorders]
        else:
            row = [label] + [cell(runs[n], key, digits) for n in recorders]
        if both:
            text = ""
            if ratio and key is not None:
                ma = [key(r) for r in runs["reel"] if key(r) is not None]
                mf = [key(r) for r in runs["ffmpeg"] if key(r) is not None]
                pairs = [key(ra) / key(rf) for ra in runs["reel"] for rf in runs["ffmpeg"]
                         if ra["rep"] == rf["rep"] and key(ra) is not None and key(rf)]
                if ma and mf:
                    text = f"{statistics.fmean(ma) / statistics.fmean(mf):.2f}"
                    if len(pairs) > 1:
                        text += f" ({min(pairs):.2f}–{max(pairs):.2f})"
            row.append(text)
        rows.append(row)
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    for k, r in enumerate(rows):
        lines.append("| " + " | ".join(c.ljust(widths[i]) for i, c in enumerate(r)) + " |")
        if k == 0:
            lines.append("|" + "|".join("-" * (wd + 2) for wd in widths) + "|")
    # Where each recorder's CPU went, by thread (CPU s per recorded s, the busiest threads of
    # each run, busiest first, averaged rank by rank over the runs).
    lines += ["", "CPU s per recorded s of the busiest threads, rank by rank (mean over the runs; "
              "/proc/PID/task/*/stat, last sample before exit):", ""]
    for n in recorders:
        ranked = [sorted(((c, t) for t, c in r.get("threads_cpu_s", {}).items()), reverse=True) for r in runs[n]]
        if not ranked:
            continue
        depth = min(len(x) for x in ranked)
        shown, names = [], set()
        for i in range(depth):
            c = statistics.fmean(x[i][0] for x in ranked) / args.duration
            if c < 0.005:
                break
            name = ranked[0][i][1].rsplit(":", 1)[0]
            names.add(name)
            shown.append((name, c))
        threads = statistics.fmean(len(x) for x in ranked)
        # Threads that all carry the process's name (ffmpeg's, and reel's, whose threads keep
        # the name of the libdispatch thread that made them) are listed by CPU alone.
        text = ", ".join(f"{c:.3f}" if len(names) == 1 else f"{name} {c:.3f}" for name, c in shown)
        lines.append(f"- {n} ({threads:.0f} threads" + (f", all named `{names.pop()}`" if len(names) == 1 else "")
                     + f"): {text}")
    return "\n".join(lines)


# ----------------------------------------------------------------------------------------------


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--reel", default=None,
                   help="the reel binary (default: $REEL, else /tmp/bench-build/release/reel; build it with "
                        "`swift build -c release --scratch-path /tmp/bench-build --product reel`)")
    p.add_argument("-n", "--duration", type=int, default=20, help="seconds recorded per run (default 20)")
    p.add_argument("-r", "--reps", type=int, default=5, help="pairs of runs, the order alternating (default 5)")
    p.add_argument("--recorders", default="reel,ffmpeg", help="reel, ffmpeg (default both)")
    p.add_argument("--input-seconds", type=int, default=64, help="length of the input files (default 64)")
    p.add_argument("--preset", default="veryfast")
    p.add_argument("--crf", type=int, default=23)
    p.add_argument("--gop", type=int, default=60, help="keyframe interval in frames (default 60)")
    p.add_argument("--pip-size", type=float, default=0.25, help="the inset's width as a fraction (default 0.25)")
    p.add_argument("--margin", type=int, default=16, help="the inset's margin in px (reel's fixed 16)")
    p.add_argument("--quiet-threshold", type=float, default=0.15,
                   help="before each run, wait until other processes use less than this many CPUs (default 0.15)")
    p.add_argument("--quiet-wait", type=float, default=600, help="but wait at most this long (default 600 s)")
    p.add_argument("--initial-wait", type=float, default=1500,
                   help="before the first run, wait (polling every 30 s) at most this long for builds and fuzzers "
                        "to finish and the machine to be quiet (default 1500 s)")
    p.add_argument("--disturbed", type=float, default=0.2,
                   help="a run during which other processes used more than this many CPUs on average is "
                        "disturbed and done again (default 0.2)")
    p.add_argument("--retries", type=int, default=2, help="how often a disturbed run is done again (default 2)")
    p.add_argument("--timeout", type=float, default=60, help="kill a recorder this long after N (default 60 s)")
    p.add_argument("--keep", action="store_true", help="keep the recorded files in bench/out/pip/runs/")
    p.add_argument("--out", default=str(BENCH / "out"), help="where the JSON goes (default bench/out)")
    p.add_argument("--build", metavar="DIR", nargs="?", const="/tmp/bench-build", default=None,
                   help="first build reel (release) from the committed HEAD, exported with `git archive` into "
                        "DIR/src and built with --scratch-path DIR (default /tmp/bench-build), and use that: the "
                        "figures then belong to a commit, whatever is being edited in the working tree")
    p.add_argument("--from", dest="from_json", metavar="JSON", help="print the table of an earlier run's JSON and stop")
    args = p.parse_args()
    if args.from_json:
        doc = json.loads(Path(args.from_json).read_text())
        saved = argparse.Namespace(**doc["arguments"])
        print(header(doc["machine"]))
        print(table(doc["runs"], saved, saved.recorders))
        return 0
    recorders = [r for r in args.recorders.split(",") if r]
    for r in recorders:
        if r not in ("reel", "ffmpeg"):
            sys.exit(f"pip.py: unknown recorder {r}")
    for tool in ("ffmpeg", "ffprobe"):
        need(tool)
    reel = Path(args.reel or os.environ.get("REEL") or "/tmp/bench-build/release/reel").resolve()
    if "reel" in recorders and not args.build and not os.access(reel, os.X_OK):
        sys.exit(f"pip.py: no reel binary at {reel}; build it with "
                 "`swift build -c release --scratch-path /tmp/bench-build --product reel`, or pass --reel")
    built_from = None
    if args.build:
        reel, built_from = build_head(Path(args.build))
    out = Path(args.out)
    work = out / "pip"
    inputs = make_inputs(work / "inputs", args.input_seconds)
    input_frames = args.input_seconds * 30
    # Read both inputs once so that every run finds them in the page cache.
    for path in inputs.values():
        path.read_bytes()

    machine = machine_info(reel)
    machine["built_from"] = built_from
    log("waiting for a quiet machine")
    machine["before_first_run"] = wait_for_machine(args.quiet_threshold, args.initial_wait)
    log(f"  {machine['before_first_run']}")
    results: list[dict] = []
    discarded: list[dict] = []
    started = time.monotonic()
    interrupted = False
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    try:
        for rep in range(args.reps):
            order = recorders if rep % 2 == 0 else list(reversed(recorders))
            for name in order:
                attempts = []
                for attempt in range(args.retries + 1):
                    r = record_once(name, rep, reel, inputs, args, input_frames, work)
                    r["attempt"] = attempt
                    r["disturbed"] = r["other_cpu_s"] / r["wall_s"] > args.disturbed
                    attempts.append(r)
                    if not r["disturbed"]:
                        break
                    log(f"  {name} rep {rep}: other processes used {r['other_cpu_s'] / r['wall_s']:.2f} CPU during "
                        f"the run" + ("; once more" if attempt < args.retries else "; keeping the least disturbed run"))
                r = min(attempts, key=lambda x: x["other_cpu_s"] / x["wall_s"])
                discarded += [x for x in attempts if x is not r]
                results.append(r)
                v, c = r["verify"], r["verify"].get("content", {})
                steady = r["steady_cpu_per_s"]
                log(f"  {name:7} rep {rep}: {r['cpu_per_s']:.3f} CPU s/s (steady "
                    f"{steady if steady is None else round(steady, 3)}), {r['peak_rss_mib']:.0f} MiB, "
                    f"{v.get('packets')} frames, a {c.get('a_fresh')} distinct, b {c.get('b_fresh')} distinct, "
                    f"dropped {r['reported'].get('dropped')}, inset {v.get('inset_found')}, others "
                    f"{r['other_cpu_s'] / r['wall_s']:.2f}" + ("" if v["ok"] else f"  PROBLEMS: {v['problems']}"))
    except KeyboardInterrupt:
        interrupted = True
        log("interrupted: the table shows the runs done so far")

    options: dict[str, set] = {}
    for r in results:
        o = r["verify"].get("x264_options")
        if o:
            options.setdefault(r["recorder"], set()).add(o)
    notes = []
    if "reel" in options and "ffmpeg" in options:
        a, b = sorted(options["reel"])[0].split(), sorted(options["ffmpeg"])[0].split()
        diff = sorted(set(a) ^ set(b))
        notes.append("x264 options reel vs ffmpeg: " + ("identical" if not diff else "DIFFER: " + " ".join(diff)))
    for name in recorders:
        if name in options:
            notes.append(f"x264 options ({name}): " + sorted(options[name])[0])

    text = table(results, args, recorders)
    print(header(machine))
    print(text)
    print()
    for line in notes:
        print(line)
    for name in recorders:
        first = next((r for r in results if r["recorder"] == name), None)
        if first:
            print(f"- `{name}`: `{' '.join(first['command'])}`")
    print(f"(the run took {(time.monotonic() - started) / 60:.1f} min; before it: {machine['before_first_run']})")

    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    path = out / f"pip-{stamp}.json"
    doc = {"machine": machine, "interrupted": interrupted, "arguments": vars(args) | {"recorders": recorders},
           "command": sys.argv, "inputs": {k: str(v) for k, v in inputs.items()}, "runs": results,
           "discarded_disturbed_runs": discarded, "x264_options": {k: sorted(v) for k, v in options.items()},
           "table": text}
    path.write_text(json.dumps(doc, indent=1))
    print(f"raw figures: {path}")
    bad = [r for r in results if not r["verify"]["ok"]]
    return 1 if bad or interrupted else 0


if __name__ == "__main__":
    sys.exit(main())
