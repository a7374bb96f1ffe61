#ifndef REEL_CXCB_SHIM_H
#define REEL_CXCB_SHIM_H
#include <xcb/xcb.h>
#include <xcb/shm.h>
#include <xcb/xfixes.h>
#include <xcb/randr.h>
#include <xcb/composite.h>
#include <xcb/damage.h>
#include <xcb/xinput.h>
#include <sys/ipc.h>
#include <sys/shm.h>
#endif
