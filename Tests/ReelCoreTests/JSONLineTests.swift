import Foundation
@testable import ReelCore
import Testing

/// `JSONLine` writes what `JSONSerialization` with `.sortedKeys` wrote (scripts read reel's
/// `--json` lines), without ICU's collation: checked against `JSONSerialization` itself.
@Suite struct JSONLineTests {
    static func reference(_ object: [String: Any]) -> String? {
        guard JSONSerialization.isValidJSONObject(object),
              let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]) else { return nil }
        return String(decoding: data, as: UTF8.self)
    }

    static var objects: [[String: Any]] { [
        ["event": "progress", "duration": 1.5, "frames": 45, "dropped": 0, "droppedAudio": 0.0, "paused": false,
         "clips": 1, "bytes": Int64(4283), "maxDuration": 6.0],
        ["event": "started", "file": "/tmp/a b/\"quoted\"\\back.mp4"],
        ["k": "\r\u{8}\u{C}\u{1F}\u{2028}\0\t\n é😀\u{7F}"],
        ["numbers": [0.1, 1e-7, 1e21, 123456789.123, -0.0, 2.0, 0.30000000000000004, 1e16, 12345678901234567.0] as [Any]],
        ["small": Float(0.1), "u64": UInt64.max, "i8": Int8(-3), "u32": UInt32(7), "negative": -12],
        ["B": 1, "a": 2, "b": 3, "A": 4, "a10": 5, "a9": 6, "a09": 7, "ab": 8, "aB": 9, "Ab": 10, "a_b": 11, "a1b": 12],
        ["nested": ["z": 1, "a": [String: Any](), "list": [1, "x", true, ["q": NSNull()]] as [Any]] as [String: Any],
         "null": NSNull(), "empty": [Any]()],
        ["missing": Optional<Int>.none as Any, "present": Optional<Int>.some(3) as Any],
    ] }

    @Test func writesWhatJSONSerializationWrote() throws {
        for object in Self.objects {
            let expected = try #require(Self.reference(object))
            #expect(JSONLine.encode(object) == expected)
        }
    }

    @Test func refusesWhatIsNotJSON() {
        #expect(JSONLine.encode(["k": Double.nan]) == nil)
        #expect(JSONLine.encode(["k": Double.infinity]) == nil)
        #expect(JSONLine.encode(["k": Date()]) == nil)
        #expect(JSONLine.encode(["k": ["deep": [Float.nan]] as [String: Any]]) == nil)
    }

    @Test func ordersKeysAsJSONSerializationDid() {
        let keys = ["B", "a", "b", "A", "a10", "a9", "clips", "clipCount", "droppedAudio", "dropped", "x2y", "x10y", "X2y"]
        #expect(keys.sorted(by: JSONLine.precedes) ==
                ["a", "A", "a9", "a10", "b", "B", "clipCount", "clips", "dropped", "droppedAudio", "x2y", "X2y", "x10y"])
    }
}
