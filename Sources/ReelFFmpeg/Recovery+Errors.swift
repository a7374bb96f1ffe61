import Foundation
import ReelCore

/// What ``Recovery`` says of a file it cannot recover.
extension Recovery {
    /// A fragmented recording cut off before its first fragment was whole.
    static func nothingRecorded(_ url: URL) -> ReelError {
        ReelError(.nothingRecorded, "\(url.path) was cut off before its first frames were completely written: there is nothing to recover",
                  hint: "it holds no more than its header: what was recorded was still in memory when the recording was cut off, and ended with it; "
                    + "nothing is lost by deleting the file or recording over it")
    }

    static func notARecording(_ url: URL) -> ReelError {
        ReelError(.invalidMedia, "\(url.path) is not an MP4, MOV, MKV, M4A, WAV, FLAC or Ogg recording that can be recovered",
                  hint: "give a recording that reel (or another program writing fragmented MP4 or MKV) made")
    }

    /// A finished file cut short later (s6 N14: it was called "not an MP4, MOV, MKV, M4A… recording").
    static func cutShortAfterFinishing(_ url: URL) -> ReelError {
        ReelError(.invalidMedia, "\(url.path) is a finished recording whose end is missing: its index points past the end of the file (cut short after it was finalised, by a copy or a full disk)",
                  hint: "recovery finishes recordings cut off while they were recorded, not files cut short later; the frames this file still holds can be copied out with ffmpeg's stream copy")
    }
}
