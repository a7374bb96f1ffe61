// The orientation stage's plane turning (Sources/CReelConvert/turn.c) on a 1080p yuv420p picture:
// CPU ms a picture for each turn and mirroring. Build and run:
//   clang -O0 -ISources/CReelConvert/include bench/turn.c Sources/CReelConvert/turn.c -o /tmp/turn && /tmp/turn
// (-O0 as in a debug build; -O2 as in a release build).
#include "CReelConvert.h"
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
static double cpu(void) { struct timespec t; clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t); return t.tv_sec * 1e3 + t.tv_nsec / 1e6; }
int main(void) {
  int w = 1920, h = 1080, n = 30;
  uint8_t *y = malloc(w * h), *u = malloc(w * h / 4), *v = malloc(w * h / 4), *o = malloc(w * h);
  for (int i = 0; i < w * h; i++) y[i] = i;
  int rots[] = {0, 90, 180, 270};
  for (int r = 0; r < 4; r++) for (int m = 0; m < 2; m++) {
    double t0 = cpu();
    for (int i = 0; i < n; i++) {
      reel_turn_plane(y, w, w, h, 1, o, (rots[r] % 180) ? h : w, rots[r], m);
      reel_turn_plane(u, w / 2, w / 2, h / 2, 1, o, (rots[r] % 180) ? h / 2 : w / 2, rots[r], m);
      reel_turn_plane(v, w / 2, w / 2, h / 2, 1, o, (rots[r] % 180) ? h / 2 : w / 2, rots[r], m);
    }
    printf("yuv420p 1080p rotate %3d mirror %d: %.2f ms\n", rots[r], m, (cpu() - t0) / n);
  }
}
