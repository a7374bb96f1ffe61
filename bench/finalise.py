#!/usr/bin/env python3
"""Finalising a recording: the old way (copy the whole fragmented file into a new faststart
MP4) against the new one (write the index into the space reserved at the front and blank the
fragment headers), on identical copies of one real recording.

The recording: `reel record --screen` of an Xvfb screen on which bench/painter.c scrolls
testsrc2 (every pixel changes every frame, like bench/screen.py's "motion"), for --seconds
seconds, killed with SIGKILL just before it would stop, so that the fragmented file is left as
a clean stop would leave it before finalising. An incomplete last fragment is cut off.

Then, --runs times each, on a fresh copy (cp, then sync, so no earlier write-back lands in
the measurement):
  copy      `reel recover COPY -o OUT`  (the old finalise: remux into a new file)
  in place  `reel recover COPY`         (the new finalise; says "finalised in place")
Both run the same recovery code around the finalise (opening and probing the file). Measured:
wall time; wall time plus an fsync of the result (until it is on the disk: the remux leaves
its pages dirty, the in-place way syncs as it goes); and bytes the process handed to
write()/pwrite() (`wchar` of /proc/PID/io, read when the process has exited but is not yet
reaped).

    bench/finalise.py --reel .build/release/reel            # 60 s of 1920x1080 at 30 fps
    bench/finalise.py --seconds 10 --runs 1                 # a quick look
"""
import argparse
import json
import os
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))
import screen as S  # noqa: E402  (Xvfb, the painter and its frames)


def top_level_boxes(path: Path):
    boxes = []
    size = path.stat().st_size
    with open(path, "rb") as f:
        offset = 0
        while offset + 8 <= size:
            f.seek(offset)
            head = f.read(16)
            length, kind = struct.unpack(">I4s", head[:8])
            if length == 1:
                length = struct.unpack(">Q", head[8:16])[0]
            elif length == 0:
                length = size - offset
            boxes.append((kind.decode("latin1"), offset, length))
            if length < 8:
                break
            offset += length
    return boxes, size


def cut_incomplete_tail(path: Path) -> int:
    """Truncates the file after its last complete moof+mdat pair; returns the bytes cut."""
    boxes, size = top_level_boxes(path)
    end = 0
    for i, (kind, offset, length) in enumerate(boxes):
        if offset + length > size:
            break
        if kind == "mdat" and i > 0 and boxes[i - 1][0] == "moof":
            end = offset + length
    if end and end < size:
        os.truncate(path, end)
    return size - end if end else 0


