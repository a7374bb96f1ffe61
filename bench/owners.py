#!/usr/bin/env python3
"""Where the memory is, by owner: reel against ffmpeg at its peak, in the rows issue 32 asks for.

usage: python3 bench/owners.py --reel REEL [--symbols UNSTRIPPED] [--display 97] [-n 10] [--runs 2]

Runs `reel --version` / `ffmpeg -version` (held at exit_group by strace, then smaps read), and
records, one after the other: an X screen (`--screen=:DISPLAY`, whatever it shows; start an
`Xvfb :97 -screen 0 1920x1080x24` first) against `ffmpeg -f x11grab` with bench/screen.py's
settings, and reel's `--test-pattern` against ffmpeg's `testsrc2` (not the same picture source:
the rows show what each one's source holds). Each recording runs --runs times plain (peak RSS
is `ru_maxrss`; /proc/PID/smaps read every 0.1 s, the largest reading kept) and once more with
bench/memowners.c preloaded, which names the owners of the large heap blocks resident at the
peak (x264's pictures, reel's frame pools, libavutil's frames). Mappings are grouped by who
brings them: the program's file, the FFmpeg libraries, libavfilter with the libraries only it
pulls in, libavdevice likewise (ffmpeg only), x264, reel's own system libraries, the rest.

Python 3 standard library; needs strace, gcc, ffmpeg with libx264, addr2line (binutils).
"""

from __future__ import annotations

import argparse
import collections
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))
from memory import read_smaps  # noqa: E402

LIBDIR = "/lib/x86_64-linux-gnu/"
FFMPEG_LIBS = ("libavcodec", "libavformat", "libavutil", "libswscale", "libswresample", "libpostproc")
ALLOCATORS = ("memowners", "libc.so")
SWIFT_ALLOCATORS = ("swift_slowAlloc", "static UnsafeMutableRawPointer.allocate", "swift_allocObject")


def stem(path: str) -> str:
    return os.path.basename(path).split(".so")[0]


def needed(binary: str) -> list[str]:
    out = subprocess.run(["readelf", "-d", binary], capture_output=True, text=True, check=True).stdout
    return [line.split("[")[1].rstrip("]") for line in out.splitlines() if "(NEEDED)" in line]


def closure(libs: list[str]) -> set[str]:
    """The libraries that loading libs loads (ldd), by stem."""
    out = set()
    for lib in libs:
        out.add(stem(lib))
        ldd = subprocess.run(["ldd", LIBDIR + lib], capture_output=True, text=True).stdout
        out |= {stem(line.split()[0]) for line in ldd.splitlines() if line.split()}
    return out


class Groups:
    """Which row a mapping's file belongs to, from the two programs' library closures."""

    def __init__(self, reel: str):
        reel_libs, ff_libs = needed(reel), needed(real("ffmpeg"))
        self.filter_only = closure(reel_libs) - closure([x for x in reel_libs if "avfilter" not in x])
        self.device_only = closure(ff_libs) - closure([x for x in ff_libs if "avdevice" not in x])
        self.reel_system = closure(reel_libs) - closure(ff_libs)

    def of(self, path: str, binary: str) -> str:
        name = stem(path)
        if path == binary:
            return "the program's own file (code, data, its written pages)"
        if "SYSV" in path:
            return "shared memory (MIT-SHM capture buffers)"
        if not path.startswith("/"):
            return "anonymous" if path in ("", "[heap]") else "stack, vdso"
        if name == "memowners":
            return "memowners.so (the probe)"
        if name == "libavfilter" or name in self.filter_only:
            return "libavfilter and the libraries only it pulls in"
        if name == "libavdevice" or name in self.device_only:
            return "libavdevice and the libraries only it pulls in"
        if name.startswith(FFMPEG_LIBS):
            return "FFmpeg libraries (avcodec, avformat, avutil, swscale, swresample)"
        if name == "libx264":
            return "x264's library"
        if name in self.reel_system:
            return "reel's own system libraries (XCB extensions, PulseAudio, PipeWire, D-Bus)"
        return "other shared libraries (libc, libstdc++, codecs and network libraries FFmpeg links)"


def real(cmd0: str) -> str:
    return os.path.realpath(cmd0 if "/" in cmd0 else subprocess.run(["which", cmd0], capture_output=True,
                                                                    text=True).stdout.strip())


def summarise(maps: list[dict], binary: str, groups: Groups) -> collections.Counter:
    out = collections.Counter()
    for m in maps:
        out[groups.of(m["path"], binary)] += m.get("Rss", 0) / 1024
    return out


