internal import CLibUV

/// A cross-thread wake-up: ``send()`` may be called from any thread (until
/// the handle is closed) and makes the loop call `body` once for one or more
/// sends. Created and closed on the loop thread.
final class UVAsync: UVHandle {
    private var body: (() -> Void)?

    init(loop: UVLoop, _ body: @escaping () -> Void) throws(UVError) {
        self.body = body
        try super.init(type: UV_ASYNC, "uv_async_init") { pointer in
            uv_async_init(loop.raw, UnsafeMutablePointer(OpaquePointer(pointer))) { raw in
                guard let async = UVHandle.object(UVAsync.self, from: UnsafeMutableRawPointer(raw)) else { return }
                async.body?()
            }
        }
    }

    /// The raw handle, for ``LoopExecutor``, which sends from other threads.
    var asyncPointer: UnsafeMutablePointer<uv_async_t> {
        UnsafeMutablePointer(OpaquePointer(pointer))
    }

    override func willClose() {
        body = nil
    }
}
