#!/bin/bash
# reel record --screen on a Wayland desktop (ScreenCast portal + PipeWire) against wf-recorder
# (wlr-screencopy, Debian's 0.3.0) on the same headless sway, side by side. See bench/README.md.
#
#   bench/wayland.sh [--reel PATH] [-r REPS] [-d SECONDS] [--size WxH]
#
# Run as root (sway runs as the throwaway user reelwl; everything else as root), from the
# repository. The screen's colour changes every 0.5 s (swaymsg … bg … solid_color) for every
# recorder alike. Each run: launch, wait for the output file, record SECONDS, stop with SIGINT;
# CPU is the recorder's user+system time (getrusage of the child) per recorded second; frames
# are counted by ffprobe; start-up is launch → output file created (reel: after the portal's
# answer and the first picture). Both encode libx264 veryfast CRF 23 yuv420p.
set -euo pipefail
cd "$(dirname "$0")/.."
REEL=.build/release/reel; REPS=3; DUR=20; SIZE=1920x1080
while [ $# -gt 0 ]; do
  case "$1" in
    --reel) REEL=$2; shift 2;; -r) REPS=$2; shift 2;; -d) DUR=$2; shift 2;; --size) SIZE=$2; shift 2;;
    *) echo "unknown option $1" >&2; exit 2;;
  esac
done
[ -x "$REEL" ] || { echo "no reel at $REEL (swift build -c release --product reel, or --reel PATH)" >&2; exit 1; }
REEL=$(readlink -f "$REEL")
if [ -z "${REEL_BENCH_IN_SESSION:-}" ]; then
  # A session bus of our own, which starts the portal's permission store on demand.
  exec env REEL_BENCH_IN_SESSION=1 dbus-run-session -- "$0" --reel "$REEL" -r "$REPS" -d "$DUR" --size "$SIZE"
fi
WLUSER=reelwl
id $WLUSER >/dev/null 2>&1 || useradd -m $WLUSER
OUT=$(mktemp -d /tmp/reel-bench-wayland.XXXXXX); RUN=$OUT/run; mkdir -p $RUN; chown $WLUSER: $RUN; chmod 700 $RUN; chmod 755 $OUT
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$OUT"; }
trap cleanup EXIT
export XDG_RUNTIME_DIR=$RUN XDG_CURRENT_DESKTOP=sway XDG_SESSION_TYPE=wayland XDG_STATE_HOME=$OUT/state
printf 'output HEADLESS-1 resolution %s bg #000000 solid_color\ndefault_border none\n' "$SIZE" > $OUT/sway.conf
printf '[screencast]\nchooser_type=none\noutput_name=HEADLESS-1\nmax_fps=30\n' > $OUT/xdpw.config
gcc -shared -fPIC -O2 -o $OUT/shim.so scripts/wayland/xdpw-shm-shim.c -ldl
setpriv --reuid=$WLUSER --regid=$WLUSER --init-groups env HOME=/home/$WLUSER WLR_BACKENDS=headless \
  WLR_RENDERER=pixman WLR_LIBINPUT_NO_DEVICES=1 sway -c $OUT/sway.conf > $OUT/sway.log 2>&1 & PIDS+=($!)
for i in $(seq 200); do ls $RUN/wayland-? >/dev/null 2>&1 && ls $RUN/sway-ipc.* >/dev/null 2>&1 && break; sleep 0.05; done
export WAYLAND_DISPLAY=$(basename $(ls $RUN/wayland-? | head -1)) SWAYSOCK=$(ls $RUN/sway-ipc.*.sock)
pipewire > $OUT/pipewire.log 2>&1 & PIDS+=($!)
for i in $(seq 100); do [ -S $RUN/pipewire-0 ] && break; sleep 0.05; done
wireplumber > $OUT/wireplumber.log 2>&1 & PIDS+=($!)
LD_PRELOAD=$OUT/shim.so /usr/libexec/xdg-desktop-portal-wlr -c $OUT/xdpw.config > $OUT/xdpw.log 2>&1 & PIDS+=($!)
gdbus wait --session --timeout 10 org.freedesktop.impl.portal.desktop.wlr
/usr/libexec/xdg-desktop-portal > $OUT/xdp.log 2>&1 & PIDS+=($!)
gdbus wait --session --timeout 10 org.freedesktop.portal.Desktop
( while :; do for c in ff0000 00ff00 0000ff; do swaymsg -q output '*' bg "#$c" solid_color; sleep 0.5; done; done ) & PIDS+=($!)
sleep 1

echo "reel $($REEL --version 2>&1 | head -1); wf-recorder $(wf-recorder -v 2>&1 | head -1); $SIZE, $DUR s x $REPS runs, $(nproc) CPUs"
run() {  # NAME OUTFILE COMMAND...
  /usr/bin/python3 - "$DUR" "$@" <<'PY'
import os, resource, signal, subprocess, sys, time, json
dur, name, out, cmd = float(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4:]
t0 = time.monotonic()
p = subprocess.Popen(cmd, stdout=open(out + ".log", "w"), stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
while not os.path.exists(out) and p.poll() is None and time.monotonic() - t0 < 30: time.sleep(0.005)
start = time.monotonic() - t0
time.sleep(dur)
p.send_signal(signal.SIGINT); p.wait(timeout=60)
ru = resource.getrusage(resource.RUSAGE_CHILDREN)
frames = subprocess.run(["ffprobe", "-v", "error", "-count_frames", "-select_streams", "v:0", "-show_entries",
                         "stream=nb_read_frames", "-of", "csv=p=0", out], capture_output=True, text=True).stdout.strip()
said = [l.strip() for l in open(out + ".log", errors="replace") if "dropped" in l]
print(json.dumps({"recorder": name, "cpu_s_per_s": round((ru.ru_utime + ru.ru_stime) / dur, 3), "frames": frames,
                  "start_s": round(start, 3), "status": p.returncode, "load": open("/proc/loadavg").read().split()[0],
                  "said": said[-1] if said else ""}))
PY
}
for i in $(seq $REPS); do
  rm -f $OUT/reel.mp4 $OUT/wf.mp4 $OUT/wfD.mp4
  run reel $OUT/reel.mp4 $REEL record --screen --fps 30 --preset veryfast --crf 23 -o $OUT/reel.mp4
  run wf-recorder $OUT/wf.mp4 wf-recorder -c libx264 -p preset=veryfast -p crf=23 -x yuv420p -f $OUT/wf.mp4
  run "wf-recorder -D" $OUT/wfD.mp4 wf-recorder -D -c libx264 -p preset=veryfast -p crf=23 -x yuv420p -f $OUT/wfD.mp4
done
