import Foundation
import PromiseModel
import PromiseRPC
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// `promised & promisectl …` at once: the daemon listens only once its
/// store is loaded, so the first command found nothing (69);
/// `promisectl --wait-daemon D` waits for it first.
@Suite("promisectl --wait-daemon")
struct DaemonWaitTests {
    @Test("--wait-daemon 15s runs the command once a daemon that starts late listens; without it the same line exits 69")
    func waitsForALateDaemon() throws {
        let folder = try E2ETemporaryFolder()
        let socket = folder.path + "/s.sock"
        let early = try E2ECommand.run(E2EBinaries.promisectl, ["--socket", socket, "create", "x"])
        #expect(early.status == 69, "\(early)")

        // A daemon that starts listening a second from now.
        let daemon = try E2ECommand.start(
            "/bin/sh", ["-c", "sleep 1 && exec \"$0\" \"$@\"", E2EBinaries.promised, "--in-memory", "--socket", socket])
        defer {
            kill(daemon.pid, SIGTERM)
            _ = try? daemon.finish(timeout: .seconds(10))
        }
        let waited = try E2ECommand.run(E2EBinaries.promisectl, ["--wait-daemon", "15s", "--socket", socket, "create", "x"])
        #expect(waited.status == 0, "\(waited) \(daemon.stderrSoFar)")
        #expect(waited.stdout == "x\n")
        // After the command too, and on ArgumentParser's path (info is not a fast-path command).
        let info = try E2ECommand.run(E2EBinaries.promisectl, ["--wait-daemon=1s", "info", "--socket", socket])
        #expect(info.status == 0, "\(info)")
    }

    @Test("--wait-daemon 300ms with no daemon: exits 69 after about that long, saying so; a bad duration exits 64")
    func givesUp() throws {
        let folder = try E2ETemporaryFolder()
        let socket = folder.path + "/none.sock"
        let started = ContinuousClock.now
        let result = try E2ECommand.run(E2EBinaries.promisectl, ["--wait-daemon", "300ms", "--socket", socket, "get", "x"])
        let took = ContinuousClock.now - started
        #expect(result.status == 69, "\(result)")
        #expect(result.stderr.hasPrefix("promisectl: no daemon answered at \(socket) within --wait-daemon 0.3s: "), "\(result)")
        #expect(took >= .milliseconds(250), "gave up after \(took)")
        let bad = try E2ECommand.run(E2EBinaries.promisectl, ["--wait-daemon", "soon", "get", "x"])
        #expect(bad.status == 64, "\(bad)")
        #expect(bad.stderr == "promisectl: --wait-daemon takes a duration (seconds, or 500ms, 10s, 2m), not soon\n")
    }
}
