#!/bin/sh
# Builds bench/convert.c and measures BGRA → yuv420p / NV12 through libswscale (as Reel's
# VideoEncoder configures it) and libyuv at 1920x1080 and 3840x2160. Needs gcc, pkg-config,
# libswscale-dev and libyuv-dev. Usage: bench/convert.sh [iterations at 1080p]
set -eu
here=$(dirname "$0")
iterations=${1:-500}
binary=${TMPDIR:-/tmp}/reel-bench-convert
cc -O2 -Wall "$here/convert.c" -o "$binary" $(pkg-config --cflags --libs libswscale libavutil) -lyuv
echo "# $(date -u +%FT%TZ) $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg); $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)"
echo "# libswscale $(pkg-config --modversion libswscale), libyuv $(dpkg-query -W -f '${Version}' libyuv-dev 2>/dev/null)"
"$binary" 1920 1080 "$iterations"
"$binary" 3840 2160 $((iterations / 4))
