import Foundation
import PromiseModel
import PromiseRPC
import Testing
#if canImport(Glibc)
import Glibc
#endif

@Suite("UnixSocketAddress")
struct UnixSocketAddressTests {
    @Test("an empty path or one longer than sun_path holds is refused; 107 bytes fit")
    func pathLengths() {
        #expect(UnixSocketAddress.maxPathBytes == 107)
        #expect(UnixSocketAddress(path: "") == nil)
        #expect(UnixSocketAddress(path: String(repeating: "a", count: 108)) == nil)
        #expect(UnixSocketAddress(path: String(repeating: "a", count: 107))?.path.count == 107)
    }

    @Test("bind then connect reach each other; connecting to nothing fails with ENOENT")
    func bindAndConnect() throws {
        let path = NSTemporaryDirectory() + "usa-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).sock"
        defer { unlink(path) }
        let address = try #require(UnixSocketAddress(path: path))

        let missing = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        defer { close(missing) }
        #expect(address.connect(missing) == -1)
        #expect(errno == ENOENT)

        let listener = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        defer { close(listener) }
        #expect(address.bind(listener) == 0)
        #expect(listen(listener, 1) == 0)
        let client = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        defer { close(client) }
        #expect(address.connect(client) == 0)
    }
}
