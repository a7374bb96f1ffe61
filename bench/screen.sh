#!/bin/sh
# reel record --screen against ffmpeg -f x11grab, side by side. See bench/README.md.
exec python3 "$(dirname "$0")/screen.py" "$@"
