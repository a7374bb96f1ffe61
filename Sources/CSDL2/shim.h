#ifndef REEL_CSDL2_SHIM_H
#define REEL_CSDL2_SHIM_H
#include <SDL2/SDL.h>

// Macros Swift cannot import.
static inline int reel_sdl_windowpos_undefined(void) { return SDL_WINDOWPOS_UNDEFINED; }
#endif
