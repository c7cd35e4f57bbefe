import Foundation
import Glibc

/// The floor: a line echo server, one thread per connection, one line in and
/// the same line out. No server answering a line over a Unix socket can do
/// better than this by much.
final class EchoServer: Sendable {
    let path: String
    private let listener: Int32

    init(path: String) throws {
        self.path = path
        listener = try listenUnix(path)
        let listener = self.listener
        Thread.detachNewThread {
            while true {
                let fd = accept(listener, nil, nil)
                if fd < 0 {
                    if errno == EINTR || errno == ECONNABORTED { continue }
                    return
                }
                Thread.detachNewThread { EchoServer.serve(fd) }
            }
        }
    }

    private static func serve(_ fd: Int32) {
        let reader = BufferedReader(fd: fd)
        var out: [UInt8] = []
        while let line = try? reader.readLine() {
            out.removeAll(keepingCapacity: true)
            out += line
            out.append(UInt8(ascii: "\n"))
            if (try? writeAll(fd, out)) == nil { break }
        }
        close(fd)
    }

    func stop() {
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
        unlink(path)
    }
}
