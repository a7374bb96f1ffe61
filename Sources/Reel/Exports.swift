// `import Reel` brings the whole public API: the core types, the host clock, the Linux sources
// and the writer.
@_exported import ReelCore
@_exported import ReelSystem
@_exported import ReelFFmpeg
@_exported import ReelLinux
