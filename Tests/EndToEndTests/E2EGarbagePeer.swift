import Foundation
import PromiseModel
import PromiseRPC
#if canImport(Glibc)
import Glibc
#endif

/// A listener that answers every connection with a line that is not JSON: a
/// daemon gone wrong, to see promisectl's internal-error exit.
final class E2EGarbagePeer: Sendable {
    private let listener: Int32
    private let done = DispatchSemaphore(value: 0)

    init(path: String) throws {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        let rc = UnixSocketAddress(path: path)?.bind(fd) ?? -1
        guard rc == 0, listen(fd, 4) == 0 else { throw E2EHarnessError("cannot listen at \(path)") }
        listener = fd
        let done = self.done
        Thread.detachNewThread {
            let client = accept(fd, nil, nil)
            if client >= 0 {
                var buffer = [UInt8](repeating: 0, count: 4096)
                _ = read(client, &buffer, buffer.count)
                let garbage = Array("<html>not json</html>\n".utf8)
                _ = garbage.withUnsafeBytes { send(client, $0.baseAddress!, $0.count, Int32(MSG_NOSIGNAL)) }
                close(client)
            }
            done.signal()
        }
    }

    func stop() {
        shutdown(listener, Int32(SHUT_RDWR))
        _ = done.wait(timeout: .now() + 5)
        close(listener)
    }
}