class Namer:
    """Names a reel frame with the unstripped binary's symbol (addr2line + swift-demangle)."""

    def __init__(self, symbols: str | None):
        self.symbols, self.cache = symbols, {}
        self.demangle = next((p for p in ("/opt/swift/usr/bin/swift-demangle",) if os.path.exists(p)), None)

    def __call__(self, frame: str) -> str:
        if not self.symbols:
            return frame
        if frame not in self.cache:
            out = subprocess.run(["addr2line", "-f", "-e", self.symbols, frame.split("+")[1]], capture_output=True,
                                 text=True).stdout.splitlines()
            name = out[0] if out else frame
            if self.demangle:
                name = subprocess.run([self.demangle, "--simplified", "--compact"], input=name,
                                      capture_output=True, text=True).stdout.strip() or name
            self.cache[frame] = name.split("(")[0]
        return self.cache[frame]


def owners(path: Path, name: Namer) -> collections.Counter:
    """MiB resident of the large blocks at the peak, by the first frame that is not an allocator."""
    out = collections.Counter()
    for line in path.read_text().splitlines():
        if line.startswith("#"):
            continue
        parts = line.split()
        frames = [f for f in parts[3:] if not f.startswith(ALLOCATORS)]
        key = "?"
        if frames and frames[0].startswith("reel+"):
            names = [name(f) for f in frames[:4] if f.startswith("reel+")]
            names = [n for n in names if not n.startswith(SWIFT_ALLOCATORS)]
            key = "reel: " + (names[0] if names else frames[0])
        elif frames and frames[0].startswith("libavutil"):
            caller = next((f for f in frames if not f.startswith("libavutil")), "?")
            key = "libavutil frames for " + (name(caller) if caller.startswith("reel+") else caller.split("+")[0])
        elif frames:
            key = frames[0].split("+")[0].split(".so")[0]
        out[key] += int(parts[0]) / 1024
    return out


def watch(cmd: list[str], prefix: Path, preload: str | None, interval: float) -> dict:
    """Runs cmd under /usr/bin/time; the largest smaps reading, ru_maxrss, and the owners file.
    The output (cmd's last argument) is removed first: reel never overwrites a file."""
    Path(cmd[-1]).unlink(missing_ok=True)
    env = ["env", f"LD_PRELOAD={preload}", f"MEMOWNERS_OUT={prefix}.owners"] if preload else []
    p = subprocess.Popen(["/usr/bin/time", "-f", "%M", "-o", f"{prefix}.maxrss"] + env + cmd,
                         stdout=subprocess.DEVNULL, stderr=open(f"{prefix}.err", "w"))
    binary, pid, best, best_maps = real(cmd[0]), None, 0, []
    while p.poll() is None:
        if pid is None:
            kids = subprocess.run(["pgrep", "-P", str(p.pid)], capture_output=True, text=True).stdout.split()
            if kids and os.path.realpath(f"/proc/{kids[0]}/exe") == binary:
                pid = int(kids[0])
        if pid:
            try:
                maps = read_smaps(pid)
                rss = sum(m.get("Rss", 0) for m in maps)
                if rss > best:
                    best, best_maps = rss, maps
            except (OSError, ValueError):
                pass
        time.sleep(interval)
    return {"code": p.returncode, "maxrss": int(Path(f"{prefix}.maxrss").read_text().split()[-1]) / 1024,
            "smaps": best / 1024, "maps": best_maps, "binary": binary}


