#ifndef REEL_PIPEWIRE_AUDIO_H
#define REEL_PIPEWIRE_AUDIO_H
/* What Reel's application audio needs of libpipewire, behind plain C types: a view of the
 * graph (nodes and ports as they come and go) on which links are made from an application's
 * output ports to a sink, and a capture: a sink of Reel's own (a null sink, internal: not
 * shown to PulseAudio clients) whose monitor a stream reads. Everything a connection made
 * goes with it: nothing is left on the server when it closes or the process dies. */
#include <stddef.h>
#include <stdint.h>

/* ---- the graph ---- */

enum reel_pw_graph_event_kind {
    REEL_PW_NODE_ADDED = 1,
    REEL_PW_NODE_REMOVED = 2,
    REEL_PW_PORT_ADDED = 3,
    REEL_PW_PORT_REMOVED = 4,
    REEL_PW_LINK_FAILED = 5, /* a link this connection made was refused: `id` is its handle */
};

/* A node or a port as the registry shows it (strings empty when not given). */
typedef struct reel_pw_graph_event {
    int32_t kind;
    uint32_t id;        /* the node's or port's global id; a link's handle for LINK_FAILED */
    uint32_t node;      /* a port's node */
    int32_t output;     /* a port: 1 output, 0 input */
    int32_t monitor;    /* a port: 1 when it is a monitor port */
    int32_t pid;        /* a node: application.process.id, or -1 */
    char media_class[64];
    char node_name[128];
    char application_name[128];
    char binary[128];
    char channel[16];   /* a port's audio.channel ("FL", "MONO") */
    char message[128];  /* LINK_FAILED: why */
} reel_pw_graph_event;

typedef struct reel_pw_graph reel_pw_graph;

/* Connects to the PipeWire daemon `remote` (a socket name or an absolute path; NULL for the
 * usual one: PIPEWIRE_REMOTE, else pipewire-0 in the runtime folder) and waits until the graph
 * as it is now has been announced (each node and port is an event). NULL on failure, with a
 * message in `error`. */
reel_pw_graph *reel_pw_graph_open(const char *remote, char *error, size_t error_size);

/* Waits at most `timeout_us` for events and takes up to `capacity` of them. Returns how many,
 * or -1 when the connection has failed (a message in `error`). */
int reel_pw_graph_next_events(reel_pw_graph *graph, reel_pw_graph_event *events, int capacity, int32_t timeout_us,
                              char *error, size_t error_size);

/* Links output port `out_port` of node `out_node` to input port `in_port` of `in_node`. The link
 * lives until unlinked, one of its ports goes, or the connection closes. Returns a handle
 * (> 0), or 0 when it cannot even be asked (a message in `error`); a refusal comes later as a
 * LINK_FAILED event. */
uint32_t reel_pw_graph_link(reel_pw_graph *graph, uint32_t out_node, uint32_t out_port, uint32_t in_node, uint32_t in_port,
                            char *error, size_t error_size);

/* Removes a link made with reel_pw_graph_link. */
void reel_pw_graph_unlink(reel_pw_graph *graph, uint32_t handle);

/* Disconnects: every link made goes. */
void reel_pw_graph_close(reel_pw_graph *graph);

/* ---- the capture ---- */

typedef struct reel_pw_capture reel_pw_capture;

/* Connects to `remote` (as above), makes an internal null sink named `sink_name` with
 * `channels` channels (1 or 2) at `rate`, and a stream that reads its monitor as interleaved
 * 32-bit floats, linked to it. Waits until the sound flows (at most about 5 s). NULL on failure,
 * with a message in `error`. */
reel_pw_capture *reel_pw_capture_open(const char *remote, const char *sink_name, uint32_t rate, uint32_t channels,
                                      char *error, size_t error_size);

/* Waits at most `timeout_us` for sound. Returns 1 when some has arrived, 0 when none has, -1
 * when the capture has failed (the server went away, the sink was removed: a message in
 * `error`). */
int reel_pw_capture_wait(reel_pw_capture *capture, int32_t timeout_us, char *error, size_t error_size);

/* Takes up to `capacity` bytes of what has arrived (whole frames), silence where sound was lost
 * (see reel_pw_capture_take_losses), and the CLOCK_MONOTONIC time in nanoseconds at which the
 * newest sound arrived. Returns the bytes taken. */
size_t reel_pw_capture_read(reel_pw_capture *capture, uint8_t *buffer, size_t capacity, uint64_t *newest_ns);

/* Why the capture lost sound: the graph ran cycles without the stream (its thread came too
 * late on a busy machine, or the process was stopped for a moment), or what arrived did not
 * fit the capture's buffer (about 4 s) because nobody read it for longer, or the process did
 * not run for longer (a gap of missed cycles longer than the buffer holds). */
typedef enum reel_pw_loss_kind {
    REEL_PW_LOSS_MISSED_CYCLES = 0,
    REEL_PW_LOSS_OVERFLOW = 1,
} reel_pw_loss_kind;

/* Sound the capture lost before it was read: `frames` frames from frame `start` (counted
 * since the open, as reel_pw_capture_read delivers them), where it delivers silence. */
typedef struct reel_pw_loss {
    uint64_t start;
    uint64_t frames;
    reel_pw_loss_kind kind;
} reel_pw_loss;

/* How many losses the capture keeps until they are taken (later ones join the last, which is
 * then an overflow if either was). */
#define REEL_PW_LOSSES 64

/* Takes up to `capacity` of the losses noted since the last call, oldest first: cycles of the
 * graph the stream missed (its thread came too late, or the process was stopped) and sound
 * that did not fit the capture's buffer (about 4 s) because nobody read it. Returns how many. */
int reel_pw_capture_take_losses(reel_pw_capture *capture, reel_pw_loss *losses, int capacity);

/* Disconnects: the sink and the stream go. */
void reel_pw_capture_close(reel_pw_capture *capture);

#endif
