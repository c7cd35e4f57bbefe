import Foundation
import PromiseJSON
import PromiseModel
import PromiseRPC
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A one-connection stand-in for the daemon: listens on a temporary Unix
/// socket, accepts one client and plays `script` against it on its own thread.
/// Lets the client's tests fix exactly what the "daemon" sends, and when.
final class ClientFakeServer: Sendable {
    let path: String
    private let directory: String
    private let listener: Int32
    private let finished = DispatchSemaphore(value: 0)
    private let stopped = Mutex(false)

    init(_ script: @escaping @Sendable (ClientFakeConnection) throws -> Void) throws {
        directory = NSTemporaryDirectory() + "client-fake-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        path = directory + "/s.sock"
        listener = try ClientFakeServer.listen(at: path)
        let listener = self.listener
        let finished = self.finished
        Thread.detachNewThread {
            let fd = accept(listener, nil, nil)
            if fd >= 0 {
                let connection = ClientFakeConnection(fd: fd)
                try? script(connection)
                connection.close()
            }
            finished.signal()
        }
    }

    /// Waits (bounded) for the script to end, then removes the socket.
    func stop() {
        guard stopped.withLock({ done in defer { done = true }; return !done }) else { return }
        shutdown(listener, Int32(SHUT_RDWR))
        _ = finished.wait(timeout: .now() + 5)
        close(listener)
        try? FileManager.default.removeItem(atPath: directory)
    }

    static func listen(at path: String) throws -> Int32 {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        let rc = UnixSocketAddress(path: path)?.bind(fd) ?? -1
        guard rc == 0, Glibc.listen(fd, 8) == 0 else { throw POSIXError(.EADDRINUSE) }
        return fd
    }
}

/// The fake daemon's side of the connection.
final class ClientFakeConnection: @unchecked Sendable {  // used only by the fake server's thread
    private let fd: Int32
    private var buffer: [UInt8] = []

    init(fd: Int32) { self.fd = fd }

    /// The next line the client sent, parsed; nil at end of input or after 5 s.
    func readMessage() throws -> JSONValue? {
        guard let line = readLine() else { return nil }
        return try JSONValue(parsing: line)
    }

    func readLine() -> [UInt8]? {
        let deadline = Date().addingTimeInterval(5)
        while true {
            if let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                let line = Array(buffer[..<newline])
                buffer.removeFirst(newline + 1)
                return line
            }
            var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard Date() < deadline, poll(&descriptor, 1, 100) >= 0 else { return nil }
            if descriptor.revents == 0 { continue }
            var chunk = [UInt8](repeating: 0, count: 4096)
            let count = read(fd, &chunk, chunk.count)
            if count <= 0 { return nil }
            buffer.append(contentsOf: chunk[..<count])
        }
    }

    func write(_ text: String) {
        let bytes = Array((text + "\n").utf8)
        _ = bytes.withUnsafeBytes { send(fd, $0.baseAddress!, $0.count, Int32(MSG_NOSIGNAL)) }
    }

    /// Answers `request` with `result`.
    func answer(_ request: JSONValue, result: JSONValue) {
        let response: JSONValue = ["jsonrpc": "2.0", "id": request["id"] ?? .null, "result": result]
        write(response.description)
    }

    func close() { Glibc.close(fd) }
}
