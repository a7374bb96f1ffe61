import Foundation
import Testing
@testable import ReelFFmpeg
import ReelCore

/// libavfilter, opened when a filter is first made: a library that cannot be loaded, or that
/// lacks a function, is a clear error (filters cannot be made), never a crash.
@Suite struct LibAVFilterTests {
    @Test func theLibraryOfTheHeadersLoadsWithEveryFunction() throws {
        #expect(LibAVFilter.fileName == "libavfilter.so.8", "Debian 12's soname, the headers' major version")
        let avfilter = try LibAVFilter.load(LibAVFilter.fileName).get()
        #expect(avfilter.avfilter_get_by_name("hue") != nil)
        #expect(avfilter.avfilter_get_by_name("no-such-filter") == nil)
        // The table every caller shares is the same library's.
        #expect(try LibAVFilter.load().avfilter_get_by_name("buffersink") == avfilter.avfilter_get_by_name("buffersink"))
    }

    @Test func aMissingLibraryIsAnErrorNamingIt() {
        let result = LibAVFilter.load("libavfilter-reel-test-none.so.8")
        guard case .failure(let error) = result else { Issue.record("loaded a library that does not exist"); return }
        #expect(error.code == .unsupportedFormat)
        #expect(error.message.hasPrefix("cannot load libavfilter, which filters and GIFs need: libavfilter-reel-test-none.so.8: cannot open shared object file"),
                "\(error.message)")
        #expect(error.hint?.contains("apt install libavfilter8") == true)
    }

    /// Another library under libavfilter's name: the first function it lacks is named.
    @Test func aLibraryWithoutTheFunctionsIsAnErrorNamingTheFirstMissing() {
        let result = LibAVFilter.load("libavutil.so.57")
        guard case .failure(let error) = result else { Issue.record("libavutil taken for libavfilter"); return }
        #expect(error.code == .unsupportedFormat)
        #expect(error.message == "cannot use libavfilter, which filters and GIFs need: libavutil.so.57 has no function avfilter_graph_alloc")
    }
}
