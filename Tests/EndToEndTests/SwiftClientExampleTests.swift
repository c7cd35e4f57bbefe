import Foundation
import Testing

/// examples/swift-client, a package that depends on this one by path, built
/// and run as a user would, against a private daemon.
@Suite("examples/swift-client")
struct SwiftClientExampleTests {
    @Test("RemotePipeline builds against the library and meets its script on typed ids")
    func remotePipeline() throws {
        let root = E2EBinaries.packageRoot
        let package = root.appendingPathComponent("examples/swift-client").path
        // Kept between runs (ignored by git, as every .build folder).
        let scratch = root.appendingPathComponent(".build/examples-swift-client").path
        let built = try E2ECommand.run(
            "/usr/bin/env", ["swift", "build", "--package-path", package, "--scratch-path", scratch, "--product", "RemotePipeline"],
            timeout: .seconds(1800))
        #expect(built.status == 0, "swift build: \(built.stdout.suffix(3000)) \(built.stderr.suffix(3000))")
        guard built.status == 0 else { return }

        try E2EDaemon.with { daemon in
            let result = try E2ECommand.run(scratch + "/debug/RemotePipeline", [daemon.socketPath], timeout: .seconds(60))
            #expect(result.status == 0, "\(result)")
            #expect(result.stdout == "lib bytes: 4096\ntest: passed\nwatched: lib fulfilled\nwatched: test fulfilled\n")
        }
    }
}
