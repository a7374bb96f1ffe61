#!/usr/bin/env python3
"""reel record --screen against ffmpeg -f x11grab, side by side in one run.

Starts one Xvfb, paints a still screen, a desktop with a video playing in one window and a
moving pointer, or a screen moving everywhere on it, records it in turn with each recorder
(same size, rate, encoder, preset, CRF, keyframe interval, colour conversion, cursor),
measures CPU (the recorder's and the X server's), memory, frames and start-up, checks every
output by decoding it, prints a table and writes the raw figures as JSON to bench/out/. See
bench/README.md.

Python 3 standard library only.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import os
import random
import re
import shlex
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
CLK_TCK = os.sysconf("SC_CLK_TCK")
NCPU = os.cpu_count() or 1

# Barcode drawn by painter.c over the top rows of what it paints (the screen in the motion
# scenario, the video window's region in the desktop scenario): BAR_BLOCKS blocks of
# block_w x BAR_H pixels.
BAR_BLOCKS, BAR_BLOCK_W, BAR_H = 24, 64, 16
BAR_W = BAR_BLOCKS * BAR_BLOCK_W
BAR_BITS = BAR_BLOCKS - 2

SCENARIOS = ("still", "desktop", "motion")
# The desktop scenario's pointer goes round an ellipse centred at (W/2, 0.6 H) with radii
# 0.4 W and 0.3 H (painter.c), one lap in this many seconds.
CURSOR_LAP_S = 8
# Recorders that are reel; others are defined with --reel-variant.
REEL_RECORDERS = ("reel", "reel-replay")
FFMPEG_RECORDERS = ("ffmpeg", "ffmpeg-default")
FRAME_MODES = ("cfr", "vfr", "content")


# ----------------------------------------------------------------------------------------------
# small helpers


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def proc_cpu(pid: int) -> float:
    """CPU seconds (user + system) a live process has used, from /proc/PID/stat."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    # fields[0] is the state (field 3); utime and stime are fields 14 and 15.
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def system_busy() -> float:
    """CPU seconds all CPUs have spent busy since boot (everything but idle and iowait)."""
    with open("/proc/stat") as f:
        parts = f.readline().split()[1:]
    v = [int(x) for x in parts] + [0] * 8
    # user, nice, system, irq, softirq: time this machine's own processes kept a CPU busy.
    # Steal (the hypervisor running someone else) is not counted; guest time is inside user.
    return (v[0] + v[1] + v[2] + v[5] + v[6]) / CLK_TCK


def run(cmd: list[str], **kw) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def need(tool: str) -> str:
    path = shutil.which(tool)
    if not path:
        sys.exit(f"screen.py: '{tool}' is not installed")
    return path


def mean(xs):
    xs = [x for x in xs if x is not None]
    return statistics.fmean(xs) if xs else None


def spread(xs):
    xs = [x for x in xs if x is not None]
    return (min(xs), max(xs)) if xs else (None, None)


# ----------------------------------------------------------------------------------------------
# the machine and the tools


def machine_info(reel: Path) -> dict:
    cpu = "?"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    mem_kib = 0
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemTotal:"):
                mem_kib = int(line.split()[1])
    ffmpeg_version = run(["ffmpeg", "-hide_banner", "-version"]).stdout.splitlines()[0]
    commit = run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"]).stdout.strip()
    dirty = run(["git", "-C", str(ROOT), "status", "--porcelain", "--", "Sources", "Package.swift"]).stdout.strip()
    return {
        "date": dt.datetime.now().astimezone().isoformat(timespec="seconds"),
        "nproc": int(run(["nproc"]).stdout.strip() or 0),
        "cpu_model": cpu,
        "memory_gib": round(mem_kib / 1024 / 1024, 1),
        "kernel": os.uname().release,
        "ffmpeg": ffmpeg_version,
        "reel_binary": str(reel),
        "reel_binary_built": dt.datetime.fromtimestamp(reel.stat().st_mtime).astimezone().isoformat(timespec="seconds")
        if reel.exists() else None,
        "head_at_run": commit + ("+uncommitted changes in Sources/" if dirty else ""),
    }


def build_painter(out: Path) -> Path:
    source = BENCH / "painter.c"
    binary = out / "painter"
    if not binary.exists() or binary.stat().st_mtime < source.stat().st_mtime:
        log("compiling painter.c")
        r = run(["gcc", "-O2", "-Wall", "-o", str(binary), str(source), "-lxcb", "-lm"])
        if r.returncode != 0:
            sys.exit(f"screen.py: cannot compile painter.c:\n{r.stderr}")
    return binary


def generate(path: Path, frame_bytes: int, count: int, spec: str, complex_graph: bool = False) -> Path:
    """COUNT raw BGRA frames of a lavfi graph into path, unless they are there already."""
    if path.exists() and path.stat().st_size == count * frame_bytes:
        return path
    log(f"generating {path.name}")
    source = ["-filter_complex", spec, "-map", "[out]"] if complex_graph else ["-f", "lavfi", "-i", spec]
    r = run(["ffmpeg", "-nostdin", "-v", "error", "-y"] + source + ["-frames:v", str(count),
             "-pix_fmt", "bgra", "-f", "rawvideo", str(path)])
    if r.returncode != 0 or not path.exists() or path.stat().st_size != count * frame_bytes:
        path.unlink(missing_ok=True)
        sys.exit(f"screen.py: cannot generate {path}:\n{r.stderr}")
    return path


def motion_frames(out: Path, width: int, height: int, count: int, rate: int) -> Path:
    """Raw BGRA frames for the painter's motion scenario: testsrc2 scrolled vertically by
    1/`rate` of the screen height per frame (one screen height a second at `rate` paints a
    second; every pixel moves every frame). With count == rate the loop is seamless; fewer
    frames (big screens, see --frames-budget) jump back once a loop."""
    name = f"frames-motion-{width}x{height}-{count}.bgra" if count == rate else \
        f"frames-motion-{width}x{height}-{count}of{rate}.bgra"
    return generate(out / name, width * height * 4, count,
                    f"testsrc2=size={width}x{height}:rate={rate},scroll=v={1 / rate:.7f}")


def still_frame(out: Path, width: int, height: int, rate: int) -> Path:
    """One still frame of testsrc2, raw BGRA."""
    return generate(out / f"frames-still-{width}x{height}.bgra", width * height * 4, 1,
                    f"testsrc2=size={width}x{height}:rate={rate}")


def make_frames(out: Path, width: int, height: int, count: int, rate: int) -> tuple[Path, Path]:
    """The motion scenario's frames (`count` of them, scrolled by 1/`rate` of the height each)
    and the still frame (bench/finalise.py uses this)."""
    return motion_frames(out, width, height, count, rate), still_frame(out, width, height, rate)


