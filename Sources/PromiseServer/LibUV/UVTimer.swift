internal import CLibUV

/// A one-shot or repeating libuv timer. Loop-thread only.
///
/// ```swift
/// let timer = try UVTimer(loop: loop)
/// timer.start(afterMilliseconds: 500) { print("fired") }
/// ```
final class UVTimer: UVHandle {
    private var body: (() -> Void)?
    private var repeats = false

    init(loop: UVLoop) throws(UVError) {
        try super.init(type: UV_TIMER, "uv_timer_init") { pointer in
            uv_timer_init(loop.raw, UnsafeMutablePointer(OpaquePointer(pointer)))
        }
    }

    private var timer: UnsafeMutablePointer<uv_timer_t> {
        UnsafeMutablePointer(OpaquePointer(pointer))
    }

    /// Calls `body` after `milliseconds`, then every `repeatMilliseconds` if
    /// that is not zero. Starting again replaces the previous schedule.
    func start(afterMilliseconds milliseconds: UInt64, repeatMilliseconds: UInt64 = 0,
               _ body: @escaping () -> Void) {
        guard !isClosing else { return }
        self.body = body
        repeats = repeatMilliseconds > 0
        uv_timer_start(timer, { raw in
            guard let timer = UVHandle.object(UVTimer.self, from: UnsafeMutableRawPointer(raw)),
                  let body = timer.body else { return }
            if !timer.repeats { timer.body = nil }
            body()
        }, milliseconds, repeatMilliseconds)
    }

    /// Stops the timer; it can be started again.
    func stop() {
        guard !isClosing else { return }
        body = nil
        uv_timer_stop(timer)
    }

    override func willClose() {
        body = nil
    }
}
