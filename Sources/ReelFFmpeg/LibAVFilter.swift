import Foundation
internal import CFFmpeg
import ReelCore

/// libavfilter's functions, reached through `dlopen` when a filter is first made instead of
/// linked: linking it loaded and relocated it and the 29 libraries only it pulls in (flite's
/// voices, libplacebo, Vulkan, LAPACK…) at every start, 10.7 MiB of resident memory in every
/// recording and 11.2 MiB at `reel --version` (bench/RESULTS.md, issue 32), though only
/// filters (`--filter`, `--look`, audio filters) and GIFs call it. `CFFmpeg` keeps its
/// headers for the types and does not link it, so a direct call of one of its functions fails
/// the build (an undefined symbol) rather than bring it back at start.
///
/// The one owner of the library: it is opened once, on the first ``load()`` of any thread,
/// and never closed (the graphs made hold pointers into it); each function is looked up once.
struct LibAVFilter: @unchecked Sendable {
    // @unchecked: the fields are C function pointers into a library that is never unloaded,
    // set once and never changed.

    let avfilter_graph_alloc: @convention(c) () -> UnsafeMutablePointer<AVFilterGraph>?
    let avfilter_graph_free: @convention(c) (UnsafeMutablePointer<UnsafeMutablePointer<AVFilterGraph>?>?) -> Void
    let avfilter_graph_create_filter: @convention(c) (UnsafeMutablePointer<UnsafeMutablePointer<AVFilterContext>?>?, UnsafePointer<AVFilter>?,
                                                      UnsafePointer<CChar>?, UnsafePointer<CChar>?, UnsafeMutableRawPointer?,
                                                      UnsafeMutablePointer<AVFilterGraph>?) -> Int32
    let avfilter_graph_parse_ptr: @convention(c) (UnsafeMutablePointer<AVFilterGraph>?, UnsafePointer<CChar>?,
                                                  UnsafeMutablePointer<UnsafeMutablePointer<AVFilterInOut>?>?,
                                                  UnsafeMutablePointer<UnsafeMutablePointer<AVFilterInOut>?>?, UnsafeMutableRawPointer?) -> Int32
    let avfilter_graph_config: @convention(c) (UnsafeMutablePointer<AVFilterGraph>?, UnsafeMutableRawPointer?) -> Int32
    let avfilter_get_by_name: @convention(c) (UnsafePointer<CChar>?) -> UnsafePointer<AVFilter>?
    let avfilter_filter_pad_count: @convention(c) (UnsafePointer<AVFilter>?, Int32) -> UInt32
    let avfilter_pad_get_type: @convention(c) (OpaquePointer?, Int32) -> AVMediaType
    let avfilter_inout_alloc: @convention(c) () -> UnsafeMutablePointer<AVFilterInOut>?
    let avfilter_inout_free: @convention(c) (UnsafeMutablePointer<UnsafeMutablePointer<AVFilterInOut>?>?) -> Void
    let av_buffersrc_add_frame_flags: @convention(c) (UnsafeMutablePointer<AVFilterContext>?, UnsafeMutablePointer<AVFrame>?, Int32) -> Int32
    let av_buffersink_get_frame: @convention(c) (UnsafeMutablePointer<AVFilterContext>?, UnsafeMutablePointer<AVFrame>?) -> Int32
    let av_buffersink_get_time_base: @convention(c) (UnsafePointer<AVFilterContext>?) -> AVRational
    let av_buffersink_get_w: @convention(c) (UnsafePointer<AVFilterContext>?) -> Int32
    let av_buffersink_get_h: @convention(c) (UnsafePointer<AVFilterContext>?) -> Int32

    /// The library's file name: the major version of the headers Reel was built against
    /// (`libavfilter.so.8` on Debian 12), so that the functions are those the types describe.
    static let fileName = "libavfilter.so.\(LIBAVFILTER_VERSION_MAJOR)"

    /// The functions, the library loaded on the first call (from any thread: a `static let`
    /// is set once); later calls give the same functions, or the same error.
    ///
    /// - Throws: ``ReelError/Code/unsupportedFormat`` when the library cannot be loaded or
    ///   lacks a function: filters and GIFs cannot be made, everything else works.
    static func load() throws -> LibAVFilter {
        try loaded.get()
    }

    private static let loaded = load(fileName)

    /// Opens `file` and looks up each function in it; a failure names the file and the reason
    /// (the loader's message, or the function missing) and leaves nothing open.
    static func load(_ file: String) -> Result<LibAVFilter, ReelError> {
        guard let handle = dlopen(file, RTLD_NOW | RTLD_LOCAL) else {
            let reason = dlerror().map { String(cString: $0) } ?? "the loader gave no reason"
            return .failure(ReelError(.unsupportedFormat, "cannot load libavfilter, which filters and GIFs need: \(reason)",
                                      hint: hint))
        }
        /// The function `name` as its type; throws when the library has none of that name.
        func function<F>(_ name: String) throws(ReelError) -> F {
            guard let address = dlsym(handle, name) else {
                throw ReelError(.unsupportedFormat, "cannot use libavfilter, which filters and GIFs need: \(file) has no function \(name)",
                                hint: hint)
            }
            return unsafeBitCast(address, to: F.self)
        }
        do throws(ReelError) {
            return .success(try LibAVFilter(
                avfilter_graph_alloc: function("avfilter_graph_alloc"),
                avfilter_graph_free: function("avfilter_graph_free"),
                avfilter_graph_create_filter: function("avfilter_graph_create_filter"),
                avfilter_graph_parse_ptr: function("avfilter_graph_parse_ptr"),
                avfilter_graph_config: function("avfilter_graph_config"),
                avfilter_get_by_name: function("avfilter_get_by_name"),
                avfilter_filter_pad_count: function("avfilter_filter_pad_count"),
                avfilter_pad_get_type: function("avfilter_pad_get_type"),
                avfilter_inout_alloc: function("avfilter_inout_alloc"),
                avfilter_inout_free: function("avfilter_inout_free"),
                av_buffersrc_add_frame_flags: function("av_buffersrc_add_frame_flags"),
                av_buffersink_get_frame: function("av_buffersink_get_frame"),
                av_buffersink_get_time_base: function("av_buffersink_get_time_base"),
                av_buffersink_get_w: function("av_buffersink_get_w"),
                av_buffersink_get_h: function("av_buffersink_get_h")))
        } catch {
            dlclose(handle)
            return .failure(error)
        }
    }

    private static let hint = "install FFmpeg's libavfilter \(LIBAVFILTER_VERSION_MAJOR) (Debian: apt install libavfilter\(LIBAVFILTER_VERSION_MAJOR)), or record without filters and into another format than GIF"
}