def held(cmd: list[str]) -> dict:
    """cmd held for 3 s as it exits (strace), its smaps read then; ru_maxrss from a run without strace."""
    s = subprocess.Popen(["strace", "-f", "-qq", "-o", "/dev/null", "-e", "trace=exit_group",
                          "-e", "inject=exit_group:delay_enter=3000000"] + cmd,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(1.5)
    pid = int(subprocess.run(["pgrep", "-P", str(s.pid)], capture_output=True, text=True).stdout.split()[0])
    maps = read_smaps(pid)
    s.wait()
    out = subprocess.run(["/usr/bin/time", "-f", "%M"] + cmd, capture_output=True, text=True).stderr
    return {"code": 0, "maxrss": int(out.split()[-1]) / 1024, "smaps": sum(m.get("Rss", 0) for m in maps) / 1024,
            "maps": maps, "binary": real(cmd[0])}


def frames(path: str) -> str:
    return subprocess.run(["ffprobe", "-v", "error", "-count_packets", "-select_streams", "v:0", "-show_entries",
                           "stream=nb_read_packets", "-of", "csv=p=0", path], capture_output=True,
                          text=True).stdout.strip()


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--reel", required=True)
    p.add_argument("--symbols", help="the unstripped binary of --reel, to name reel's allocations")
    p.add_argument("--display", type=int, default=97)
    p.add_argument("-n", "--duration", type=int, default=10)
    p.add_argument("--runs", type=int, default=2)
    p.add_argument("--reel-args", default="", help="more reel record arguments (e.g. --no-adapt)")
    args = p.parse_args()
    work = Path(tempfile.mkdtemp(prefix="owners-"))
    shim = work / "memowners.so"
    subprocess.run(["gcc", "-O2", "-shared", "-fPIC", "-o", str(shim), str(BENCH / "memowners.c"), "-ldl",
                    "-lpthread"], check=True)
    reel = os.path.realpath(args.reel)
    groups, name = Groups(reel), Namer(args.symbols)
    n, out = str(args.duration), str(work / "out.mp4")
    x264 = ["-c:v", "libx264", "-preset", "veryfast", "-crf", "23", "-g", "60", "-pix_fmt", "yuv420p"]
    ff = ["ffmpeg", "-nostdin", "-hide_banner", "-loglevel", "error", "-y"]
    rec = [reel, "record", "--fps", "30", "--preset", "veryfast", "--crf", "23", "--keyframe-interval", "60",
           "--duration", n] + args.reel_args.split()
    recordings = {
        "reel, screen": rec + [f"--screen=:{args.display}", "-o", out],
        "ffmpeg, x11grab": ff + ["-f", "x11grab", "-framerate", "30", "-video_size", "1920x1080", "-draw_mouse", "1",
                                 "-i", f":{args.display}", "-t", n, "-vf",
                                 "scale=flags=neighbor:out_color_matrix=bt709:out_range=tv"] + x264 +
                                ["-colorspace", "bt709", "-color_range", "tv", out],
        "reel, test pattern": rec + ["--test-pattern", "--size", "1920x1080", "-o", out],
        "ffmpeg, testsrc2": ff + ["-f", "lavfi", "-i", "testsrc2=size=1920x1080:rate=30", "-t", n] + x264 + [out],
    }
    columns = {"reel --version": held([reel, "--version"]), "ffmpeg -version": held(["ffmpeg", "-version"])}
    peaks: dict[str, list[float]] = {k: [columns[k]["maxrss"]] for k in columns}
    notes = {k: "" for k in columns}
    load = [os.getloadavg()[0]]
    for label, cmd in recordings.items():
        peaks[label] = []
        for i in range(args.runs):
            r = watch(cmd, work / f"{i}", None, 0.1)
            peaks[label].append(r["maxrss"])
            if i == 0 or r["smaps"] > columns[label]["smaps"]:
                columns[label] = r
            notes[label] = f"{frames(out)} frames"
            load.append(os.getloadavg()[0])
        r = watch(cmd, work / "own", str(shim), 0.1)
        columns[label]["owners"] = owners(work / "own.owners", name)
        columns[label]["probed_anonymous"] = summarise(r["maps"], r["binary"], groups).get("anonymous", 0)
        print(f"{label}: peak RSS {peaks[label]} MiB, {notes[label]}", file=sys.stderr)
    rows: list[str] = []
    sums = {k: summarise(c["maps"], c["binary"], groups) for k, c in columns.items()}
    for k in sums:
        for g in sorted(sums[k], key=lambda g: -sums[k][g]):
            if g not in rows and g != "anonymous":
                rows.append(g)
    labels = list(columns)
    print(f"| MiB | " + " | ".join(labels) + " |\n|---|" + "---|" * len(labels))
    print("| **peak RSS (`ru_maxrss`)** | " + " | ".join(
        "**" + "–".join(f"{x:.1f}" for x in sorted({min(peaks[k]), max(peaks[k])})) + "**" for k in labels) + " |")
    print("| the largest smaps reading | " + " | ".join(f"{columns[k]['smaps']:.1f}" for k in labels) + " |")
    for g in rows:
        print(f"| {g} | " + " | ".join(f"{sums[k].get(g, 0):.1f}" for k in labels) + " |")
    print("| anonymous memory (heap, `mmap`) | " + " | ".join(f"{sums[k].get('anonymous', 0):.1f}" for k in labels) + " |")
    owner_rows: list[str] = []
    for k in labels:
        for o, v in columns[k].get("owners", collections.Counter()).most_common():
            if o not in owner_rows and v >= 0.5:
                owner_rows.append(o)
    for o in owner_rows:
        print(f"| · large blocks of {o} (at the probed run's peak) | " +
              " | ".join(f"{columns[k]['owners'].get(o, 0):.1f}" if "owners" in columns[k] else "" for k in labels) + " |")
    print("| · the rest: small blocks (runtime metadata, queues' nodes, strings), threads' stacks, the probe's "
          "own 1 MiB (probed run: its anonymous memory less the blocks above) | " + " | ".join(
              f"{columns[k]['probed_anonymous'] - sum(columns[k]['owners'].values()):.1f}" if "owners" in columns[k]
              else "" for k in labels) + " |")
    print("| frames in the file | " + " | ".join(notes[k] for k in labels) + " |")
    print(f"\nload average (1 min) during the runs: {min(load):.1f}–{max(load):.1f}; work files in {work}",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
