import Foundation
import PromiseClient
import PromiseModel
import PromiseRPC
import Testing
#if canImport(Glibc)
import Glibc
import PromiseJSON
#endif

/// `Type=notify` readiness: under a service manager (`$NOTIFY_SOCKET`),
/// `promised` sends `READY=1` once it serves, so that `systemctl start`
/// returns only then; its commands do not inherit the variable.
@Suite("readiness for systemd: READY=1 on NOTIFY_SOCKET")
struct ServiceNotificationTests {
    /// A datagram socket standing in for systemd's, bound at `name` (a path, or `@abstract`).
    private final class NotifyListener {
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)

        init(_ name: String) throws {
            var address = sockaddr_un()
            address.sun_family = sa_family_t(AF_UNIX)
            var bytes = Array(name.utf8)
            let abstract = bytes.first == UInt8(ascii: "@")
            if abstract { bytes[0] = 0 }
            withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: bytes) }
            let length = socklen_t(MemoryLayout<sockaddr_un>.offset(of: \.sun_path)! + bytes.count + (abstract ? 0 : 1))
            let bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) }
            }
            guard bound == 0 else { throw E2EHarnessError("bind \(name): errno \(errno)") }
            var timeout = timeval(tv_sec: 20, tv_usec: 0)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        }

        deinit { close(fd) }

        /// The next datagram, or nil after 20 s.
        func receive() -> String? {
            var buffer = [UInt8](repeating: 0, count: 4096)
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            return count > 0 ? String(decoding: buffer[..<count], as: UTF8.self) : nil
        }
    }

    @Test("READY=1 and MAINPID come once the daemon answers, on a path or an abstract NOTIFY_SOCKET",
          arguments: ["path", "abstract"])
    func readyOnceServing(kind: String) throws {
        let folder = try E2ETemporaryFolder()
        let name = kind == "path" ? folder.path + "/notify" : "@promised-notify-\(UUID().uuidString)"
        let listener = try NotifyListener(name)
        let socket = folder.path + "/s.sock"
        let daemon = try E2ECommand.start(
            E2EBinaries.promised, ["--in-memory", "--socket", socket], environment: ["NOTIFY_SOCKET": name])
        defer {
            kill(daemon.pid, SIGTERM)
            _ = try? daemon.finish(timeout: .seconds(10))
        }

        let message = listener.receive()
        #expect(message == "READY=1\nMAINPID=\(daemon.pid)", "\(daemon.stderrSoFar)")
        // Ready means serving: the first request after it is answered.
        let client = try BlockingPromiseClient(socketPath: socket, timeout: .seconds(10))
        defer { client.close() }
        #expect(try client.call("info")["protocol"] == 1)
        // A command the daemon runs does not see the service manager's socket.
        try client.call("create", ["id": "p"])
        try client.call("then", ["id": "p", "childId": "c", "exec": ["sh", "-c", "echo ${NOTIFY_SOCKET-unset}"]])
        try client.call("resolve", ["id": "p", "value": nil])
        let child = try E2E.record(client.call("wait", ["id": "c", "timeoutMs": 10_000], timeout: .seconds(15)))
        #expect(child.value?.stringValue?.trimmingCharacters(in: .newlines) == "unset", "\(child)")
    }
}
