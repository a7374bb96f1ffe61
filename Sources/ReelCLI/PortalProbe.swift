import Foundation

/// Asks the D-Bus session bus whether the desktop portal offers ScreenCast, through
/// `dbus-send` (Reel links no D-Bus library yet): reads the `version` property of
/// `org.freedesktop.portal.ScreenCast` on `org.freedesktop.portal.Desktop`, which is also
/// what starts the portal on a desktop that activates it on demand.
enum PortalProbe {
    /// The arguments of `dbus-send` after the program name.
    static let arguments = [
        "--session", "--print-reply", "--reply-timeout=5000", "--dest=org.freedesktop.portal.Desktop",
        "/org/freedesktop/portal/desktop", "org.freedesktop.DBus.Properties.Get",
        "string:org.freedesktop.portal.ScreenCast", "string:version",
    ]

    /// Asks the session bus of `environment`.
    static func ask(environment: [String: String]) -> DoctorChecks.PortalAnswer {
        let path = environment["PATH"] ?? "/usr/bin:/bin"
        guard let executable = (path.split(separator: ":").map(String.init) + ["/usr/bin"])
            .map({ "\($0)/dbus-send" }).first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else {
            return .cannotAsk("dbus-send is not installed")
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.environment = environment
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        process.standardInput = FileHandle.nullDevice
        do { try process.run() } catch { return .cannotAsk("cannot run \(executable): \(error)") }
        let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return interpret(status: process.terminationStatus, output: output)
    }

    /// What `dbus-send`'s exit status and output (standard output and error together) mean.
    static func interpret(status: Int32, output: String) -> DoctorChecks.PortalAnswer {
        let firstError = output.split(separator: "\n").first { $0.hasPrefix("Error ") || $0.hasPrefix("Failed") }
            .map { String($0).trimmingCharacters(in: .whitespaces) } ?? output.trimmingCharacters(in: .whitespacesAndNewlines)
        if status == 0 {
            // "   variant       uint32 5"
            let version = output.split(whereSeparator: \.isWhitespace).last.flatMap { Int($0) }
            return version.map { .screenCast(version: $0) } ?? .noScreenCast("unexpected answer: \(firstError)")
        }
        if output.contains("Failed to open connection") || output.contains("Unable to autolaunch")
            || output.contains("DBus.Error.NoServer") || output.contains("DBus.Error.FileNotFound") {
            return .noSessionBus(firstError)
        }
        if output.contains("DBus.Error.ServiceUnknown") || output.contains("DBus.Error.NameHasNoOwner") || output.contains("DBus.Error.NoReply")
            || output.contains("DBus.Error.Spawn") || output.contains("DBus.Error.TimedOut") {
            return .noPortal(firstError)
        }
        if output.contains("DBus.Error.InvalidArgs") || output.contains("DBus.Error.UnknownInterface")
            || output.contains("DBus.Error.UnknownProperty") || output.contains("DBus.Error.UnknownObject")
            || output.contains("DBus.Error.UnknownMethod") {
            return .noScreenCast(firstError)
        }
        return .noPortal(firstError.isEmpty ? "dbus-send ended with status \(status)" : firstError)
    }
}
