import Foundation

/// Splits what a client sends into lines of at most a maximum length: a longer line is
/// reported once as ``Piece/oversized`` and the rest of it, up to its newline, left out.
struct LineSplitter {
    /// What came out of the bytes fed.
    enum Piece: Equatable {
        /// A complete line, without its newline.
        case line([UInt8])
        /// A line longer than the maximum (its bytes are not kept).
        case oversized
    }

    let maximumLength: Int
    private var partial: [UInt8] = []
    /// Inside a line already reported as oversized, until its newline.
    private var skipping = false

    init(maximumLength: Int) {
        self.maximumLength = maximumLength
    }

    mutating func feed<C: Collection>(_ bytes: C) -> [Piece] where C.Element == UInt8, C.SubSequence: Collection<UInt8> {
        var pieces: [Piece] = []
        var rest = bytes[...]
        while let newline = rest.firstIndex(of: 10) {
            let head = rest[rest.startIndex..<newline]
            rest = rest[rest.index(after: newline)...]
            if skipping {
                skipping = false
            } else if partial.count + head.count > maximumLength {
                pieces.append(.oversized)
            } else {
                pieces.append(.line(partial + head))
            }
            partial = []
        }
        if !skipping {
            if partial.count + rest.count > maximumLength {
                pieces.append(.oversized)
                partial = []
                skipping = true
            } else {
                partial += rest
            }
        }
        return pieces
    }

    /// The end of the input: a last line without its newline (`printf '{…}' | nc -U`) is a line.
    mutating func finish() -> [Piece] {
        defer { partial = [] }
        return skipping || partial.isEmpty ? [] : [.line(partial)]
    }
}

/// Reads a control request line (see ``ControlServer``).
enum ControlRequestParser {
    enum Outcome {
        /// An empty line.
        case ignore
        /// Not a request: answered with the error; `requestID` is the request's `id` as JSON
        /// text if it had one, else `null`.
        case invalid(requestID: String, ReelError)
        /// A request, with its `id` as JSON text.
        case request(requestID: String, ControlServer.Request)
    }

    static func parse(_ piece: LineSplitter.Piece) -> Outcome {
        guard case .line(let bytes) = piece else {
            return .invalid(requestID: "null", ReelError(.invalidConfiguration, "the request is longer than \(ControlServer.maximumLineLength) bytes",
                                                         hint: "send one JSON object a line"))
        }
        let text = String(decoding: bytes, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        if text.isEmpty { return .ignore }
        // Fragments allowed: a string or a number alone is JSON, just not a request.
        guard let object = try? JSONSerialization.jsonObject(with: Data(text.utf8), options: [.fragmentsAllowed]) else {
            return .invalid(requestID: "null", ReelError(.invalidConfiguration, "the request is not JSON",
                                                         hint: #"send one JSON object a line, such as {"command": "status", "id": 1}"#))
        }
        guard let request = object as? [String: Any] else {
            return .invalid(requestID: "null", ReelError(.invalidConfiguration, "a request must be a JSON object",
                                                         hint: #"send one JSON object a line, such as {"command": "status", "id": 1}"#))
        }
        let id = request["id"].flatMap { value -> String? in
            guard let data = try? JSONSerialization.data(withJSONObject: value, options: [.fragmentsAllowed]) else { return nil }
            return String(decoding: data, as: UTF8.self)
        } ?? "null"
        guard let command = request["command"] as? String, !command.isEmpty else {
            return .invalid(requestID: id, ReelError(.invalidConfiguration, "the request has no command",
                                                     hint: #"give one, such as {"command": "status", "id": 1}"#))
        }
        var argument: String?
        switch request["arg"] {
        case nil, is NSNull: argument = nil
        case let text as String: argument = text
        default:
            return .invalid(requestID: id, ReelError(.invalidConfiguration, "the argument of \(command) is not a string",
                                                     hint: #"give it as a string: "arg": "…""#))
        }
        return .request(requestID: id, ControlServer.Request(command: command, argument: argument))
    }
}
