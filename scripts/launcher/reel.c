// The `reel` that scripts/install and the .deb put in bin/: a few lines of C that block the
// signals reel answers and run the real reel (the Swift program, in lib/reel/reel) in their
// place. scripts/build-launcher builds it, statically linked.
//
// The real reel catches INT, TERM, HUP, QUIT, USR1 and USR2 with the first statement of its
// `main` (ReelCLI's ProcessSignals), but before `main` the dynamic loader maps and binds its
// hundred-odd libraries (FFmpeg, PulseAudio, PipeWire, SDL…) for 20 ms and more, during which
// such a signal did what it does by default: end the process without a word. This launcher,
// statically linked, needs no loader: it reaches `main` within a fraction of a millisecond,
// blocks those signals, and execs the real reel. A blocked signal stays pending and the signal
// mask survives exec, so a stop sent while the real reel loads waits until its handlers are
// in place and it unblocks them, and is answered then as any other. (A signal sent before the
// launcher's first instruction still does what it does by default: no program can block a
// signal before it runs.)
//
// The real reel is looked for beside the launcher's own file: ../lib/reel/reel (installed:
// bin/reel and lib/reel/reel), else reel-core (scripts/build-release's .build/dist). Arguments
// and environment are passed on as they are, argv[0] included, so that reel names itself as it
// was called.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int main(int argc, char **argv) {
    (void)argc;
    static const int answered[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2 };
    sigset_t set;
    sigemptyset(&set);
    // Blocked whatever their action: a signal the parent made ignored stays ignored (reel
    // keeps nohup's SIGHUP ignored), and one reel answers anyway (the SIGINT and SIGQUIT a
    // script's background command starts with ignored) waits for its handler instead of being
    // dropped (a blocked signal stays pending even while it is ignored).
    for (size_t i = 0; i < sizeof answered / sizeof answered[0]; i++) sigaddset(&set, answered[i]);
    sigprocmask(SIG_BLOCK, &set, NULL);

    // Standard input, output and error open, on /dev/null where the caller closed them
    // (`reel record >&- 2>&-`): else the real reel's first files and pipes took their numbers
    // and what it printed went into them (ReelCLI's StandardDescriptors does the same).
    for (int fd = 0; fd <= 2; fd++) {
        if (fcntl(fd, F_GETFD) != -1 || errno != EBADF) continue;
        int opened = open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY);
        if (opened >= 0 && opened != fd) { dup2(opened, fd); close(opened); }
    }

    char self[PATH_MAX];
    ssize_t length = readlink("/proc/self/exe", self, sizeof self - 1);
    if (length <= 0) {
        fprintf(stderr, "reel: error: cannot tell where reel is installed (/proc/self/exe: %s); is /proc mounted?\n", strerror(errno));
        return 127;
    }
    self[length] = '\0';
    char *slash = strrchr(self, '/');
    if (slash == NULL) return 127;
    *slash = '\0';
    struct stat own;
    if (stat("/proc/self/exe", &own) != 0) own.st_ino = 0;

    static const char *const candidates[] = { "../lib/reel/reel", "reel-core" };
    char path[PATH_MAX];
    int failure = ENOENT;
    for (size_t i = 0; i < sizeof candidates / sizeof candidates[0]; i++) {
        if (snprintf(path, sizeof path, "%s/%s", self, candidates[i]) >= (int)sizeof path) continue;
        struct stat found;
        if (stat(path, &found) != 0 || !S_ISREG(found.st_mode)) continue;
        if (found.st_dev == own.st_dev && found.st_ino == own.st_ino) continue;  // this launcher itself
        execv(path, argv);
        failure = errno;
    }
    fprintf(stderr, "reel: error: cannot start reel from %s/../lib/reel/reel: %s (the installation is incomplete: install reel again)\n",
            self, strerror(failure));
    return 127;
}
