import Foundation
import Testing

/// The scripts in examples/, run as a user would, against a private daemon.
@Suite("examples/")
struct ExampleScriptTests {
    private func script(_ name: String) -> String {
        E2EBinaries.packageRoot.appendingPathComponent("examples/\(name)").path
    }

    private func environment(_ daemon: E2EDaemon, _ extra: [String: String] = [:]) -> [String: String] {
        ["PROMISECTL": E2EBinaries.promisectl, "PROMISED_SOCKET": daemon.socketPath].merging(extra) { _, new in new }
    }

    @Test("parallel-pipeline.sh fans out, joins and runs the final step")
    func parallelPipeline() throws {
        try E2EDaemon.with { daemon in
            let result = try E2ECommand.run(
                "/bin/sh", [script("parallel-pipeline.sh"), "5"], environment: environment(daemon), timeout: .seconds(30))
            #expect(result.status == 0, "\(result)")
            #expect(result.stdout == "sum of squares of 1..5: 55\n")
        }
    }

    @Test("meet-waiter.sh started first receives what meet-resolver.sh sends")
    func meetingScripts() throws {
        try E2EDaemon.with { daemon in
            let env = environment(daemon, ["MEETING_ID": "examples/test-meeting", "MEETING_TIMEOUT": "20"])
            let waiter = try E2ECommand.start("/bin/sh", [script("meet-waiter.sh")], environment: env)
            Thread.sleep(forTimeInterval: 0.3)
            let resolver = try E2ECommand.run("/bin/sh", [script("meet-resolver.sh"), "hello from the test"], environment: env)
            #expect(resolver.status == 0, "\(resolver)")
            let waited = try waiter.finish(timeout: .seconds(20))
            #expect(waited.status == 0, "\(waited)")
            #expect(waited.stdout == "got: hello from the test\n")
            let again = try E2ECommand.run("/bin/sh", [script("meet-resolver.sh"), "too late"], environment: env)
            #expect(again.status == 5)
        }
    }

    @Test("meet-waiter.sh exits 3 when nobody comes in time")
    func meetingTimeout() throws {
        try E2EDaemon.with { daemon in
            let env = environment(daemon, ["MEETING_ID": "examples/nobody", "MEETING_TIMEOUT": "0.2"])
            let waited = try E2ECommand.run("/bin/sh", [script("meet-waiter.sh")], environment: env)
            #expect(waited.status == 3, "\(waited)")
        }
    }
}
