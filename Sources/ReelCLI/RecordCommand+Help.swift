import Foundation

/// What `reel record --help` and `reel preview --help` say.
extension RecordCommand {
    static let previewHelp = """
    Usage: reel preview [SOURCES] [OPTIONS] [-o FILE]

    Opens a window showing the sources (composed as reel record composes them, filters
    applied) without recording. In the window, r or a click on the record button starts
    recording and pauses it again; each part becomes a clip (in NAME.clips/ beside the file,
    or --keep-clips DIR). Enter, q or closing the window stops: the clips are merged into the
    file. Nothing recorded, no file. Space also pauses and resumes, s swaps the composed
    pictures, f steps through the looks, z and Z zoom the cameras in and out. Needs a display.

    Examples:
      reel preview --camera --mic -o take.mp4
      reel preview --camera=test:blue --filter comic --max-duration 30

    """

    static let help = """
    Usage: reel record [SOURCES] [OPTIONS] [-o FILE]

    Records a screen, cameras, the built-in test camera, a microphone, application audio or
    the test tone into an MP4, MOV or MKV file. Several video sources are composed into one
    picture (picture-in-picture, side by side or a grid); --each-source also keeps each on
    its own. With no source given it records the screen of the session (Wayland or X11
    $DISPLAY), as --screen does, and says so. Stop with Ctrl-C (or SIGTERM): the file is
    finalised.
    A second Ctrl-C (or SIGTERM) aborts at once, exit status 130; the file then keeps everything
    up to its last fragment.
    On a terminal, space pauses and resumes, s swaps the composed pictures and q or Enter
    stops; otherwise SIGUSR1 toggles pause and SIGUSR2 swaps. Pausing takes the gap out of the file, or with --pause-mode clips ends a clip;
    the clips (in NAME.clips/ beside the file, or --keep-clips DIR) are merged into the file
    when recording stops; if it is cut off, reel recover NAME.clips merges them.

    Replay buffer: --replay 30 keeps the last 30 s of encoded video and sound in memory and
    writes nothing until asked: r (on a terminal) or SIGUSR1 (off one; with --replay it saves
    rather than pauses; to pause off a terminal, record with --control and run reel control
    pause) saves them to a dated file in your videos folder (or --replay-dir DIR)
    and prints where (--json: a "saved" event). Two signals of one kind sent at once (before
    reel has taken the first, a few milliseconds) are one to the kernel, so one save or one
    pause: wait for the "saved" event, or use reel control save-replay, whose every request is
    answered. A save holds at least the last 30 s and at
    most one keyframe interval more, because it must start on a keyframe; the keyframe
    interval is 2 s unless --keyframe-interval says otherwise, which keeps that overshoot and
    the memory beyond 30 s small. Ctrl-C drops the buffer without asking (--replay-save-on-exit
    saves it once more first). With -o FILE the whole session is recorded as well, from the
    same encode. Paused time is not in the buffer. --replay-max-size 500M bounds its memory:
    past it the oldest seconds go; --replay-spill keeps it on the replay folder's disk instead.
    With --pause-mode clips the buffer, --stream and --hls take the same encode as the clips.

    Live streaming: --stream URL sends the recording live, from the same encode as the file,
    to an RTMP server (rtmp://HOST/APP/KEY or rtmps://; H.264 and AAC) or over SRT
    (srt://HOST:PORT). Repeat it for several. The key is never printed or put in JSON;
    --stream-key-file FILE keeps it off the command line too (for SRT the file holds the
    stream ID alone, or the lines streamid=ID and passphrase=SECRET). A slow link drops whole
    groups of pictures from the stream only (the file keeps every frame); when the server goes away
    the recording goes on and the stream reconnects, resuming on a keyframe. --hls DIR writes
    HLS into DIR (index.m3u8 and 2 s segments: the last 6 listed, older ones deleted;
    --hls-window 0 keeps the whole event; --hls-segments fmp4 for fragmented MP4 segments).
    FFmpeg's HLS writer keeps the segment it is making in memory until it ends (2 s, or past a
    pause: at the resume), so a killed recording's HLS lacks that segment; the file has it.

    One application's sound: --app-audio=APP records only what APP plays (its name, program or
    pid, as reel devices lists them; repeatable), --app-audio-except=APP everything but it; you
    still hear everything. On PipeWire (pipewire-pulse) the application is linked into a sink of
    reel's own: nothing is moved or lost at the start, and nothing is left to restore. On
    PulseAudio the chosen streams are moved through a relay onto the sink they played on, and
    put back when the recording ends, fails or is killed (a guard process restores them even
    after kill -9; the next reel run or reel doctor does if the guard died too); a move ends
    another program's recording of that stream alone (parec --monitor-stream), and reel says
    so (an "anotherRecordingEnded" event; exit status unchanged). reel doctor
    --app-audio=APP says which way this machine gets. Any number of recordings may record one
    application at once; streams that start later are followed, and an application not playing
    yet is recorded when it starts (one that never plays makes the exit status 3).
    --app-audio=SINK, naming a sink, records that sink as before. With --window (X11) and
    --app-audio naming no application, only the window's application's sound is recorded: the
    process the window names (_NET_WM_PID) and the processes it started.

    Sound only: with only --mic, --app-audio or --tone, -o may name a .m4a (AAC), .opus or
    .ogg (Opus), .flac or .wav (16-bit PCM) file, in that file's own codec, with the same
    pause, clips and limits. A .flac or .wav holds one track: two sources go into it with
    --mix-audio. A video source, --replay, --stream and --hls need a video file.
    A killed one is made whole by reel recover (M4A as MP4; WAV sizes, FLAC STREAMINFO, Ogg's
    last page).

    One window (X11): --window records the focused window, --window=ID (as reel devices or
    xwininfo show it), --window=NAME (in its title or class) or --window=pick (click it; the
    pointer and the keyboard are grabbed, Escape or Ctrl-C gives up: exit 1, nothing written;
    the window clicked is then said as --window=0x… to reuse, and with --json as a "picked"
    event, as a region dragged with --region pick is), of --screen's display. Its own picture is recorded, whatever covers it or wherever it moves,
    at its size when the recording starts; a resize is scaled in (--window-size fit or fill),
    a minimised window's last picture is held, a closed one ends the video like a lost screen.
    On Wayland --window asks the desktop portal, whose dialog chooses the window.

    Clicks, keys and the pointer (X11): --show-clicks draws a ring where each mouse button is
    pressed (yellow left, blue right, green middle), fading in half a second; --show-keys writes
    what is typed at the bottom of the picture (words, chords as Ctrl+Shift+T, a key pressed
    again and again once with a count), gone 2.5 s after the last key; --highlight-cursor
    draws a soft disc around the pointer; --follow-cursor zooms in by --zoom (default 2) toward
    the pointer and clicks while it moves, and back out once it has rested 1.5 s. They are
    drawn into the recording only, in screen, region and window recordings, from XInput2's raw
    events (seen also while another program grabs the pointer). --show-keys SHOWS EVERYTHING
    TYPED, PASSWORDS TOO: Ctrl+Alt+K hides the captions (keys typed meanwhile are not kept) and
    shows them again, and reel says each (--json: "keyCaptionsHidden", "keyCaptionsShown"); space or reel control pause pauses the recording, and what is typed
    while it is paused (or before it starts, in --delay) is never shown, nor is the line typed
    before the pause after it. Keys are never written anywhere else. Wayland gives no program the clicks and keys meant for others, so there
    these options are refused.

    Exit status: 0 when the file holds all that was asked for; 3 when it was finalised but a
    source was lost or interrupted, recorded nothing (an application that never played, or
    that played only digital silence: muted or at volume 0 in the mixer, which reel says and
    leaves as it is; a microphone whose every sample was digital zero: muted, or a monitor of
    a silent sink; --app-audio recording a sink on which nothing played) or
    missed part of what it was asked for (the summary's "missing" lines, and with --json the
    source events and "complete": false with "shortfalls" in "finished", say which), or when
    --min-free or a full disk stopped it early ("ending": "lowDiskSpace": the file holds all
    recorded until then, or, when the disk filled faster than the room reel keeps ahead of the
    file could take, all that reached the disk, finalised, with the file's entry in
    "shortfalls" saying what could not be written; in clip mode the clips keep it, the one
    the disk cut off ended where it is, not merged for want of room: "clipsNotMerged" says how
    to merge them), or a --stream
    or --hls output stopped early (its "failed" in "streams"); 1 for a failure, a stop before
    the first frame (during --delay or before --start-at too: no file is written, and --json
    says "failed" with the code "nothingRecorded", never "started"), 2 for a usage error; 130 when aborted (a second Ctrl-C or other stop signal, reel control abort: the file is left as it is,
    and the message says where and how to finish it). Dropped frames do not change it: the
    summary says them with why (the encoder could not keep up, the capture missed their time
    on a busy machine, reel or its source stalled, the source lost them) and what helps, a
    warning says so while recording once a few are lost (at most every 10 s), and --json has
    "dropped", "droppedBy" {reason: count} in "finished" and a "framesDropped" event. Sound a
    source's capture missed on a busy machine (application audio on PipeWire: the audio
    server's cycles, a few ms each) is the same: silence in the file, not missing, said in the
    summary's "audio lost" warning, while recording (at most every 10 s), and with --json in
    "droppedAudio" of "progress" and "finished" and an "audioMissed" event. Sound lost because
    reel was not run for longer than the audio server or its capture keeps sound (about 10 s on
    PulseAudio, 4 s on PipeWire) is missing (a "sourceIncomplete" event, 3).

    Examples:
      reel record --screen --mic --app-audio
      reel record --window=firefox --app-audio -o tab.mp4          # the window and only its application's sound
      reel record --screen --camera --mic
      reel record --camera=rtsp://10.0.0.5/stream --camera=/dev/video0 --layout grid \\
                  --each-source cams/ --frame-log frames.csv -o both.mp4
      reel record --screen=:1 --region 1280x720+0+0 --fps 60 -o demo.mp4
      reel record --test-pattern --tone --duration 5 -o test.mp4
      reel record --mic -o talk.m4a                                # sound only: .m4a, .opus, .ogg, .flac, .wav
      reel record --screen --app-audio=firefox --mic               # Firefox's sound only, and the microphone
      reel record --app-audio-except=Zoom -o no-call.m4a           # every application's sound but the call's
      reel record --screen --app-audio --replay 30                 # r or SIGUSR1 saves the last 30 s
      reel record --screen --mic --replay 2m -o whole-session.mp4
      reel record --screen --mic -o talk.mp4 --stream rtmp://live.example/app --stream-key-file key.txt
      reel record --screen --mic --hls /var/www/live --hls-window 0   # HLS of the whole event, beside the file
      reel record --show-clicks --show-keys --follow-cursor --zoom 2 -o tutorial.mp4

    """
}
