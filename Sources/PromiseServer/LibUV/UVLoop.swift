internal import CLibUV

/// Owns one `uv_loop_t`. Loop-thread only: every member is called on the
/// thread that runs ``run()`` (or before that thread starts).
///
/// Every handle made on this loop (``UVHandle`` subclasses) stays alive until
/// it is closed; ``closeAll()`` closes whatever is left, so nothing leaks at
/// shutdown.
final class UVLoop {
    let raw: UnsafeMutablePointer<uv_loop_t>

    /// One read buffer for every stream of the loop. libuv calls the alloc
    /// callback and then the read callback for one stream at a time, and the
    /// read callback consumes the bytes before returning, so sharing is safe
    /// and reads allocate nothing.
    let readBuffer: UnsafeMutableRawBufferPointer

    static let readBufferSize = 64 * 1024

    init() throws(UVError) {
        raw = .allocate(capacity: 1)
        do {
            try uvCheck(uv_loop_init(raw), "uv_loop_init")
        } catch {
            raw.deallocate()
            throw error
        }
        readBuffer = .allocate(byteCount: Self.readBufferSize, alignment: 16)
        raw.pointee.data = Unmanaged.passUnretained(self).toOpaque()
    }

    deinit {
        // `closeAll()` ran (or the loop never had a handle): uv_loop_close succeeds.
        if uv_loop_close(raw) == 0 {
            raw.deallocate()
        }
        readBuffer.deallocate()
    }

    /// Runs until ``stop()`` is called or no active handle is left.
    func run() {
        uv_run(raw, UV_RUN_DEFAULT)
    }

    /// Makes ``run()`` return after the current iteration.
    func stop() {
        uv_stop(raw)
    }

    /// Closes every handle still open, then runs the loop until their close
    /// callbacks have run and their memory is freed.
    /// Close callbacks may open new handles (a handler told of a closed
    /// connection may start a timer), so this repeats, a bounded number of times.
    func closeAll() {
        for _ in 0..<100 {
            uv_walk(raw, { handle, _ in
                guard let handle, uv_is_closing(handle) == 0 else { return }
                if let data = handle.pointee.data {
                    Unmanaged<UVHandle>.fromOpaque(data).takeUnretainedValue().close()
                } else {
                    uv_close(handle, nil)
                }
            }, nil)
            uv_run(raw, UV_RUN_NOWAIT)
            if uv_loop_alive(raw) == 0 { return }
        }
    }

    /// The milliseconds libuv considers "now" (cached at the start of each iteration).
    var now: UInt64 { uv_now(raw) }

    static func from(_ raw: UnsafeMutablePointer<uv_loop_t>) -> UVLoop {
        Unmanaged<UVLoop>.fromOpaque(raw.pointee.data!).takeUnretainedValue()
    }

    /// Runs `body` with the loop behind `raw`, not retained: for libuv's
    /// callbacks, which run inside ``run()``, while the loop is alive.
    @inline(__always)
    static func with(_ raw: UnsafeMutablePointer<uv_loop_t>, _ body: (UVLoop) -> Void) {
        Unmanaged<UVLoop>.fromOpaque(raw.pointee.data!)._withUnsafeGuaranteedRef(body)
    }
}

@available(*, unavailable)
extension UVLoop: Sendable {}
