import Foundation
import Testing

/// The README fits on a few screens and every link in it leads somewhere; its pictures are
/// small and made by a script. (Its examples run in ``ReadmeTests``.)
@Suite struct ReadmeLinkTests {
    /// The README's links, `[text](target)` and `![alt](target)`, in order.
    static func links(in markdown: String) -> [String] {
        var links: [String] = []
        var inCode = false
        for line in markdown.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("```") { inCode.toggle(); continue }
            guard !inCode else { continue }
            var rest = line[...]
            while let close = rest.range(of: "]("), let end = rest[close.upperBound...].firstIndex(of: ")") {
                links.append(String(rest[close.upperBound..<end]))
                rest = rest[rest.index(after: end)...]
            }
        }
        return links
    }

    /// GitHub's anchor of a heading: lower case, spaces to hyphens, punctuation dropped.
    static func anchor(_ heading: String) -> String {
        String(heading.lowercased().compactMap { $0 == " " ? "-" : ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") ? $0 : nil })
    }

    @Test func readmeFitsOnAFewScreens() throws {
        let readme = try String(contentsOf: Self.root.appendingPathComponent("README.md"), encoding: .utf8)
        let lines = readme.split(separator: "\n", omittingEmptySubsequences: false).count
        #expect(lines < 220, "the README has \(lines) lines: move the details into the articles or --help")
    }

    @Test func linksFindTheirAnchors() {
        let text = "See [the tests](#the-tests) and ![a picture](docs/a.png).\n```sh\nx [not](a link)\n```\n[b](CONTRIBUTING.md)"
        #expect(Self.links(in: text) == ["#the-tests", "docs/a.png", "CONTRIBUTING.md"])
        #expect(Self.anchor("Where the rest lives") == "where-the-rest-lives")
        #expect(Self.anchor("Porting from Apple's frameworks") == "porting-from-apples-frameworks")
    }

    /// Every link of the README leads somewhere: a file or folder of the repository, a heading
    /// of the README, or an article of the DocC catalog that the landing page lists (so that
    /// `scripts/docs` builds its page; it also checks the page is in the site it writes).
    @Test func everyLinkOfTheReadmeResolves() throws {
        let readme = try String(contentsOf: Self.root.appendingPathComponent("README.md"), encoding: .utf8)
        let landing = try String(contentsOf: Self.root.appendingPathComponent("Sources/Reel/Reel.docc/Reel.md"), encoding: .utf8)
        let anchors = Set(readme.split(separator: "\n").filter { $0.hasPrefix("#") }
            .map { Self.anchor($0.drop(while: { $0 == "#" }).trimmingCharacters(in: .whitespaces)) })
        let links = Self.links(in: readme)
        #expect(links.count >= 15, "\(links)")
        for link in links where !link.hasPrefix("https://") {
            if link.hasPrefix("#") {
                #expect(anchors.contains(String(link.dropFirst())), "the README links \(link), a heading it does not have")
                continue
            }
            #expect(!link.contains("://") && !link.hasPrefix("/"), "\(link): a link into the repository is relative")
            let path = String(link.split(separator: "#", maxSplits: 1)[0])
            #expect(FileManager.default.fileExists(atPath: Self.root.appendingPathComponent(path).path),
                    "the README links \(link), which is not in the repository")
            if path.hasPrefix("Sources/Reel/Reel.docc/"), path.hasSuffix(".md") {
                let article = URL(fileURLWithPath: path).deletingPathExtension().lastPathComponent
                #expect(landing.contains("<doc:\(article)>"), "\(article) is in no topic group of Reel.md, so docs do not list it")
            }
        }
    }

    /// The README's pictures are made by scripts/screenshots and stay small.
    @Test func thePicturesAreSmallAndMadeByAScript() throws {
        let readme = try String(contentsOf: Self.root.appendingPathComponent("README.md"), encoding: .utf8)
        let pictures = Self.links(in: readme).filter { $0.hasSuffix(".png") || $0.hasSuffix(".gif") }
        #expect(pictures.contains("docs/preview.png") && pictures.contains("docs/recording.gif"), "\(pictures)")
        let script = try String(contentsOf: Self.root.appendingPathComponent("scripts/screenshots"), encoding: .utf8)
        for picture in pictures {
            #expect(script.contains(picture), "scripts/screenshots makes \(picture)")
            let size = try FileManager.default.attributesOfItem(atPath: Self.root.appendingPathComponent(picture).path)[.size] as? Int ?? 0
            #expect(size > 0 && size < 400_000, "\(picture) is \(size) bytes")
        }
    }

    static let root = ReadmeTests.root
}
