#ifndef REEL_CDBUS_SHIM_H
#define REEL_CDBUS_SHIM_H
#include <dbus/dbus.h>
#endif
