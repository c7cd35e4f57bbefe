internal import CLibUV

/// Runs `body` once per loop iteration while started, at one of two points
/// of libuv's iteration, which runs I/O callbacks, then timers, then
/// ``Phase/idle`` watchers, then ``Phase/prepare`` watchers, then waits for
/// I/O. Loop-thread only.
final class UVLoopWatcher: UVHandle {
    enum Phase {
        /// Before the prepare watchers; while one is started, the loop does
        /// not wait for I/O but only looks for it, so work queued on the loop
        /// thread runs in the next iteration without a wake-up system call.
        case idle
        /// Just before the loop waits for I/O.
        case prepare
    }

    let phase: Phase
    // `@exclusivity(unchecked)`: loop thread only, and read once per call of the
    // watcher (every loop turn for the flush queue), a runtime check each time.
    @exclusivity(unchecked) private var body: (() -> Void)?
    private(set) var isActive = false

    init(_ phase: Phase, loop: UVLoop, _ body: @escaping () -> Void) throws(UVError) {
        self.phase = phase
        self.body = body
        switch phase {
        case .idle:
            try super.init(type: UV_IDLE, "uv_idle_init") { uv_idle_init(loop.raw, UnsafeMutablePointer(OpaquePointer($0))) }
        case .prepare:
            try super.init(type: UV_PREPARE, "uv_prepare_init") { uv_prepare_init(loop.raw, UnsafeMutablePointer(OpaquePointer($0))) }
        }
    }

    func start() {
        guard !isActive, !isClosing else { return }
        isActive = true
        // The watcher reached unretained (see `UVHandle.withObject`): the
        // flush queue's runs every turn in which an answer is written.
        switch phase {
        case .idle:
            uv_idle_start(UnsafeMutablePointer(OpaquePointer(pointer))) { raw in
                UVHandle.withObject(UVLoopWatcher.self, from: UnsafeMutableRawPointer(raw)) { $0.body?() }
            }
        case .prepare:
            uv_prepare_start(UnsafeMutablePointer(OpaquePointer(pointer))) { raw in
                UVHandle.withObject(UVLoopWatcher.self, from: UnsafeMutableRawPointer(raw)) { $0.body?() }
            }
        }
    }

    func stop() {
        guard isActive, !isClosing else { return }
        isActive = false
        switch phase {
        case .idle: uv_idle_stop(UnsafeMutablePointer(OpaquePointer(pointer)))
        case .prepare: uv_prepare_stop(UnsafeMutablePointer(OpaquePointer(pointer)))
        }
    }

    override func willClose() {
        isActive = false
        body = nil
    }
}
