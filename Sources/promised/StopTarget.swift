import Foundation
import Glibc
import PromiseModel
import PromiseRPC
import PromiseServer

/// What a stop signal stops: nothing yet while the store loads (then the
/// process just exits: nothing was acknowledged), the server once it is made.
final class StopTarget: @unchecked Sendable {  // `lock` guards `server`.
    private let lock = NSLock()
    private var server: Server?

    /// From now on, signals stop `server`.
    func serve(_ server: Server) {
        lock.withLock { self.server = server }
    }

    func stop() {
        guard let server = lock.withLock({ server }) else { _exit(0) }
        server.stop()
    }

    /// Runs `body` on the loop, once it gets there.
    func acknowledge(_ body: @escaping @Sendable () -> Void) {
        guard let server = lock.withLock({ server }) else { return body() }
        server.executor.execute(body)
    }
}
