internal import CLibUV

/// Runs `body` once per loop iteration, just before the loop waits for I/O,
/// while started. Loop-thread only.
final class UVPrepare: UVHandle {
    private var body: (() -> Void)?
    private(set) var isActive = false

    init(loop: UVLoop, _ body: @escaping () -> Void) throws(UVError) {
        self.body = body
        try super.init(type: UV_PREPARE, "uv_prepare_init") { pointer in
            uv_prepare_init(loop.raw, UnsafeMutablePointer(OpaquePointer(pointer)))
        }
    }

    private var prepare: UnsafeMutablePointer<uv_prepare_t> { UnsafeMutablePointer(OpaquePointer(pointer)) }

    func start() {
        guard !isActive, !isClosing else { return }
        isActive = true
        uv_prepare_start(prepare) { raw in
            guard let prepare = UVHandle.object(UVPrepare.self, from: UnsafeMutableRawPointer(raw)) else { return }
            prepare.body?()
        }
    }

    func stop() {
        guard isActive, !isClosing else { return }
        isActive = false
        uv_prepare_stop(prepare)
    }

    override func willClose() {
        isActive = false
        body = nil
    }
}