def motion_frame_count(args) -> int:
    """How many frames the motion scenario loops: one per paint of a second, or fewer when they
    would take more than --frames-budget MiB (on disk and in the X server's pixmaps): 60 frames
    of 3840x2160 are 2 GB."""
    frame_bytes = args.width * args.height * 4
    return max(2, min(args.paint_rate, int(args.frames_budget * 2**20 // frame_bytes)))


class Region:
    """A rectangle of the screen: the desktop scenario's video window."""

    def __init__(self, width: int, height: int, x: int, y: int):
        self.width, self.height, self.x, self.y = width, height, x, y

    def __str__(self) -> str:
        return f"{self.width}x{self.height}+{self.x}+{self.y}"

    @staticmethod
    def parse(text: str) -> "Region":
        m = re.fullmatch(r"(\d+)x(\d+)\+(\d+)\+(\d+)", text.strip())
        if not m:
            raise ValueError(f"a region is WxH+X+Y, not '{text}'")
        return Region(*(int(g) for g in m.groups()))


def desktop_region(args) -> Region:
    """--region, or a 640x360 window near the top right: 8 % of the width from the right edge,
    12 % of the height from the top (above the pointer's path)."""
    if args.region:
        return Region.parse(args.region)
    w, h = 640, 360
    return Region(w, h, args.width - w - round(args.width * 0.08), round(args.height * 0.12))


def desktop_block_width(region: Region) -> int:
    """Width of one barcode block in the desktop scenario: 24 blocks fit in the region."""
    return min(BAR_BLOCK_W, region.width // BAR_BLOCKS)


def check_desktop_geometry(args, region: Region) -> None:
    """Exits with a message when the desktop scenario cannot be painted as asked: the region must
    lie inside the screen, hold the barcode, and its barcode must stay clear of the pointer
    (a cursor drawn over it would make it unreadable)."""
    W, H = args.width, args.height
    if region.x + region.width > W or region.y + region.height > H or region.height <= BAR_H:
        sys.exit(f"screen.py: the region {region} does not fit in the {W}x{H} screen (or is not more than {BAR_H} rows high)")
    bw = desktop_block_width(region)
    if bw < 4:
        sys.exit(f"screen.py: the region {region} is too narrow for the barcode ({BAR_BLOCKS} blocks of at least 4 px)")
    bx0, bx1, by0, by1 = region.x, region.x + BAR_BLOCKS * bw, region.y, region.y + BAR_H
    for k in range(720):
        a = 2 * math.pi * k / 720
        px, py = W * (0.5 + 0.4 * math.cos(a)), H * (0.6 + 0.3 * math.sin(a))
        # The cursor image around its hot spot, with room for any shape up to 32x32.
        if px - 32 < bx1 and px + 32 > bx0 and py - 32 < by1 and py + 32 > by0:
            sys.exit(f"screen.py: the pointer's path (an ellipse around ({W // 2}, {round(0.6 * H)}), radii "
                     f"{round(0.4 * W)} and {round(0.3 * H)}) passes over the barcode of the region {region}: "
                     f"place the region so its top {BAR_H} rows stay 32 px away from it")


def desktop_text(path: Path) -> None:
    """Code-like lines for the editor window of the desktop image (fixed: seeded)."""
    rnd = random.Random(14)
    words = ["frame", "capture", "region", "damage", "encoder", "queue", "pixels", "cursor", "stride", "buffer",
             "timestamp", "packet", "picture", "convert", "window", "screen", "offset", "count", "ready", "rows"]
    lines, indent = [], 0
    for _ in range(400):
        kind, pad = rnd.random(), "    " * indent
        a, b, c = rnd.choice(words), rnd.choice(words), rnd.choice(words)
        if kind < 0.12 and indent < 3:
            lines.append(f"{pad}if {a}.{b} > {rnd.randint(0, 4096)} {{")
            indent += 1
        elif kind < 0.22 and indent > 0:
            indent -= 1
            lines.append("    " * indent + "}")
        elif kind < 0.32:
            lines.append(f"{pad}// {a} {b} {c}: {rnd.choice(words)} {rnd.choice(words)} {rnd.choice(words)}")
        elif kind < 0.36:
            lines.append("")
        else:
            lines.append(f"{pad}let {a}{b.capitalize()} = {c}({rnd.choice(words)}, {rnd.randint(0, 1920)}) + "
                         f"{rnd.randint(1, 64)}")
    path.write_text("\n".join(lines) + "\n")


FONT_DIR = Path("/usr/share/fonts/truetype/dejavu")


def desktop_frames(out: Path, args, region: Region) -> tuple[Path, Path]:
    """The desktop scenario's pictures: one screen-sized still desktop (a gradient wallpaper, an
    editor full of code, an image viewer showing a Mandelbrot set, a terminal, the video window's
    frame around the region, a task bar), and the frames played in the region: testsrc2 of the
    region's size scrolled by 1/paint-rate of its height per frame (every pixel of the region
    changes every paint), a seamless loop of one second."""
    W, H = args.width, args.height
    mono, sans = FONT_DIR / "DejaVuSansMono.ttf", FONT_DIR / "DejaVuSans.ttf"
    if not mono.exists() or not sans.exists():
        sys.exit(f"screen.py: the desktop image needs the DejaVu fonts ({mono}; apt-get install fonts-dejavu-core)")
    region_path = generate(out / f"frames-region-{region.width}x{region.height}-{args.paint_rate}.bgra",
                           region.width * region.height * 4, args.paint_rate,
                           f"testsrc2=size={region.width}x{region.height}:rate={args.paint_rate},"
                           f"scroll=v={1 / args.paint_rate:.7f}")
    background = out / f"frames-desktop-v1-{W}x{H}-{region}.bgra"
    if background.exists() and background.stat().st_size == W * H * 4:
        return region_path, background
    text = out / "desktop-editor.txt"
    desktop_text(text)
    terminal = out / "desktop-terminal.txt"
    terminal.write_text("".join(f"$ make -j2 target{i}  [{i * 7 % 100:3d}%] Building object module{i}.o\n"
                                for i in range(60)))
    s = H / 1080
    tb = round(28 * s)   # title bar height
    fs = max(10, round(15 * s))

    def window(x, y, w, h, title):
        """A title bar above (x, y), a border around, a close button."""
        return [f"drawbox=x={x - 1}:y={y - tb - 1}:w={w + 2}:h={h + tb + 2}:color=0x101010:t=1",
                f"drawbox=x={x}:y={y - tb}:w={w}:h={tb}:color=0x2d2d30:t=fill",
                f"drawtext=fontfile={sans}:text='{title}':fontsize={round(14 * s)}:fontcolor=0xe0e0e0:"
                f"x={x + 10}:y={y - tb + round(7 * s)}",
                f"drawbox=x={x + w - round(22 * s)}:y={y - tb + round(7 * s)}:w={round(14 * s)}:h={round(14 * s)}:"
                f"color=0xc0504d:t=fill"]

    ex, ey, ew, eh = round(W * 0.03), round(H * 0.06) + tb, round(W * 0.42), round(H * 0.60)
    ix, iy, iw, ih = round(W * 0.05), round(H * 0.72) + tb, round(W * 0.30), round(H * 0.18)
    tx, ty, tw, th = round(W * 0.50), round(H * 0.62) + tb, round(W * 0.45), round(H * 0.26)
    bar = round(H * 0.035)
    text_style = f"expansion=none:fontsize={fs}:x=8:y=6:line_spacing={round(3 * s)}"
    decorations = (window(ex, ey, ew, eh, "capture.swift - Editor") + window(ix, iy, iw, ih, "mandelbrot.png - Viewer")
                   + window(tx, ty, tw, th, "Terminal") + window(region.x, region.y, region.width, region.height, "Video")
                   + [f"drawbox=x={region.x}:y={region.y}:w={region.width}:h={region.height}:color=black:t=fill",
                      f"drawbox=x=0:y={H - bar}:w={W}:h={bar}:color=0x202225:t=fill"]
                   + [f"drawbox=x={round(8 * s) + k * round(40 * s)}:y={H - bar + round(6 * s)}:w={round(26 * s)}:"
                      f"h={bar - round(12 * s)}:color=0x{c}:t=fill"
                      for k, c in enumerate(["4f7fa8", "c0504d", "9bbb59", "8064a2", "f79646"])]
                   + [f"drawtext=fontfile={sans}:text='15\\:42':fontsize={round(14 * s)}:fontcolor=0xe0e0e0:"
                      f"x={W - round(60 * s)}:y={H - bar + round(10 * s)}"])
    graph = ";".join([
        f"gradients=s={W}x{H}:c0=0x1b3552:c1=0x4f7fa8:c2=0x9bb7cf:n=3:x0=0:y0=0:x1={W}:y1={H},trim=end_frame=1[bg]",
        f"color=c=0xf7f7f7:s={ew}x{eh},trim=end_frame=1,"
        f"drawtext=fontfile={mono}:textfile={text}:fontcolor=0x202020:{text_style}[ed]",
        f"mandelbrot=s={iw}x{ih}:start_scale=1.5,trim=end_frame=1[im]",
        f"color=c=0x1e1e1e:s={tw}x{th},trim=end_frame=1,"
        f"drawtext=fontfile={mono}:textfile={terminal}:fontcolor=0x9fe89f:{text_style}[te]",
        f"[bg][ed]overlay=x={ex}:y={ey}[b1]",
        f"[b1][im]overlay=x={ix}:y={iy}[b2]",
        f"[b2][te]overlay=x={tx}:y={ty}[b3]",
        "[b3]" + ",".join(decorations) + "[out]",
    ])
    generate(background, W * H * 4, 1, graph, complex_graph=True)
    return region_path, background


def free_display(first: int) -> int:
    for n in range(first, first + 100):
        if not os.path.exists(f"/tmp/.X11-unix/X{n}") and not os.path.exists(f"/tmp/.X{n}-lock"):
            return n
    sys.exit("screen.py: no free X display number")


def wait_for_x(display: int, proc: subprocess.Popen, timeout: float = 10) -> None:
    path = f"/tmp/.X11-unix/X{display}"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            sys.exit(f"screen.py: Xvfb :{display} exited at once: {proc.stderr.read() if proc.stderr else ''}")
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
                s.connect(path)
                return
        except OSError:
            time.sleep(0.05)
    sys.exit(f"screen.py: Xvfb :{display} did not come up")


def stop(proc: subprocess.Popen | None, timeout: float = 5) -> None:
    if proc is None or proc.poll() is not None:
        return
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def renice(pid: int, value: int) -> bool:
    try:
        os.setpriority(os.PRIO_PROCESS, pid, value)
        return True
    except OSError:
        return False


# ----------------------------------------------------------------------------------------------
# the recorders


def is_reel(name: str, args) -> bool:
    """Whether the recorder `name` runs reel (reel, reel-replay or a --reel-variant)."""
    return name in REEL_RECORDERS or name in getattr(args, "variants", {})


def reel_extra_args(name: str, args) -> list[str]:
    """What reel gets beyond the shared settings: --reel-args, then the variant's own."""
    return shlex.split(getattr(args, "reel_args", "") or "") + shlex.split(getattr(args, "variants", {}).get(name, ""))


def frame_mode(name: str, args) -> str:
    """The frame mode a recorder writes: reel's --frame-mode among its arguments (the last one
    counts; cfr when none), cfr for ffmpeg (-t with x11grab's constant rate)."""
    if not is_reel(name, args):
        return "cfr"
    mode = "cfr"
    extra = reel_extra_args(name, args)
    for i, a in enumerate(extra):
        if a == "--frame-mode" and i + 1 < len(extra):
            mode = extra[i + 1]
        elif a.startswith("--frame-mode="):
            mode = a.split("=", 1)[1]
    return mode


# Options both recorders are given alike by recorder_command; --reel-args cannot change them.
SHARED_REEL_OPTIONS = ("--screen", "--fps", "--preset", "--crf", "--keyframe-interval", "--duration", "--json",
                       "-o", "--output", "--no-cursor", "--replay", "--replay-dir")


def check_reel_args(extra: list[str], name: str) -> None:
    """Exits when extra reel arguments would change a setting both recorders must share."""
    for a in extra:
        if a.split("=", 1)[0] in SHARED_REEL_OPTIONS:
            hint = " (use screen.py's --no-cursor: ffmpeg must match)" if a == "--no-cursor" else ""
            sys.exit(f"screen.py: {name}: {a} is set by screen.py for every recorder alike; it cannot be in "
                     f"--reel-args or a --reel-variant{hint}")


def parse_variants(specs: list[str]) -> dict[str, str]:
    """--reel-variant NAME=ARGS, each a new recorder name."""
    variants: dict[str, str] = {}
    for spec in specs:
        name, sep, extra = spec.partition("=")
        if not sep or not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", name):
            sys.exit(f"screen.py: --reel-variant is NAME=ARGS (NAME of letters, digits, . _ -), not '{spec}'")
        if name in REEL_RECORDERS + FFMPEG_RECORDERS or name in variants:
            sys.exit(f"screen.py: --reel-variant {name}: the name is taken")
        try:
            shlex.split(extra)
        except ValueError as e:
            sys.exit(f"screen.py: --reel-variant {name}: {e}")
        variants[name] = extra
    return variants


def recorder_command(name: str, reel: Path, display: int, args, output: Path) -> list[str]:
    n, fps, size = args.duration, args.fps, f"{args.width}x{args.height}"
    no_cursor = getattr(args, "no_cursor", False)
    if is_reel(name, args):
        # reel-replay: the same recording with a replay buffer beside the file (one encode
        # feeds both), --replay seconds of it held in memory.
        replay = ["--replay", str(args.replay), "--replay-dir", str(output.parent)] if name == "reel-replay" else []
        return [str(reel), "record", f"--screen=:{display}", "--fps", str(fps), "--preset", args.preset,
                "--crf", str(args.crf), "--keyframe-interval", str(args.gop), "--duration", str(n),
                "--json"] + (["--no-cursor"] if no_cursor else []) + replay + reel_extra_args(name, args) + \
            ["-o", str(output)]
    common_in = ["ffmpeg", "-nostdin", "-hide_banner", "-loglevel", "error", "-y",
                 "-f", "x11grab", "-framerate", str(fps), "-video_size", size, "-draw_mouse", "0" if no_cursor else "1",
                 "-i", f":{display}", "-t", str(n)]
    encode = ["-c:v", "libx264", "-preset", args.preset, "-crf", str(args.crf), "-g", str(args.gop),
              "-pix_fmt", "yuv420p"]
    tail = ["-movflags", "+faststart", "-progress", "pipe:1", "-nostats", str(output)]
    if name == "ffmpeg":
        # What reel does: swscale with SWS_POINT, full-range RGB to limited-range BT.709, and
        # the BT.709 tags on the stream.
        return common_in + ["-vf", "scale=flags=neighbor:out_color_matrix=bt709:out_range=tv"] + encode + \
            ["-colorspace", "bt709", "-color_primaries", "bt709", "-color_trc", "bt709", "-color_range", "tv"] + tail
    if name == "ffmpeg-default":
        # The command most people type: swscale's default (bicubic) BT.601 conversion, untagged.
        return common_in + encode + tail
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


def parse_progress(reel: bool, lines: list[tuple[int, str]], launch: int) -> dict:
    """What the recorder itself said: its first report of a frame, its drop counters (and reel's
    recorded duration)."""
    first_frame_report = None
    reported = {}
    if reel:
        for t, line in lines:
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if event.get("event") == "started" and "started_s" not in reported:
                reported["started_s"] = (t - launch) / 1e9
            if event.get("frames", 0) >= 1 and first_frame_report is None:
                first_frame_report = (t - launch) / 1e9
            if event.get("event") in ("progress", "finished"):
                reported["frames"] = event.get("frames")
                reported["dropped"] = event.get("dropped")
                reported["duration_s"] = event.get("duration")
            if event.get("event") == "failed":
                reported["failed"] = event.get("message")
            if event.get("event") == "encoderSpeed":
                reported.setdefault("encoder_steps", []).append(
                    f'{event.get("at")}s {event.get("from")}→{event.get("to")}' + (" refused" if "refused" in event else ""))
    else:
        block = {}
        for t, line in lines:
            if "=" not in line:
                continue
            key, value = line.split("=", 1)
            block[key.strip()] = value.strip()
            if key == "frame" and first_frame_report is None and value.strip().isdigit() and int(value) >= 1:
                first_frame_report = (t - launch) / 1e9
            if key == "progress":
                reported["frames"] = int(block.get("frame", 0))
                reported["dup"] = int(block.get("dup_frames", 0))
                reported["drop"] = int(block.get("drop_frames", 0))
                reported["dropped"] = reported["dup"] + reported["drop"]
    reported["first_frame_report_s"] = first_frame_report
    return reported


def x264_options(path: Path) -> str | None:
    """The options string x264 writes into its SEI, with the encoder-independent parts."""
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


def decode_barcodes(strip: bytes, frames: int, block_w: int = BAR_BLOCK_W) -> list[int | None]:
    """The paint index in each decoded frame's barcode (None when it does not read). `strip`
    holds the frames' barcode rectangles (BAR_BLOCKS * block_w x BAR_H, grey) one after the
    other."""
    out = []
    bar_w = BAR_BLOCKS * block_w
    size = bar_w * BAR_H
    half = max(1, min(8, block_w // 4))  # sample the middle half of each block, at most 16 px
    for k in range(frames):
        base = k * size + (BAR_H // 2) * bar_w
        bits = []
        for b in range(BAR_BLOCKS):
            x = b * block_w + block_w // 2
            level = sum(strip[base + x - half: base + x + half]) / (2 * half)
            bits.append(1 if level >= 128 else 0)
        if bits[0] != 1 or bits[1] != 0:
            out.append(None)
            continue
        value = 0
        for bit in bits[2:]:
            value = value << 1 | bit
        out.append(value)
    return out


SHOWINFO_PTS = re.compile(r"\bn:\s*(\d+)\s+pts:\s*(-?\d+)\s+pts_time:\s*(-?[\d.]+)")


def verify(path: Path, args, barcode: tuple[int, int, int] | None, mode: str = "cfr") -> dict:
    """Checks that the file is what was asked for and decodes all of it; reads each frame's
    barcode at `barcode` (x, y, block width) when the scenario paints one. `mode` is the
    recorder's frame mode: in cfr every frame slot must be filled, in vfr and content the file
    holds fewer frames of longer durations, and what must hold is that the decoded frames last
    as long as the recording."""
    v: dict = {"ok": False, "problems": [], "frame_mode": mode}
    if not path.exists() or path.stat().st_size == 0:
        v["problems"].append("no output file")
        return v
    v["bytes"] = path.stat().st_size
    r = run(["ffprobe", "-v", "error", "-count_packets", "-show_entries",
             "stream=codec_type,codec_name,profile,width,height,pix_fmt,r_frame_rate,nb_read_packets,nb_frames,"
             "color_range,color_space,duration:format=duration,format_name", "-of", "json", str(path)])
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
    v.update({
        "codec": s.get("codec_name"), "profile": s.get("profile"), "pix_fmt": s.get("pix_fmt"),
        "size": f"{s.get('width')}x{s.get('height')}", "rate": s.get("r_frame_rate"),
        "color": f"{s.get('color_space', '?')}/{s.get('color_range', '?')}",
        "packets": int(s.get("nb_read_packets", 0)),
        "duration_s": float(info.get("format", {}).get("duration", 0) or 0),
    })
    if v["codec"] != "h264" or v["pix_fmt"] != "yuv420p" or v["size"] != f"{args.width}x{args.height}":
        v["problems"].append(f"stream is {v['codec']} {v['pix_fmt']} {v['size']}")
    if abs(v["duration_s"] - args.duration) > 0.25:
        v["problems"].append(f"duration {v['duration_s']:.3f} s, asked for {args.duration}")

    # Timestamps: gaps in the frame grid, keyframes, how long the frames last.
    r = run(["ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries",
             "packet=pts_time,duration_time,flags", "-of", "csv=p=0", str(path)])
    packets, keys = [], 0
    for line in r.stdout.split():
        parts = line.split(",")
        try:
            pts = float(parts[0])
        except (ValueError, IndexError):
            continue
        try:
            duration = float(parts[1])
        except (ValueError, IndexError):
            duration = None
        packets.append((pts, duration))
        keys += "K" in (parts[2] if len(parts) > 2 else "")
    packets.sort()
    pts = [p for p, _ in packets]
    frame = 1 / args.fps
    gaps = [b - a for a, b in zip(pts, pts[1:])]
    # A gap of k frame periods leaves k - 1 slots empty: lost in cfr, on purpose in vfr/content.
    v["timeline_missing_slots"] = sum(max(0, round(g / frame) - 1) for g in gaps) if mode == "cfr" else None
    v["longest_frame_ms"] = max(gaps + [packets[-1][1] or 0]) * 1000 if packets else None
    v["keyframes"] = keys
    v["first_pts_s"] = pts[0] if pts else None
    last_duration = packets[-1][1] if packets and packets[-1][1] is not None else frame

    # Decode everything; keep only the barcode strip (or a corner when there is none), and each
    # decoded frame's timestamp (showinfo). Every decoded frame once: no duplicates to fill gaps
    # in the timestamps (-fps_mode passthrough). Messages at error level and above are problems.
    bx, by, bw = barcode if barcode else (0, 0, BAR_BLOCK_W)
    bar_w = min(BAR_BLOCKS * bw, args.width - bx)
    r = subprocess.run(["ffmpeg", "-nostdin", "-loglevel", "level+info", "-i", str(path), "-map", "0:v:0",
                        "-vf", f"crop={bar_w}:{BAR_H}:{bx}:{by},format=gray,showinfo", "-fps_mode", "passthrough",
                        "-f", "rawvideo", "-"],
                       capture_output=True)
    log_lines = r.stderr.decode(errors="replace").splitlines()
    errors = "\n".join(l for l in log_lines if re.search(r"\[(error|fatal|panic)\]", l)).strip()
    decoded_pts = [float(m.group(3)) for l in log_lines if "showinfo" in l and (m := SHOWINFO_PTS.search(l))]
    decoded = len(r.stdout) // (bar_w * BAR_H)
    v["decoded_frames"] = decoded
    if r.returncode != 0 or errors:
        v["problems"].append(f"decoding reported: {errors[:300] or r.returncode}")
    if decoded != v["packets"]:
        v["problems"].append(f"{decoded} frames decode from {v['packets']} packets")
    # The decoded pictures' span: from the first one's timestamp to the last one's plus its
    # duration (the container's). In vfr/content it must be the recording's length: a file whose
    # last picture ends early has lost the end of the recording (a still screen is one picture
    # lasting all of it). In cfr, slots left empty at the end are lost frames, counted as such.
    if decoded_pts:
        v["decoded_duration_s"] = max(decoded_pts) + last_duration - min(decoded_pts)
        if mode != "cfr" and abs(v["decoded_duration_s"] - args.duration) > 0.25:
            v["problems"].append(f"the decoded frames last {v['decoded_duration_s']:.3f} s, recorded {args.duration}")
    else:
        v["decoded_duration_s"] = None
        v["problems"].append("no decoded frame timestamps (showinfo)")
    if barcode:
        v["barcodes"] = decode_barcodes(r.stdout, decoded, bw)
    v["x264_options"] = x264_options(path)
    v["ok"] = not v["problems"]
    return v


def content_timeline(barcodes: list[int | None], paints: dict[int, tuple[int, int]], launch: int,
                     period_ns: float, fps: int) -> dict:
    """From each frame's paint index: how many distinct screens were recorded, how many frames
    repeat the one before, when the first recorded screen was painted (relative to launch)."""
    valid = [b for b in barcodes if b is not None]
    c: dict = {"unreadable": len(barcodes) - len(valid)}
    if not valid:
        return c
    c["fresh_frames"] = len(set(valid))
    c["repeats"] = sum(1 for a, b in zip(barcodes, barcodes[1:]) if a is not None and a == b)
    c["backwards"] = sum(1 for a, b in zip(valid, valid[1:]) if b < a)

    def on_screen(i):
        """Middle of the interval during which paint i was on screen (known to ±half a paint)."""
        if i in paints:
            done = paints[i][1]
            nxt = paints.get(i + 1)
            end = nxt[0] if nxt else done + period_ns
            return (done + end) / 2
        return None

    first = on_screen(valid[0])
    last = on_screen(valid[-1])
    if first is not None:
        c["first_frame_s"] = (first - launch) / 1e9
    if first is not None and last is not None:
        c["span_s"] = (last - first) / 1e9
    # Intervals between consecutive fresh screens; a slot counts as missed when the screen
    # recorded next was painted two or more frame periods after the previous one (the painter's
    # own granularity is one paint period).
    times = [on_screen(b) for b in valid]
    times = [t for t in times if t is not None]
    intervals = [(b - a) / 1e6 for a, b in zip(times, times[1:]) if b > a]
    frame_ms = 1000 / fps
    c["max_interval_ms"] = max(intervals) if intervals else None
    c["late_intervals"] = sum(1 for x in intervals if x >= 2 * frame_ms - period_ns / 2e6)
    return c


# ----------------------------------------------------------------------------------------------
# measuring one recording


class Screen:
    """The Xvfb and whatever paints on it."""

    def __init__(self, args, out: Path, painter: Path, motion_frames: Path | None, still_frames: Path | None,
                 desktop: tuple[Path, Path, Region] | None = None):
        """desktop: the region's frames, the desktop image and the region (see desktop_frames)."""
        self.args = args
        self.out = out
        self.painter_bin = painter
        self.frames = {"motion": motion_frames, "still": still_frames}
        self.desktop = desktop
        self.display = free_display(args.display)
        self.xvfb = subprocess.Popen(
            ["Xvfb", f":{self.display}", "-screen", "0", f"{args.width}x{args.height}x24", "-nolisten", "tcp"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        wait_for_x(self.display, self.xvfb)
        self.reniced = args.nice != 0 and renice(self.xvfb.pid, args.nice)
        self.painter: subprocess.Popen | None = None
        self.paint_log = out / f"paint-{self.display}.log"

    def paint(self, scenario: str) -> None:
        stop(self.painter)
        if self.paint_log.exists():
            self.paint_log.unlink()
        rate = str(self.args.paint_rate)
        if scenario == "desktop":
            region_frames, background, region = self.desktop
            count = region_frames.stat().st_size // (region.width * region.height * 4)
            cmd = [str(self.painter_bin), f":{self.display}", "desktop", str(region_frames), str(count),
                   str(self.paint_log), rate, str(background), str(region), str(desktop_block_width(region)),
                   str(CURSOR_LAP_S)]
            if self.args.pointer_rests:
                cmd += [str(s) for s in self.args.pointer_rests]
        else:
            frames = self.frames[scenario]
            count = frames.stat().st_size // (self.args.width * self.args.height * 4) if scenario == "motion" else 1
            cmd = [str(self.painter_bin), f":{self.display}", scenario, str(frames), str(count),
                   str(self.paint_log), rate]
        self.painter = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        if self.args.nice != 0:
            renice(self.painter.pid, self.args.nice)
        line = self.painter.stdout.readline().decode().strip()
        if line != "ready":
            sys.exit(f"screen.py: the painter did not start: {line} {self.painter.stderr.read().decode()}")
        time.sleep(1)

    def barcode(self, scenario: str) -> tuple[int, int, int] | None:
        """Where the scenario's barcode is: (x, y, block width), None when it has none."""
        if scenario == "motion":
            return 0, 0, BAR_BLOCK_W
        if scenario == "desktop":
            region = self.desktop[2]
            return region.x, region.y, desktop_block_width(region)
        return None

    def paints(self) -> dict[int, tuple[int, int]]:
        """Paint index → (request sent, server done), monotonic ns, from the painter's log."""
        result = {}
        try:
            with open(self.paint_log) as f:
                for line in f:
                    parts = line.split()
                    if len(parts) == 3:
                        result[int(parts[0])] = (int(parts[1]), int(parts[2]))
        except OSError:
            pass
        return result

    def close(self) -> None:
        stop(self.painter)
        stop(self.xvfb)


def wait_for_quiet(screen: Screen, args) -> float:
    """Waits (up to --quiet-wait s) until other processes use less than --quiet-threshold of a
    CPU; returns what they used in the last second measured."""
    deadline = time.monotonic() + args.quiet_wait
    last_said = 0.0
    while True:
        ours0 = proc_cpu(screen.xvfb.pid) + proc_cpu(screen.painter.pid)
        busy0, t0 = system_busy(), time.monotonic()
        time.sleep(1)
        foreign = ((system_busy() - busy0) - (proc_cpu(screen.xvfb.pid) + proc_cpu(screen.painter.pid) - ours0)) \
            / (time.monotonic() - t0)
        if foreign < args.quiet_threshold or time.monotonic() > deadline:
            return foreign
        if time.monotonic() - last_said >= 10:
            log(f"  waiting for quiet: other processes use {foreign:.2f} CPU")
            last_said = time.monotonic()


def baseline(screen: Screen, seconds: float) -> dict:
    """Xvfb's and the painter's CPU with no recorder running."""
    x0, p0, s0, t0 = proc_cpu(screen.xvfb.pid), proc_cpu(screen.painter.pid), system_busy(), time.monotonic()
    time.sleep(seconds)
    x1, p1, s1, t1 = proc_cpu(screen.xvfb.pid), proc_cpu(screen.painter.pid), system_busy(), time.monotonic()
    wall = t1 - t0
    return {"seconds": wall, "xvfb_cpu_per_s": (x1 - x0) / wall, "painter_cpu_per_s": (p1 - p0) / wall,
            "other_cpu_per_s": ((s1 - s0) - (x1 - x0) - (p1 - p0)) / wall}


def record_once(name: str, scenario: str, rep: int, screen: Screen, reel: Path, args, base: dict) -> dict:
    output = screen.out / "runs" / f"{scenario}-{name}-{rep}.mp4"
    output.parent.mkdir(parents=True, exist_ok=True)
    if output.exists():
        output.unlink()
    cmd = recorder_command(name, reel, screen.display, args, output)
    quiet = wait_for_quiet(screen, args)

    xvfb0, paint0, sys0 = proc_cpu(screen.xvfb.pid), proc_cpu(screen.painter.pid), system_busy()
    launch = time.monotonic_ns()
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
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
    proc.returncode = os.waitstatus_to_exitcode(status)
    xvfb1, paint1, sys1 = proc_cpu(screen.xvfb.pid), proc_cpu(screen.painter.pid), system_busy()
    out_reader.join(5)
    err_reader.join(5)

    n = args.duration
    wall = (end - launch) / 1e9
    recorder_cpu = usage.ru_utime + usage.ru_stime
    xvfb_cpu, paint_cpu = xvfb1 - xvfb0, paint1 - paint0
    result = {
        "recorder": name, "scenario": scenario, "rep": rep, "command": cmd, "exit_code": proc.returncode,
        "frame_mode": frame_mode(name, args),
        "wall_s": wall, "overhead_s": wall - n,
        "recorder_cpu_s": recorder_cpu, "recorder_user_s": usage.ru_utime, "recorder_sys_s": usage.ru_stime,
        "xvfb_cpu_s": xvfb_cpu, "painter_cpu_s": paint_cpu,
        "other_cpu_s": (sys1 - sys0) - recorder_cpu - xvfb_cpu - paint_cpu,
        "other_cpu_before_per_s": quiet,
        "recorder_cpu_per_s": recorder_cpu / n, "xvfb_cpu_per_s": xvfb_cpu / n,
        "total_cpu_per_s": (recorder_cpu + xvfb_cpu) / n,
        "xvfb_net_cpu_per_s": (xvfb_cpu - base["xvfb_cpu_per_s"] * wall) / n,
        "total_net_cpu_per_s": (recorder_cpu + xvfb_cpu - base["xvfb_cpu_per_s"] * wall) / n,
        "painter_cpu_per_s": paint_cpu / n,
        "peak_rss_mib": usage.ru_maxrss / 1024,
        "voluntary_switches": usage.ru_nvcsw, "involuntary_switches": usage.ru_nivcsw,
        "stderr": "\n".join(l for _, l in err_reader.lines)[-2000:],
    }
    result["reported"] = parse_progress(is_reel(name, args), out_reader.lines, launch)
    barcode = screen.barcode(scenario)
    mode = result["frame_mode"]
    v = verify(output, args, barcode, mode)
    barcodes = v.pop("barcodes", None)
    if proc.returncode != 0:
        said = [l for _, l in err_reader.lines if l.strip()]
        v["problems"].insert(0, f"exit code {proc.returncode}" + (f": {said[0][:200]}" if said else ""))
        v["ok"] = False
    result["verify"] = v
    if barcode and barcodes is not None:
        result["content"] = content_timeline(barcodes, screen.paints(), launch, 1e9 / args.paint_rate, args.fps)
    packets = v.get("packets", 0)
    dropped = result["reported"].get("dropped")
    if mode != "cfr":
        # vfr/content: a frame only when the screen changed, so fewer frames than slots is
        # no loss; lost frames are those reel says it dropped (the barcodes' fresh frames are
        # still in the table for the scenarios that change).
        expected = None
        lost = dropped
    elif barcode and "fresh_frames" in result.get("content", {}):
        expected = n * args.fps
        lost = max(0, expected - result["content"]["fresh_frames"])
    elif is_reel(name, args):
        # reel's dropped frames are the slots it left empty: counted once, not twice.
        expected = n * args.fps
        lost = max(expected - packets, dropped or 0, 0)
    else:
        # ffmpeg fills every slot of its constant-rate file; its dup and drop counters say how
        # many hold a repeated picture.
        expected = n * args.fps
        lost = max(0, expected - packets) + (dropped or 0)
    result["expected_frames"] = expected
    result["lost_frames"] = lost
    if not args.keep and v["ok"]:
        output.unlink(missing_ok=True)
    return result


# ----------------------------------------------------------------------------------------------
# the table


def fmt(x, digits=3):
    if x is None:
        return "—"
    if isinstance(x, int) or (isinstance(x, float) and x.is_integer() and digits == 0):
        return str(int(x))
    return f"{x:.{digits}f}"


def cell(runs, key, digits=3):
    xs = [key(r) for r in runs]
    xs = [x for x in xs if x is not None]
    if not xs:
        return "—"
    m = statistics.fmean(xs)
    lo, hi = min(xs), max(xs)
    if len(xs) == 1 or lo == hi:
        return fmt(m, digits) if not (digits == 0) else f"{m:.0f}"
    if digits == 0:
        return f"{m:.0f} ({lo:.0f}–{hi:.0f})"
    return f"{fmt(m, digits)} ({fmt(lo, digits)}–{fmt(hi, digits)})"


def ms(seconds):
    return None if seconds is None else seconds * 1000


METRICS = [
    # label, key, digits, ratio?
    ("recorder CPU s per s", lambda r: r["recorder_cpu_per_s"], 3, True),
    ("Xvfb CPU s per s", lambda r: r["xvfb_cpu_per_s"], 3, True),
    ("recorder+Xvfb CPU s per s", lambda r: r["total_cpu_per_s"], 3, True),
    ("recorder+Xvfb net of idle CPU s per s", lambda r: r.get("total_net_cpu_per_s"), 3, True),
    ("  Xvfb net of idle", lambda r: r["xvfb_net_cpu_per_s"], 3, False),
    ("  painter CPU s per s", lambda r: r["painter_cpu_per_s"], 3, False),
    ("  other processes CPU s per s", lambda r: r["other_cpu_s"] / r["wall_s"], 3, False),
    ("peak RSS MiB", lambda r: r["peak_rss_mib"], 0, True),
    ("frames in file", lambda r: r["verify"].get("packets"), 0, False),
    ("fresh frames (barcodes)", lambda r: r.get("content", {}).get("fresh_frames"), 0, False),
    ("repeated frames", lambda r: r.get("content", {}).get("repeats"), 0, False),
    ("drops the recorder reported", lambda r: r["reported"].get("dropped"), 0, False),
    ("missing timestamp slots", lambda r: r["verify"].get("timeline_missing_slots"), 0, False),
    ("lost frames", lambda r: r["lost_frames"], 0, False),
    ("longest frame ms", lambda r: r["verify"].get("longest_frame_ms"), 0, False),
    ("decoded duration s", lambda r: r["verify"].get("decoded_duration_s"), 3, False),
    ("longest gap between screens ms", lambda r: r.get("content", {}).get("max_interval_ms"), 0, False),
    ("launch → first frame ms", lambda r: ms(r.get("content", {}).get("first_frame_s")), 0, False),
    ("wall − N (start+finish) s", lambda r: r["overhead_s"], 2, False),
    ("file MB", lambda r: r["verify"].get("bytes", 0) / 1e6, 2, False),
    ("output checks", None, 0, False),
    ("disturbed runs (others > --disturbed)", "disturbed", 0, False),
]
# Rows only for the scenarios that paint a barcode (desktop, motion), and rows only when some
# recorder writes vfr or content.
BARCODE_ROWS = ("fresh", "repeated", "longest gap", "launch")
VFR_ROWS = ("longest frame",)


def header(machine: dict) -> str:
    return (f"reel vs ffmpeg x11grab — {machine['date']}, {machine['nproc']} CPUs ({machine['cpu_model']}), "
            f"{machine['ffmpeg'].split(' Copyright')[0]}, reel binary built {machine.get('reel_binary_built')}"
            + (f" from {machine['built_from']}" if machine.get("built_from") else "")
            + f", HEAD {machine.get('head_at_run')}")


def describe_recorders(args, recorders: list[str]) -> list[str]:
    """One line per recorder whose reel arguments differ from the defaults."""
    lines = []
    for name in recorders:
        if is_reel(name, args):
            extra = reel_extra_args(name, args)
            if extra:
                lines.append(f"{name}: reel with {shlex.join(extra)} (frame mode {frame_mode(name, args)})")
    return lines


def table(results: list[dict], baselines: dict, args, recorders: list[str]) -> str:
    lines = []
    # One ratio column per reel recorder against the matched ffmpeg.
    compared = [n for n in recorders if is_reel(n, args)] if "ffmpeg" in recorders else []
    any_vfr = any(frame_mode(n, args) != "cfr" for n in recorders)
    size = f"{args.width}x{args.height}"
    for scenario in args.scenarios:
        runs = {name: [r for r in results if r["scenario"] == scenario and r["recorder"] == name] for name in recorders}
        b = baselines.get(scenario, [])
        lines.append("")
        where = ""
        if scenario == "desktop" and getattr(args, "desktop_region", None):
            where = f", video window {args.desktop_region}, moving pointer"
        lines.append(f"## {scenario}: {size} @ {args.fps} fps{where}, {args.duration} s × {args.reps} runs, "
                     f"libx264 {args.preset} crf {args.crf} keyint {args.gop}, expected {args.duration * args.fps} frames"
                     + (" (cfr)" if any_vfr else ""))
        for line in describe_recorders(args, recorders):
            lines.append(line)
        if b:
            lines.append(f"idle (no recorder): Xvfb {mean([x['xvfb_cpu_per_s'] for x in b]):.3f}, painter "
                         f"{mean([x['painter_cpu_per_s'] for x in b]):.3f}, other processes "
                         f"{mean([x['other_cpu_per_s'] for x in b]):.3f} CPU s per s")
        head = ["metric (mean (min–max))"] + recorders + [f"{n}/ffmpeg (pairs)" for n in compared]
        rows = [head]
        for label, key, digits, ratio in METRICS:
            if key == "disturbed":
                row = [label] + [str(sum(r["disturbed"] for r in runs[n])) for n in recorders]
                rows.append(row + [""] * (len(head) - len(row)))
                continue
            if key is None:
                row = [label] + [
                    "ok" if all(r["verify"]["ok"] for r in runs[n]) and runs[n] else
                    f"{sum(not r['verify']['ok'] for r in runs[n])} BAD" for n in recorders]
                rows.append(row + [""] * (len(head) - len(row)))
                continue
            if scenario not in ("motion", "desktop") and label.startswith(BARCODE_ROWS):
                continue
            if not any_vfr and label.startswith(VFR_ROWS):
                continue
            if all(key(r) is None for n in recorders for r in runs[n]):
                continue  # a row an older JSON has no figures for
            row = [label] + [cell(runs[n], key, digits) for n in recorders]
            for n in compared:
                if not ratio:
                    row.append("")
                    continue
                # The ratio of the means, and the range of the ratios of each repetition's
                # pair (run next to each other, so slow drift of the machine cancels).
                a, f = mean([key(r) for r in runs[n]]), mean([key(r) for r in runs["ffmpeg"]])
                pairs = []
                for ra in runs[n]:
                    for rf in runs["ffmpeg"]:
                        if ra["rep"] == rf["rep"] and key(rf) and key(ra) is not None:
                            pairs.append(key(ra) / key(rf))
                text = f"{a / f:.2f}" if a is not None and f else "—"
                if len(pairs) > 1:
                    text += f" ({min(pairs):.2f}–{max(pairs):.2f})"
                row.append(text)
            rows.append(row)
        widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
        for k, r in enumerate(rows):
            lines.append("| " + " | ".join(c.ljust(widths[i]) for i, c in enumerate(r)) + " |")
            if k == 0:
                lines.append("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    return "\n".join(lines)


# ----------------------------------------------------------------------------------------------


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("-n", "--duration", type=int, default=20, help="seconds recorded per run (default 20)")
    p.add_argument("-r", "--reps", type=int, default=3, help="runs per recorder and scenario (default 3)")
    p.add_argument("--scenarios", default="still,desktop,motion",
                   help="still, desktop (a still desktop with a video playing in a window and a moving pointer), "
                        "motion (every pixel changes every frame); default all three")
    p.add_argument("--recorders", default="reel,ffmpeg,ffmpeg-default",
                   help="reel, reel-replay (reel with --replay beside the file), ffmpeg (settings matched to reel), "
                        "ffmpeg-default (the usual command line), and any --reel-variant NAME; "
                        "default reel, ffmpeg, ffmpeg-default")
    p.add_argument("--reel-args", default="", metavar="ARGS",
                   help="extra arguments for every reel recorder (not ffmpeg), one shell-quoted string, e.g. "
                        "\"--frame-mode content\"; the settings both recorders share (rate, encoder, duration, "
                        "cursor) cannot be given here")
    p.add_argument("--reel-variant", action="append", default=[], metavar="NAME=ARGS",
                   help="a recorder NAME that is reel with ARGS added (after --reel-args), to put several reel "
                        "configurations in one table: --reel-variant reel-content=\"--frame-mode content\" "
                        "--recorders reel,reel-content,ffmpeg. Repeatable")
    p.add_argument("--pointer-rests", metavar="MOVE,REST", default=None,
                   type=lambda text: tuple(float(s) for s in text.split(",")),
                   help="desktop: the pointer moves for MOVE seconds, then rests for REST, and so on "
                        "(as a presenter's does; default: it never rests)")
    p.add_argument("--no-cursor", action="store_true",
                   help="leave the pointer out of both recordings (reel --no-cursor, ffmpeg -draw_mouse 0); "
                        "by default both draw it")
    p.add_argument("--replay", type=int, default=30, help="seconds reel-replay keeps in its replay buffer (default 30)")
    p.add_argument("--reel", default=None, help="the reel binary (default: $REEL, else .build/release/reel)")
    p.add_argument("--fps", type=int, default=30)
    p.add_argument("--width", type=int, default=1920)
    p.add_argument("--height", type=int, default=1080)
    p.add_argument("--size", metavar="WxH", help="the screen's size: sets --width and --height (e.g. 3840x2160)")
    p.add_argument("--region", metavar="WxH+X+Y",
                   help="the desktop scenario's video window (default 640x360, 8%% of the width from the right "
                        "edge, 12%% of the height from the top); its top rows carry the barcode and must stay "
                        "off the pointer's path")
    p.add_argument("--frames-budget", type=int, default=1024, metavar="MIB",
                   help="at most this many MiB of frames for the motion scenario (on disk in bench/out and in "
                        "the X server): at 3840x2160 it loops 32 frames instead of 60 (default 1024)")
    p.add_argument("--preset", default="veryfast")
    p.add_argument("--crf", type=int, default=23)
    p.add_argument("--gop", type=int, default=60, help="keyframe interval in frames (default 60)")
    p.add_argument("--paint-rate", type=int, default=60,
                   help="paints per second in the motion and desktop scenarios (default 60)")
    p.add_argument("--display", type=int, default=77, help="first X display number to try (default 77)")
    p.add_argument("--baseline", type=float, default=10, help="seconds of idle measurement per scenario and rep")
    p.add_argument("--nice", type=int, default=-5, help="niceness for Xvfb and the painter (default -5; 0 leaves them)")
    p.add_argument("--quiet-threshold", type=float, default=0.15,
                   help="before each run, wait until other processes use less than this many CPUs (default 0.15)")
    p.add_argument("--quiet-wait", type=float, default=600, help="but wait at most this long (default 600 s)")
    p.add_argument("--disturbed", type=float, default=0.2,
                   help="a run during which other processes used more than this many CPUs on average is "
                        "disturbed and done again (default 0.2)")
    p.add_argument("--retries", type=int, default=2, help="how often a disturbed run is done again (default 2)")
    p.add_argument("--timeout", type=float, default=60, help="kill a recorder this long after N (default 60 s)")
    p.add_argument("--keep", action="store_true", help="keep the recorded files in bench/out/runs/")
    p.add_argument("--out", default=str(BENCH / "out"), help="where the JSON goes (default bench/out)")
    p.add_argument("--build", metavar="DIR", nargs="?", const="/tmp/reel-bench-head", default=None,
                   help="first build reel (release) from the committed HEAD, exported with `git archive` into "
                        "DIR/src and built in DIR/build (default /tmp/reel-bench-head), and use that: the figures "
                        "then belong to a commit, whatever is being edited in the working tree")
    p.add_argument("--from", dest="from_json", metavar="JSON", help="print the table of an earlier run's JSON and stop")
    # "--reel-args --no-x" would read as an option of its own: take the next word as the value.
    argv = sys.argv[1:]
    for i, a in enumerate(argv[:-1]):
        if a == "--reel-args":
            argv[i:i + 2] = [f"--reel-args={argv[i + 1]}"]
            break
    args = p.parse_args(argv)
    if args.from_json:
        doc = json.loads(Path(args.from_json).read_text())
        saved = argparse.Namespace(**doc["arguments"])
        print(header(doc["machine"]))
        print(table(doc["runs"], doc["baselines"], saved, saved.recorders))
        return 0
    if args.size:
        m = re.fullmatch(r"(\d+)x(\d+)", args.size)
        if not m:
            sys.exit(f"screen.py: --size is WxH, not '{args.size}'")
        args.width, args.height = int(m.group(1)), int(m.group(2))
    args.scenarios = [s for s in args.scenarios.split(",") if s]
    for s in args.scenarios:
        if s not in SCENARIOS:
            sys.exit(f"screen.py: unknown scenario {s} (still, desktop, motion)")
    args.variants = parse_variants(args.reel_variant)
    recorders = [r for r in args.recorders.split(",") if r]
    for r in recorders:
        if r not in REEL_RECORDERS + FFMPEG_RECORDERS and r not in args.variants:
            sys.exit(f"screen.py: unknown recorder {r}")
    for r in recorders:
        if is_reel(r, args):
            check_reel_args(reel_extra_args(r, args), r)
            if frame_mode(r, args) not in FRAME_MODES:
                sys.exit(f"screen.py: {r}: unknown frame mode '{frame_mode(r, args)}' ({', '.join(FRAME_MODES)})")
    if any(x in args.scenarios for x in ("desktop", "motion")) and args.paint_rate < 2 * args.fps:
        log(f"note: painting {args.paint_rate} times a second for {args.fps} fps: a capture late by less than a "
            f"frame can see the screen its predecessor saw, so the barcodes may count repeats and lost frames that "
            f"are only jitter; --paint-rate {2 * args.fps} avoids it")
    region = None
    if "desktop" in args.scenarios:
        try:
            region = desktop_region(args)
        except ValueError as e:
            sys.exit(f"screen.py: --region: {e}")
        check_desktop_geometry(args, region)
        args.desktop_region = str(region)

    for tool in ("Xvfb", "ffmpeg", "ffprobe", "gcc"):
        need(tool)
    reel = Path(args.reel or os.environ.get("REEL") or ROOT / ".build/release/reel").resolve()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    built_from = None
    if args.build:
        head = run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"]).stdout.strip()
        src, build = Path(args.build) / "src", Path(args.build) / "build"
        if src.exists():
            shutil.rmtree(src)
        src.mkdir(parents=True)
        log(f"building reel {head} (release) in {args.build}")
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", "--format=tar", "HEAD"], capture_output=True)
        if archive.returncode != 0:
            sys.exit(f"screen.py: git archive failed: {archive.stderr.decode()}")
        subprocess.run(["tar", "-x", "-C", str(src)], input=archive.stdout, check=True)
        r = subprocess.run(["swift", "build", "-c", "release", "--product", "reel", "--package-path", str(src),
                            "--scratch-path", str(build)], capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit(f"screen.py: swift build failed:\n{r.stdout[-3000:]}{r.stderr[-3000:]}")
        reel = build / "release" / "reel"
        built_from = f"{head} (committed HEAD)"
    if any(r.startswith("reel") for r in recorders) and not os.access(reel, os.X_OK):
        sys.exit(f"screen.py: no reel binary at {reel}; build it with `swift build -c release`, or pass --reel or --build")

    machine = machine_info(reel)
    machine["built_from"] = built_from
    painter = build_painter(out)
    # Only the frames the chosen scenarios paint: the motion scenario's are big on big screens.
    motion = still = desktop = None
    if "motion" in args.scenarios:
        count = motion_frame_count(args)
        if count < args.paint_rate:
            log(f"motion: looping {count} frames (not {args.paint_rate}: --frames-budget {args.frames_budget} MiB)")
        motion = motion_frames(out, args.width, args.height, count, args.paint_rate)
    if "still" in args.scenarios:
        still = still_frame(out, args.width, args.height, args.paint_rate)
    if region:
        region_frames, background = desktop_frames(out, args, region)
        desktop = (region_frames, background, region)

    screen = Screen(args, out, painter, motion, still, desktop)
    log(f"Xvfb :{screen.display} ({args.width}x{args.height}x24), pid {screen.xvfb.pid}"
        + (f", niceness {args.nice}" if screen.reniced else ""))
    results: list[dict] = []
    discarded: list[dict] = []
    baselines: dict[str, list] = {}
    started = time.monotonic()
    interrupted = False
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    try:
        for scenario in args.scenarios:
            log(f"scenario {scenario}: starting the painter")
            screen.paint(scenario)
            for rep in range(args.reps):
                b = baseline(screen, args.baseline)
                baselines.setdefault(scenario, []).append(b)
                log(f"  idle: Xvfb {b['xvfb_cpu_per_s']:.3f}, painter {b['painter_cpu_per_s']:.3f}, "
                    f"others {b['other_cpu_per_s']:.3f} CPU s/s")
                k = rep % len(recorders)
                order = recorders[k:] + recorders[:k]
                for name in order:
                    attempts = []
                    for attempt in range(args.retries + 1):
                        r = record_once(name, scenario, rep, screen, reel, args, b)
                        r["attempt"] = attempt
                        r["disturbed"] = r["other_cpu_s"] / r["wall_s"] > args.disturbed
                        attempts.append(r)
                        if not r["disturbed"]:
                            break
                        log(f"  {scenario} {name} rep {rep}: other processes used "
                            f"{r['other_cpu_s'] / r['wall_s']:.2f} CPU during the run"
                            + ("; once more" if attempt < args.retries else "; keeping the least disturbed run"))
                    r = min(attempts, key=lambda x: x["other_cpu_s"] / x["wall_s"])
                    for x in attempts:
                        if x is not r:
                            discarded.append(x)
                    results.append(r)
                    c = r.get("content", {})
                    log(f"  {scenario} {name:15} rep {rep}: recorder {r['recorder_cpu_per_s']:.3f} + Xvfb "
                        f"{r['xvfb_cpu_per_s']:.3f} CPU s/s, {r['peak_rss_mib']:.0f} MiB, "
                        f"{r['verify'].get('packets')} frames"
                        + (f", {c.get('fresh_frames')} fresh, first after {c.get('first_frame_s', 0) * 1000:.0f} ms"
                           if c else "")
                        + f", others {r['other_cpu_s'] / r['wall_s']:.2f}"
                        + ("" if r["verify"]["ok"] else f"  PROBLEMS: {r['verify']['problems']}"))
    except KeyboardInterrupt:
        interrupted = True
        log("interrupted: the table shows the runs done so far")
    finally:
        screen.close()

    # The encoders must have been configured alike: compare x264's own options strings.
    options = {}
    for r in results:
        o = r["verify"].get("x264_options")
        if o:
            options.setdefault(r["recorder"], set()).add(o)
    settings_note = []
    for name in recorders:
        if is_reel(name, args) and name in options and "ffmpeg" in options:
            a, b = sorted(options[name])[0].split(), sorted(options["ffmpeg"])[0].split()
            diff = sorted(set(a) ^ set(b))
            settings_note.append(f"x264 options {name} vs ffmpeg: " + ("identical" if not diff else "DIFFER: " + " ".join(diff)))
    for name in recorders:
        if is_reel(name, args) and name in options:
            settings_note.append(f"x264 options ({name}): " + sorted(options[name])[0])
            break

    text = table(results, baselines, args, recorders)
    print(header(machine))
    print(text)
    print()
    for line in settings_note:
        print(line)
    print(f"(the run took {(time.monotonic() - started) / 60:.1f} min)")

    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    path = out / f"screen-{stamp}.json"
    doc = {"machine": machine, "interrupted": interrupted, "arguments": vars(args) | {"recorders": recorders}, "command": sys.argv,
           "baselines": baselines, "runs": results, "discarded_disturbed_runs": discarded, "x264_options": {k: sorted(v) for k, v in options.items()},
           "table": text}
    path.write_text(json.dumps(doc, indent=1))
    print(f"raw figures: {path}")
    bad = [r for r in results if not r["verify"]["ok"]]
    return 1 if bad or interrupted else 0


if __name__ == "__main__":
    sys.exit(main())
