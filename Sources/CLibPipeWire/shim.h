/* libpipewire, for the C target CPipeWire (Swift code imports CPipeWire, not this). */
#include <pipewire/pipewire.h>
