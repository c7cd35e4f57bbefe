internal import CLibUV
import Glibc

/// Watches one signal on the loop (libuv turns the signal into a loop
/// event, so `body` runs on the loop thread, not in a signal handler).
/// Loop-thread only.
final class UVSignal: UVHandle {
    private var body: ((Int32) -> Void)?

    init(loop: UVLoop) throws(UVError) {
        try super.init(type: UV_SIGNAL, "uv_signal_init") { pointer in
            uv_signal_init(loop.raw, UnsafeMutablePointer(OpaquePointer(pointer)))
        }
    }

    /// Calls `body` with the signal number each time `signal` arrives.
    func start(_ signal: Int32, _ body: @escaping (Int32) -> Void) throws(UVError) {
        self.body = body
        try uvCheck(uv_signal_start(UnsafeMutablePointer(OpaquePointer(pointer)), { raw, signal in
            guard let watcher = UVHandle.object(UVSignal.self, from: UnsafeMutableRawPointer(raw)) else { return }
            watcher.body?(signal)
        }, signal), "uv_signal_start")
    }

    override func willClose() {
        body = nil
    }

    /// Lets `signals` reach the calling thread. A process inherits its
    /// parent's signal mask, and some parents (Foundation's `Process`, for
    /// one) start children with almost every signal blocked; libuv then never
    /// hears of SIGCHLD (child exits) or SIGTERM. Called on the loop thread.
    static func unblock(_ signals: [Int32]) {
        var mask = sigset_t()
        sigemptyset(&mask)
        for number in signals {
            sigaddset(&mask, number)
        }
        pthread_sigmask(SIG_UNBLOCK, &mask, nil)
    }
}
