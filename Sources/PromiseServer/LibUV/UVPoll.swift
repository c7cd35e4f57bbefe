internal import CLibUV
import Glibc

/// Watches a descriptor this object owns for readability (`uv_poll_t`), and
/// closes the descriptor once libuv has let go of it. Loop-thread only.
final class UVPoll: UVHandle {
    let fileDescriptor: Int32
    private var onReadable: ((UVError?) -> Void)?

    /// Takes `fileDescriptor` over: it is closed when the handle is, or here
    /// if `uv_poll_init` fails.
    init(loop: UVLoop, fileDescriptor: Int32) throws(UVError) {
        self.fileDescriptor = fileDescriptor
        do {
            try super.init(type: UV_POLL, "uv_poll_init") { pointer in
                uv_poll_init(loop.raw, UnsafeMutablePointer(OpaquePointer(pointer)), fileDescriptor)
            }
        } catch {
            Glibc.close(fileDescriptor)
            throw error
        }
        // Closed only after uv_close has taken it out of epoll.
        onClose = { Glibc.close(fileDescriptor) }
    }

    /// Calls `body` each time the descriptor is readable (nil), or with the error.
    func startReadable(_ body: @escaping (UVError?) -> Void) throws(UVError) {
        onReadable = body
        try uvCheck(uv_poll_start(UnsafeMutablePointer(OpaquePointer(pointer)), Int32(UV_READABLE.rawValue)) { raw, status, _ in
            guard let poll = UVHandle.object(UVPoll.self, from: UnsafeMutableRawPointer(raw)) else { return }
            poll.onReadable?(status < 0 ? UVError(code: status, function: "uv_poll") : nil)
        }, "uv_poll_start")
    }

    override func willClose() {
        onReadable = nil
    }
}
