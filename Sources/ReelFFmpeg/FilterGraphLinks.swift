internal import CFFmpeg
import ReelCore

/// Reads a filter graph's text into a graph whose ends are made already: each labelled open
/// input fed by a source (`[in]`, `[palette]`), the open output going to a sink (`[out]`), and
/// configures it. The one place the GIF's and the audio filters' graphs are linked.
enum FilterGraphLinks {
    /// Parses `text` into `graph`, linking `sources` and `sink` by their labels, and configures
    /// the graph; returns libavfilter's status (negative: refused).
    static func parseAndConfigure(_ graph: UnsafeMutablePointer<AVFilterGraph>, _ text: String,
                                  sources: [(label: String, context: UnsafeMutablePointer<AVFilterContext>)],
                                  sink: (label: String, context: UnsafeMutablePointer<AVFilterContext>)) throws -> Int32 {
        let avfilter = try LibAVFilter.load()
        var outputs: UnsafeMutablePointer<AVFilterInOut>?
        var inputs = avfilter.avfilter_inout_alloc()
        defer {
            avfilter.avfilter_inout_free(&outputs)
            avfilter.avfilter_inout_free(&inputs)
        }
        // Built from the last so that each end points to the next.
        for source in sources.reversed() {
            guard let end = avfilter.avfilter_inout_alloc() else { throw ReelError(.encodingFailed, "cannot allocate a filter graph: out of memory") }
            end.pointee.name = av_strdup(source.label)
            end.pointee.filter_ctx = source.context
            end.pointee.pad_idx = 0
            end.pointee.next = outputs
            outputs = end
        }
        guard let i = inputs else { throw ReelError(.encodingFailed, "cannot allocate a filter graph: out of memory") }
        i.pointee.name = av_strdup(sink.label)
        i.pointee.filter_ctx = sink.context
        i.pointee.pad_idx = 0
        let status = avfilter.avfilter_graph_parse_ptr(graph, text, &inputs, &outputs, nil)
        guard status >= 0 else { return status }
        return avfilter.avfilter_graph_config(graph, nil)
    }
}
