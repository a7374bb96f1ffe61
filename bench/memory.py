#!/usr/bin/env python3
"""Where reel's memory is, against ffmpeg's: peak RSS broken down by what holds it.

Runs `reel --version` and `ffmpeg -version` (each held at its exit by strace, so that its
memory can be read), then records bench/screen.py's screens (still, desktop, motion) with
`reel record --screen` and `ffmpeg -f x11grab` at the same settings as screen.py, one after the
other. While a recorder runs, /proc/PID/smaps is read every --interval seconds and the reading
with the most RSS is kept. Its mappings are grouped (the recorder's own binary, the FFmpeg
libraries, x264, other shared libraries, MIT-SHM shared memory, anonymous memory); the pages of
a statically linked reel that are resident (/proc/PID/pagemap, root only) are attributed to
the symbols of the unstripped binary (--symbols) and so to the Swift runtime, Foundation, ICU,
Dispatch or Reel's own code. Peak RSS is also `ru_maxrss` from wait4.

Memory figures do not need a quiet machine (unlike CPU and timing), but a loaded machine makes
frames wait longer for the encoder, and reel makes capture buffers as frames in flight need
them: its shared memory can be higher under load.

Python 3 standard library only; needs strace, Xvfb, ffmpeg with libx264 and gcc (as screen.py).
"""

from __future__ import annotations

import argparse
import bisect
import json
import os
import re
import signal
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))
import screen  # noqa: E402  (bench/screen.py: the Xvfb, the painter, the recorders' commands)

PAGE = os.sysconf("SC_PAGE_SIZE")
KIB = 1024


# ----------------------------------------------------------------------------------------------
# reading a process's memory


def read_smaps(pid: int) -> list[dict]:
    """The mappings of /proc/PID/smaps: start, end, offset, path, and the kB fields."""
    maps, cur = [], None
    with open(f"/proc/{pid}/smaps") as f:
        for line in f:
            parts = line.split()
            if "-" in parts[0] and len(parts) >= 5 and not parts[0].endswith(":"):
                start, end = (int(x, 16) for x in parts[0].split("-"))
                cur = {"start": start, "end": end, "perms": parts[1], "offset": int(parts[2], 16),
                       "path": " ".join(parts[5:]) if len(parts) > 5 else ""}
                maps.append(cur)
            elif cur is not None and parts[0].endswith(":") and len(parts) >= 2 and parts[1].isdigit():
                cur[parts[0][:-1]] = int(parts[1])
    return maps


