/// Python that drives a program on a pseudo-terminal, for the tests of keys typed on a
/// terminal: ``start(_:)`` gives a script's beginning, which runs `sys.argv[1]` (the reel
/// binary) with the arguments given on a new terminal as `fd` and defines
/// `read_until(pattern, seconds=60)` (what it read collects in `out`); the test's own steps
/// follow, and ``finish`` ends the script: it waits for the end and prints a JSON object of
/// `steps`, `status` and `output`.
public enum TerminalScript {
    /// The beginning of a script that runs reel with `arguments` (Python expressions, e.g.
    /// `"\"record\""` or `"path"`: `path` is `sys.argv[2]`).
    public static func start(_ arguments: [String]) -> String {
        """
        import json, os, pty, re, select, sys, time
        reel, path = sys.argv[1], sys.argv[2]
        pid, fd = pty.fork()
        if pid == 0:
            os.execv(reel, [reel, \(arguments.joined(separator: ", "))])
        out = b""
        def read_until(pattern, seconds=60):
            global out
            end = time.time() + seconds
            while time.time() < end:
                ready, _, _ = select.select([fd], [], [], 0.2)
                if not ready:
                    continue
                try:
                    chunk = os.read(fd, 4096)
                except OSError:
                    return False
                if not chunk:
                    return False
                out += chunk
                if re.search(pattern, out):
                    return True
            return False

        """
    }

    /// The end of the script: reads what is left, waits for reel and prints the result.
    public static let finish = """

        read_until(rb"(?!)", 60)
        _, status = os.waitpid(pid, 0)
        print(json.dumps({"steps": steps, "status": os.waitstatus_to_exitcode(status), "output": out.decode(errors="replace")}))
        """
}
