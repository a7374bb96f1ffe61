#!/bin/sh
# Builds bench/convert.c and measures BGRA → yuv420p / NV12 through libswscale (as Reel's
# VideoEncoder configured it), Reel's own converter (Sources/CReelConvert) and libyuv at
# 1920x1080 and 3840x2160. Needs clang (or the Swift toolchain's), pkg-config,
# libswscale-dev and libyuv-dev. Usage: bench/convert.sh [iterations at 1080p]
set -eu
here=$(dirname "$0")
iterations=${1:-500}
binary=${TMPDIR:-/tmp}/reel-bench-convert
# Reel's own converter is built as a release build builds it: clang, -O2, one variant per
# instruction set (the Swift toolchain's clang when no other is on the PATH).
cc=$(command -v clang || echo /opt/swift/usr/bin/clang)
"$cc" -O2 -Wall -I"$here/../Sources/CReelConvert/include" "$here/convert.c" "$here/../Sources/CReelConvert/convert.c" \
  -o "$binary" $(pkg-config --cflags --libs libswscale libavutil) -lyuv
# And as a debug build (`swift build`, an app's debug build) compiles it: -O0.
"$cc" -O0 -Wall -I"$here/../Sources/CReelConvert/include" -c "$here/../Sources/CReelConvert/convert.c" -o "$binary-O0.o"
"$cc" -O2 -Wall -I"$here/../Sources/CReelConvert/include" "$here/convert.c" "$binary-O0.o" \
  -o "$binary-debug" $(pkg-config --cflags --libs libswscale libavutil) -lyuv
echo "# $(date -u +%FT%TZ) $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg); $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)"
echo "# libswscale $(pkg-config --modversion libswscale), libyuv $(dpkg-query -W -f '${Version}' libyuv-dev 2>/dev/null)"
"$binary" 1920 1080 "$iterations"
"$binary" 3840 2160 $((iterations / 4))
echo "# Reel's converter built -O0, as in a debug build:"
"$binary-debug" 1920 1080 "$iterations" | grep '^1920x1080  reel'
