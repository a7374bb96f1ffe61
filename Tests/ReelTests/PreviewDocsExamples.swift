import Foundation
import Reel
import ReelPreview

// The Swift snippet of ReelPreview's page (Sources/Reel/Reel.docc/ReelPreview.md), between
// DOCS-SNIPPET-BEGIN and DOCS-SNIPPET-END so that it compiles with every build (DocsTests).

/// The preview window's page's example, as a function so that it compiles (it opens a window).
enum PreviewDocsExamples {
    static func previewACamera() async throws {
        // DOCS-SNIPPET-BEGIN
        let session = CaptureSession()
        let camera = try Cameras.source(for: .testPattern(.blue))
        try session.addInput(camera)
        let preview = PreviewWindow(settings: .init(title: "Camera", showsRecordButton: true))
        preview.onKey = { key in if key == .stop { Task { await session.stop() } } }
        try session.addOutput(preview)
        try await session.start()
        // DOCS-SNIPPET-END
    }
}