def timed(cmd: list[str]) -> dict:
    """Runs `cmd`; wall time and the bytes it wrote (wchar), read from /proc before reaping."""
    start = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = proc.stdout, proc.stderr
    wchar = None
    while True:
        # Wait for the process to become a zombie, without reaping it.
        try:
            waited = os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOWAIT)
        except ChildProcessError:
            break
        if waited is not None:
            break
    elapsed = time.monotonic() - start
    try:
        with open(f"/proc/{proc.pid}/io") as f:
            for line in f:
                key, value = line.split(":")
                if key == "wchar":
                    wchar = int(value)
    except OSError:
        pass
    stdout, stderr = out.read().decode(), err.read().decode()
    proc.wait()
    return {"seconds": elapsed, "wchar": wchar, "status": proc.returncode, "stdout": stdout.strip(), "stderr": stderr.strip()}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--reel", default=os.environ.get("REEL", str(BENCH.parent / ".build/release/reel")))
    p.add_argument("--seconds", type=float, default=60)
    p.add_argument("--width", type=int, default=1920)
    p.add_argument("--height", type=int, default=1080)
    p.add_argument("--fps", type=int, default=30)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--keep", action="store_true", help="keep the work folder")
    args = p.parse_args()
    # What bench/screen.py's Screen needs.
    args.display, args.nice, args.paint_rate = 90, 0, 60

    reel = Path(args.reel)
    if not reel.exists():
        sys.exit(f"finalise.py: no reel at {reel} (swift build -c release, or --reel PATH)")
    work = Path(tempfile.mkdtemp(prefix="reel-finalise-", dir=os.environ.get("TMPDIR", "/var/tmp")))
    out = BENCH / "out"
    out.mkdir(exist_ok=True)
    painter = S.build_painter(out)
    motion, still = S.make_frames(out, args.width, args.height, args.paint_rate, args.paint_rate)
    screen = S.Screen(args, out, painter, motion, still)
    results = {"args": vars(args), "copy": [], "inplace": []}
    try:
        screen.paint("motion")
        recording = work / "recording.mp4"
        events = work / "events.jsonl"
        S.log(f"recording {args.seconds} s of :{screen.display} at {args.width}x{args.height}")
        with open(events, "w") as ev:
            rec = subprocess.Popen([str(reel), "record", f"--screen=:{screen.display}", "--fps", str(args.fps),
                                    "--json", "-o", str(recording)], stdout=ev, stderr=subprocess.DEVNULL)
        started = None
        while started is None:
            if rec.poll() is not None:
                sys.exit("finalise.py: reel record exited before it started")
            if '"started"' in events.read_text():
                started = time.monotonic()
            time.sleep(0.01)
        time.sleep(max(0, args.seconds + 0.6 - (time.monotonic() - started)))
        rec.send_signal(signal.SIGKILL)
        rec.wait()
        cut = cut_incomplete_tail(recording)
        boxes, size = top_level_boxes(recording)
        fragments = sum(1 for b in boxes if b[0] == "moof")
        reserved = next((b[2] for i, b in enumerate(boxes) if b[0] == "free" and i > 0 and boxes[i - 1][0] == "moov"), 0)
        probe = subprocess.run(["ffprobe", "-v", "error", "-select_streams", "v:0", "-count_packets", "-show_entries",
                                "stream=nb_read_packets", "-of", "csv=p=0", str(recording)], capture_output=True, text=True)
        frames = int(probe.stdout.strip() or 0)
        results["recording"] = {"bytes": size, "fragments": fragments, "reserved": reserved, "frames": frames,
                                "incomplete_tail_cut": cut}
        S.log(f"fragmented file: {size} bytes, {fragments} fragments, {frames} frames, {reserved} bytes reserved, "
              f"{cut} bytes of incomplete tail cut")
    finally:
        screen.close()

    for run in range(args.runs):
        for way in ("copy", "inplace"):
            copy = work / f"{way}-{run}.mp4"
            shutil.copyfile(recording, copy)
            subprocess.run(["sync"])
            if way == "copy":
                target = work / f"{way}-{run}-out.mp4"
                r = timed([str(reel), "recover", str(copy), "-o", str(target)])
            else:
                target = copy
                r = timed([str(reel), "recover", str(copy)])
            if r["status"] != 0:
                sys.exit(f"finalise.py: reel recover failed: {r['stderr']}")
            # Until it is on the disk: the copy's pages are still dirty (the remux does not fsync).
            start = time.monotonic()
            fd = os.open(target, os.O_RDONLY)
            os.fsync(fd)
            os.close(fd)
            r["fsync_seconds"] = time.monotonic() - start
            boxes, size = top_level_boxes(target)
            r["file_bytes"] = size
            r["moof_left"] = sum(1 for b in boxes if b[0] == "moof")
            r["moov_before_mdat"] = [b[0] for b in boxes].index("moov") < [b[0] for b in boxes].index("mdat")
            results[way].append(r)
            S.log(f"{way} run {run + 1}: {r['seconds']:.3f} s, {r['wchar']} bytes written, {r['stdout']}")
            if way == "copy":
                target.unlink()
            copy.unlink()

    results["load_average"] = os.getloadavg()
    stamp = time.strftime("%Y%m%d-%H%M%S")
    raw = out / f"finalise-{stamp}.json"
    raw.write_text(json.dumps(results, indent=2))
    rec = results["recording"]
    print(f"**Finalising {args.seconds:g} s of {args.width}x{args.height} at {args.fps} fps "
          f"({rec['frames']} frames, {rec['bytes'] / 1e6:.1f} MB, {rec['fragments']} fragments, "
          f"{rec['reserved'] / 1e6:.2f} MB reserved), {args.runs} runs each, load average "
          f"{results['load_average'][0]:.1f} on {os.cpu_count()} CPUs** (raw: bench/out/{raw.name})\n")
    print("| way | wall s (mean (min–max)) | wall + fsync s | bytes written | file bytes after | moof left | moov before mdat |")
    print("|---|---|---|---|---|---|---|")
    for way, label in (("copy", "copy (old: remux into a new file)"), ("inplace", "in place (new)")):
        rs = results[way]
        secs = [r["seconds"] for r in rs]
        durable = [r["seconds"] + r["fsync_seconds"] for r in rs]
        print(f"| {label} | {sum(secs) / len(secs):.3f} ({min(secs):.3f}–{max(secs):.3f}) | "
              f"{sum(durable) / len(durable):.3f} ({min(durable):.3f}–{max(durable):.3f}) | {rs[0]['wchar']:,} | "
              f"{rs[0]['file_bytes']:,} | {rs[0]['moof_left']} | {rs[0]['moov_before_mdat']} |")
    if not args.keep:
        shutil.rmtree(work)
    return 0


if __name__ == "__main__":
    sys.exit(main())
