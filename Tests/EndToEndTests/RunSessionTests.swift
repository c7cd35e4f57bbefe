import Foundation
import PromiseClient
import PromiseModel
import PromiseRPC
import Synchronization
import Testing
@testable import promisectl

/// `promisectl run`'s loop in-process against a real daemon, with its poll
/// timeout made an hour: only the command's end itself can wake it then.
/// Structural, not timed: the bound below is 30 s for what takes a fraction
/// of a second when the wake works.
@Suite("promisectl run's session")
struct RunSessionTests {
    @Test("run returns when its command exits, though the command closed its output earlier and the poll timeout is an hour")
    func runWokenByCommandExit() throws {
        try E2EDaemon.with { daemon in
            // Arrange.
            let socketPath = daemon.socketPath
            let status = Status()
            let finished = DispatchSemaphore(value: 0)

            // Act: end of output first, exit 0.2 s later, when nothing else is left to wake the poll.
            Thread.detachNewThread {
                defer { finished.signal() }
                guard let client = try? BlockingPromiseClient(socketPath: socketPath, timeout: .seconds(10)) else { return }
                let session = RunSession(
                    client: client, id: "job", command: ["sh", "-c", "exec >/dev/null 2>&1; sleep 0.2"],
                    grace: .seconds(1), pollTimeout: .seconds(3_600))
                let result = try? session.run()
                status.value.withLock { $0 = result }
            }

            // Assert.
            #expect(finished.wait(timeout: .now() + 30) == .success, "run did not notice its command's end")
            #expect(status.value.withLock { $0 } == 0)
            let record = try daemon.ctl("get", "job")
            #expect(record.stdout == "fulfilled \"\"\n", "\(record)")
        }
    }
}

/// What the session thread returned.
private final class Status: Sendable {
    let value = Mutex<Int32?>(nil)
}
