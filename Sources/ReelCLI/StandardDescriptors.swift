import Foundation

/// Standard input, output and error as reel needs them: open. A program started with one of
/// them closed (`reel record >&- 2>&-`, as a launcher or a daemon may) would give the first
/// descriptors it opens those numbers, so what it prints went into files and pipes of its
/// own: the signal pipe read its summary back as an exit status (exit 242 after 0.4 s, the
/// recording lost; issue 26, F12). Each closed one is opened on /dev/null first of all, as a
/// daemon does, so reel behaves as with `>/dev/null 2>/dev/null`.
public enum StandardDescriptors {
    /// Opens /dev/null on each of descriptors 0, 1 and 2 that is closed; call first of all,
    /// before anything opens a file or a pipe.
    public static func openTheClosed() {
        for fd: Int32 in 0...2 where fcntl(fd, F_GETFD) == -1 && errno == EBADF {
            // The lowest free number: this one, as those below it are open by now.
            let opened = open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY)
            if opened >= 0 && opened != fd {
                _ = dup2(opened, fd)
                close(opened)
            }
        }
    }
}