def resident_pages(pid: int, start: int, end: int) -> list[int]:
    """Addresses of the pages in [start, end) that are in memory (pagemap bit 63)."""
    out = []
    with open(f"/proc/{pid}/pagemap", "rb") as f:
        f.seek(start // PAGE * 8)
        data = f.read((end - start) // PAGE * 8)
    for i, (entry,) in enumerate(struct.iter_unpack("<Q", data)):
        if entry >> 63:
            out.append(start + i * PAGE)
    return out


# ----------------------------------------------------------------------------------------------
# what a page of the static reel binary belongs to


class Symbols:
    """The unstripped binary's symbols and sections, to name what a resident page holds."""

    def __init__(self, binary: Path):
        self.segments = []  # (file offset, size, vaddr)
        out = subprocess.run(["readelf", "-lW", str(binary)], capture_output=True, text=True, check=True).stdout
        for line in out.splitlines():
            parts = line.split()
            if parts and parts[0] == "LOAD":
                self.segments.append((int(parts[1], 16), int(parts[4], 16), int(parts[2], 16)))
        syms = []
        out = subprocess.run(["nm", "-S", "--defined-only", str(binary)], capture_output=True, text=True,
                             check=True).stdout
        for line in out.splitlines():
            parts = line.split()
            if len(parts) == 4:
                syms.append((int(parts[0], 16), int(parts[1], 16), parts[3]))
        syms.sort()
        self.addrs = [s[0] for s in syms]
        self.syms = syms
        self.sections = []
        out = subprocess.run(["readelf", "-SW", str(binary)], capture_output=True, text=True, check=True).stdout
        for line in out.splitlines():
            line = line.replace("[ ", "[")
            parts = line.split()
            if len(parts) > 5 and parts[0].startswith("[") and parts[0] != "[Nr]":
                try:
                    addr, size = int(parts[3], 16), int(parts[5], 16)
                except ValueError:
                    continue
                if addr:
                    self.sections.append((addr, addr + size, parts[1]))

    def vaddr(self, file_offset: int) -> int | None:
        for off, size, va in self.segments:
            if off <= file_offset < off + size:
                return va + file_offset - off
        return None

    def section(self, va: int) -> str:
        for a, b, name in self.sections:
            if a <= va < b:
                return name
        return "?"

    def owners(self, va: int) -> dict[str, int]:
        """Bytes of the page at va that each component's symbols cover; the rest by section."""
        result: dict[str, int] = {}
        lo, hi = va, va + PAGE
        i = max(0, bisect.bisect_right(self.addrs, lo) - 1)
        # Large symbols (ICU's data) start far before the page: look back a little.
        j = i
        while j > 0 and self.addrs[j] + self.syms[j][1] <= lo and lo - self.addrs[j] < (1 << 16):
            j -= 1
        covered = 0
        for k in range(max(0, j - 8), len(self.syms)):
            a, size, name = self.syms[k]
            if a >= hi:
                break
            s, e = max(a, lo), min(a + size, hi)
            if e > s:
                comp = component(name)
                result[comp] = result.get(comp, 0) + (e - s)
                covered += e - s
        if covered < PAGE:
            key = f"other ({self.section(va)})"
            result[key] = result.get(key, 0) + PAGE - covered
        return result


REEL_MODULES = ("4Reel", "8ReelCore", "10ReelSystem", "10ReelFFmpeg", "9ReelLinux", "7ReelCLI", "11ReelPreview",
                "4reel")


def component(name: str) -> str:
    if name.startswith("icudt"):
        return "ICU data (icudt)"
    if re.match(r"swift_u[a-z0-9]*_", name) or re.match(r"_ZN?K?6icu_", name) or name.endswith("_76") \
            or "icu_76" in name or name.startswith("_ZN6icu_") or name.startswith("ucnv_") \
            or name.startswith("u_") or name.startswith("ures_") or name.startswith("uprv_"):
        return "ICU code"
    for m in REEL_MODULES:
        if name.startswith("$s" + m) or name.startswith("$s" + m[len(str(len(m) - 1)):]):
            return "Reel (our code)"
    if name.startswith(("$s20FoundationEssentials", "$s22_FoundationCollections", "$s18_FoundationCShims")):
        return "FoundationEssentials"
    if name.startswith("$s30FoundationInternationalization"):
        return "FoundationInternationalization"
    if name.startswith(("$s10Foundation", "_CF", "__CF", "CF", "_NS", "__NS", "_ZN10Foundation")) \
            or "Foundation" in name[:40]:
        return "Foundation (swift-corelibs, CoreFoundation)"
    if name.startswith(("$s8Dispatch", "_dispatch", "dispatch_", "_os_", "_voucher", "_firehose")):
        return "Dispatch"
    if name.startswith(("$s7Testing", "$s15Synchronization")):
        return "Swift runtime and standard library"
    if name.startswith(("$ss", "$sS", "$sB", "swift_", "_swift", "_ZN5swift", "_ZNK5swift", "$s")):
        return "Swift runtime and standard library"
    if name.startswith(("reel_", "reelconvert", "convert_")):
        return "Reel (our code)"
    return "other symbols (C runtime, C targets)"


# ----------------------------------------------------------------------------------------------
# grouping a reading


FFMPEG_LIBS = ("libavcodec", "libavformat", "libavutil", "libavfilter", "libavdevice", "libswscale",
               "libswresample", "libpostproc")


# A reel built with `swift build` (not scripts/build-release) loads the Swift toolchain's libraries.
FOUNDATION_LIBS = ("libFoundation.so", "libFoundationInternationalization.so", "lib_FoundationICU.so",
                   "libFoundationXML.so", "libFoundationNetworking.so")
SWIFT_LIBS = ("libswiftCore.so", "libswift_", "libswiftGlibc.so", "libswiftSynchronization.so",
              "libswiftObservation.so", "libswiftDispatch.so", "libdispatch.so", "libBlocksRuntime.so")


def group(path: str, binary: str) -> str:
    name = os.path.basename(path)
    if path == binary:
        return "the program's own file"
    if path.startswith("/SYSV") or "SYSV" in path:
        return "shared memory (MIT-SHM capture buffers)"
    if name.startswith(FFMPEG_LIBS):
        return "FFmpeg libraries (files)"
    if name.startswith(FOUNDATION_LIBS):
        return "Foundation, FoundationInternationalization, ICU (toolchain files)"
    if name.startswith("libFoundationEssentials.so"):
        return "FoundationEssentials (toolchain file)"
    if name.startswith(SWIFT_LIBS):
        return "Swift runtime, standard library, Concurrency, Dispatch (toolchain files)"
    if name.startswith("libx264"):
        return "x264 (file)"
    if path.startswith("/") and ".so" in name:
        return "other shared libraries (files)"
    if path in ("[heap]", ""):
        return "anonymous: heap and mmap (frames, x264, queues)"
    if path == "[stack]":
        return "stack"
    return f"other ({path})"


def summarise(maps: list[dict], binary: str) -> dict[str, float]:
    """MiB of RSS per group; a library's relocated, written pages count as 'anonymous in
    library mappings' (they are private copies, not the file)."""
    out: dict[str, float] = {}
    for m in maps:
        rss = m.get("Rss", 0)
        if not rss:
            continue
        g = group(m["path"], binary)
        anon = m.get("Anonymous", 0) if m["path"].startswith("/") and "SYSV" not in m["path"] else 0
        if anon:
            out["anonymous in the program's and libraries' data (relocations, globals)"] = \
                out.get("anonymous in the program's and libraries' data (relocations, globals)", 0) + anon / KIB
        out[g] = out.get(g, 0) + (rss - anon) / KIB
    return out


def binary_pages(pid: int, maps: list[dict], binary: str) -> list[int]:
    """File offsets of the program's own pages that are resident (read at once, named later)."""
    offsets = []
    for m in maps:
        if m["path"] == binary and m.get("Rss"):
            offsets += [m["offset"] + page - m["start"] for page in resident_pages(pid, m["start"], m["end"])]
    return offsets


def binary_breakdown(offsets: list[int], symbols: Symbols) -> dict[str, float]:
    """MiB of the program's own resident pages, by component."""
    out: dict[str, float] = {}
    for offset in offsets:
        va = symbols.vaddr(offset)
        if va is None:
            continue
        for comp, n in symbols.owners(va).items():
            out[comp] = out.get(comp, 0) + n / (KIB * KIB)
    return out


# ----------------------------------------------------------------------------------------------
# running a recorder and watching it


class Watch:
    """Reads smaps of pid every interval and keeps the reading with the most RSS."""

    def __init__(self, pid: int, binary: str, symbols: Symbols | None, interval: float):
        self.pid, self.binary, self.symbols, self.interval = pid, binary, symbols, interval
        self.peak_kb, self.peak = 0, None
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def sample(self) -> None:
        try:
            maps = read_smaps(self.pid)
            total = sum(m.get("Rss", 0) for m in maps)
            if total > self.peak_kb:
                pages = binary_pages(self.pid, maps, self.binary) if self.symbols else []
                self.peak_kb, self.peak = total, (summarise(maps, self.binary), pages)
        except (OSError, ValueError):
            pass

    def run(self) -> None:
        while not self.stop.is_set():
            self.sample()
            self.stop.wait(self.interval)

    def finish(self) -> tuple[dict, dict]:
        """Stops reading; the peak reading's groups and its binary's breakdown."""
        self.stop.set()
        self.thread.join()
        if self.peak is None:
            return {}, {}
        return self.peak[0], binary_breakdown(self.peak[1], self.symbols) if self.symbols else {}


def real_binary(cmd: list[str]) -> str:
    return os.path.realpath(cmd[0] if "/" in cmd[0] else subprocess.run(
        ["which", cmd[0]], capture_output=True, text=True).stdout.strip())


def timed(cmd: list[str], stderr) -> tuple[subprocess.Popen, "callable"]:
    """Starts cmd under /usr/bin/time, whose ru_maxrss is the program's own: a child forked
    from this (large) Python would count the parent's pages it shared before exec."""
    path = Path(f"/tmp/memory-py-{os.getpid()}-{time.monotonic_ns()}.maxrss")
    p = subprocess.Popen(["/usr/bin/time", "-f", "%M", "-o", str(path)] + cmd, stdin=subprocess.DEVNULL,
                         stdout=subprocess.DEVNULL, stderr=stderr)

    def maxrss() -> int:
        text = path.read_text().strip().splitlines()
        path.unlink(missing_ok=True)
        return int(text[-1])
    return p, maxrss


def child_of(parent: int, binary: str) -> int:
    """The pid of parent's child running binary (after its exec), waiting up to 10 s."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        kids = subprocess.run(["pgrep", "-P", str(parent)], capture_output=True, text=True).stdout.split()
        if kids and os.path.realpath(f"/proc/{kids[0]}/exe") == binary:
            return int(kids[0])
        time.sleep(0.02)
    sys.exit(f"memory.py: {binary} did not start")


def held_at_exit(cmd: list[str], symbols: Symbols | None) -> dict:
    """Runs cmd under strace, which holds it for 2 s as it exits, and reads it then."""
    proc = subprocess.Popen(["strace", "-f", "-qq", "-o", "/dev/null", "-e", "trace=exit_group",
                             "-e", "inject=exit_group:delay_enter=5000000"] + cmd,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    binary = real_binary(cmd)
    child = child_of(proc.pid, binary)
    time.sleep(1.5)  # into the 5 s hold: the program has done everything but exit
    watch = Watch(child, binary, symbols, 10)
    time.sleep(0.3)
    groups, breakdown = watch.finish()
    proc.wait()
    # ru_maxrss without strace in between.
    p, maxrss = timed(cmd, subprocess.DEVNULL)
    p.wait()
    return {"command": cmd, "peak_rss_mib": maxrss() / KIB, "smaps_rss_mib": watch.peak_kb / KIB,
            "groups": groups, "binary": breakdown}


def record(name: str, scenario: str, scr: "screen.Screen", reel: Path, args, symbols: Symbols | None) -> dict:
    output = scr.out / "runs" / f"memory-{scenario}-{name}.mp4"
    output.parent.mkdir(parents=True, exist_ok=True)
    output.unlink(missing_ok=True)
    cmd = screen.recorder_command(name, reel, scr.display, args, output)
    proc, maxrss = timed(cmd, subprocess.PIPE)
    binary = real_binary(cmd)
    pid = child_of(proc.pid, binary)
    watch = Watch(pid, binary, symbols if screen.is_reel(name, args) else None, args.interval)
    timer = threading.Timer(args.duration + 60, lambda: os.kill(pid, signal.SIGKILL))
    timer.start()
    err = proc.stderr.read().decode(errors="replace")
    code = proc.wait()
    timer.cancel()
    groups, breakdown = watch.finish()
    peak = maxrss()
    err = err[-500:]
    frames = screen.run(["ffprobe", "-v", "error", "-count_packets", "-select_streams", "v:0", "-show_entries",
                         "stream=nb_read_packets", "-of", "csv=p=0", str(output)]).stdout.strip()
    output.unlink(missing_ok=True)
    return {"recorder": name, "scenario": scenario, "command": cmd, "exit_code": code, "stderr": err,
            "frames": frames, "peak_rss_mib": peak / KIB, "smaps_rss_mib": watch.peak_kb / KIB,
            "groups": groups, "binary": breakdown}


# ----------------------------------------------------------------------------------------------
# the table


def table(title: str, runs: list[dict]) -> str:
    keys: list[str] = []
    for r in runs:
        for k in sorted(r["groups"], key=lambda k: -r["groups"][k]):
            if k not in keys:
                keys.append(k)
    names = [r.get("recorder") or os.path.basename(r["command"][0]) for r in runs]
    lines = [f"#### {title}", "", "| MiB | " + " | ".join(names) + " |", "|---|" + "---|" * len(runs)]
    lines.append("| **peak RSS (`ru_maxrss`)** | " + " | ".join(f"**{r['peak_rss_mib']:.1f}**" for r in runs) + " |")
    lines.append("| RSS of the reading kept (smaps) | " + " | ".join(f"{r['smaps_rss_mib']:.1f}" for r in runs) + " |")
    for k in keys:
        lines.append(f"| {k} | " + " | ".join(f"{r['groups'].get(k, 0):.1f}" for r in runs) + " |")
        if k == "the program's own file":
            comps: list[str] = []
            for r in runs:
                for c in sorted(r["binary"], key=lambda c: -r["binary"][c]):
                    if c not in comps and r["binary"][c] >= 0.05:
                        comps.append(c)
            for c in comps:
                lines.append(f"| &nbsp;&nbsp;of which {c} | " +
                             " | ".join(f"{r['binary'].get(c, 0):.1f}" if r["binary"] else "" for r in runs) + " |")
    if any("frames" in r for r in runs):
        lines.append("| frames in file | " + " | ".join(str(r.get("frames", "")) for r in runs) + " |")
    return "\n".join(lines)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--reel", default=None, help="the reel binary (default: $REEL, else .build/release/reel)")
    p.add_argument("--symbols", default=None,
                   help="the unstripped binary of --reel (for a stripped .build/dist/reel-core: .build/release/reel)"
                        "; default --reel itself")
    p.add_argument("--scenarios", default="version,still,desktop,motion",
                   help="version (reel --version against ffmpeg -version), still, desktop, motion (screen.py's)")
    p.add_argument("--recorders", default="reel,ffmpeg")
    p.add_argument("-n", "--duration", type=int, default=10, help="seconds recorded per run (default 10)")
    p.add_argument("--interval", type=float, default=0.1, help="seconds between readings (default 0.1)")
    p.add_argument("--fps", type=int, default=30)
    p.add_argument("--size", default="1920x1080")
    p.add_argument("--preset", default="veryfast")
    p.add_argument("--out", default=str(BENCH / "out"))
    args = p.parse_args()
    args.width, args.height = (int(x) for x in args.size.split("x"))
    # What screen.py's helpers read from its own arguments.
    args.crf, args.gop, args.paint_rate, args.display, args.nice = 23, 60, 60, 77, -5
    args.no_cursor, args.replay, args.reel_args, args.variants, args.frames_budget = False, 30, "", {}, 1024
    args.region, args.pointer_rests = None, None
    scenarios = [s for s in args.scenarios.split(",") if s]
    recorders = [r for r in args.recorders.split(",") if r]
    reel = Path(args.reel or os.environ.get("REEL") or screen.ROOT / ".build/release/reel").resolve()
    symbols = Symbols(Path(args.symbols or reel)) if os.geteuid() == 0 else None
    if symbols is None:
        screen.log("not root: /proc/PID/pagemap is unreadable, the binary is not broken down")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    results, tables = [], []
    print(f"reel: {reel} ({reel.stat().st_size / KIB / KIB:.1f} MiB on disk)")
    if "version" in scenarios:
        runs = [held_at_exit([str(reel), "--version"], symbols), held_at_exit(["ffmpeg", "-version"], None)]
        results += runs
        tables.append(table("`reel --version` against `ffmpeg -version`", runs))
        print(tables[-1] + "\n", flush=True)
    screens = [s for s in scenarios if s != "version"]
    if screens:
        painter = screen.build_painter(out)
        motion = still = desktop = None
        if "motion" in screens:
            motion = screen.motion_frames(out, args.width, args.height, screen.motion_frame_count(args), 60)
        if "still" in screens:
            still = screen.still_frame(out, args.width, args.height, 60)
        if "desktop" in screens:
            region = screen.desktop_region(args)
            args.desktop_region = str(region)
            desktop = (*screen.desktop_frames(out, args, region), region)
        scr = screen.Screen(args, out, painter, motion, still, desktop)
        try:
            for scenario in screens:
                try:
                    scr.paint(scenario)
                except SystemExit:
                    # Xvfb resets when its last client (the previous painter) leaves; while it
                    # does, a new client can be refused: once more, a moment later.
                    time.sleep(2)
                    scr.paint(scenario)
                runs = []
                for name in recorders:
                    screen.log(f"{scenario}: {name}")
                    runs.append(record(name, scenario, scr, reel, args, symbols))
                results += runs
                tables.append(table(f"{scenario}: {args.size} at {args.fps} fps, {args.duration} s, "
                                    f"libx264 {args.preset} crf 23 keyint 60", runs))
                print(tables[-1] + "\n", flush=True)
        finally:
            scr.close()
    path = out / f"memory-{time.strftime('%Y%m%d-%H%M%S')}.json"
    for r in results:
        r.pop("maps", None)
    path.write_text(json.dumps({"reel": str(reel), "arguments": vars(args), "runs": results}, indent=1, default=str))
    screen.log(f"raw figures: {path}")
    return 0 if all(r.get("exit_code", 0) == 0 for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
