internal import CLibUV

/// The memory and lifetime of one libuv handle. Loop-thread only.
///
/// The handle's `data` field holds a retained reference to its Swift object,
/// so the object lives as long as libuv may call back into it: from
/// `uv_*_init` until the close callback, which releases the object and frees
/// the handle's memory. Call ``close()`` when done; ``UVLoop/closeAll()``
/// closes whatever is left at shutdown.
class UVHandle {
    /// The `uv_*_t` struct, allocated for this handle's type.
    let pointer: UnsafeMutableRawPointer
    /// True from ``close()`` on; libuv may still call the close callback later.
    private(set) var isClosing = false
    /// Runs once, from the close callback, after libuv is done with the handle.
    var onClose: (() -> Void)?

    /// Allocates a handle of `type` and runs `initialize` (`uv_timer_init`, …) on it.
    init(
        type: uv_handle_type,
        _ function: String,
        initialize: (UnsafeMutableRawPointer) -> Int32
    ) throws(UVError) {
        let size = uv_handle_size(type)
        let pointer = UnsafeMutableRawPointer.allocate(byteCount: size, alignment: 16)
        pointer.initializeMemory(as: UInt8.self, repeating: 0, count: size)
        let code = initialize(pointer)
        if code < 0 {
            pointer.deallocate()
            throw UVError(code: code, function: function)
        }
        self.pointer = pointer
        handle.pointee.data = Unmanaged.passRetained(self).toOpaque()
    }

    var handle: UnsafeMutablePointer<uv_handle_t> {
        UnsafeMutablePointer(OpaquePointer(pointer))
    }

    /// Called once by ``close()`` before `uv_close`: stop what the subclass started.
    func willClose() {}

    /// Closes the handle. Safe to call more than once.
    func close() {
        guard !isClosing else { return }
        isClosing = true
        willClose()
        uv_close(handle, { handle in
            guard let handle, let data = handle.pointee.data else { return }
            handle.pointee.data = nil
            let object = Unmanaged<UVHandle>.fromOpaque(data).takeRetainedValue()
            let onClose = object.onClose
            object.onClose = nil
            object.pointer.deallocate()
            onClose?()
        })
    }

    /// The object behind a handle pointer that libuv passed to a callback.
    static func object<Handle: UVHandle>(
        _ type: Handle.Type, from raw: UnsafeMutableRawPointer?
    ) -> Handle? {
        guard let data = data(of: raw) else { return nil }
        return unsafeDowncast(Unmanaged<UVHandle>.fromOpaque(data).takeUnretainedValue(), to: Handle.self)
    }

    /// Runs `body` with the object behind a handle pointer that libuv passed
    /// to a callback, without retaining it: the handle's `data` holds it
    /// until the close callback, which libuv never runs during another
    /// callback. For the callbacks of every read, which would otherwise
    /// retain and release the pipe for every request.
    @inline(__always)
    static func withObject<Handle: UVHandle>(
        _ type: Handle.Type, from raw: UnsafeMutableRawPointer?, _ body: (Handle) -> Void
    ) {
        guard let data = data(of: raw) else { return }
        Unmanaged<UVHandle>.fromOpaque(data)._withUnsafeGuaranteedRef { body(unsafeDowncast($0, to: Handle.self)) }
    }

    /// The `data` field of the handle at `raw`: its object, until the close callback.
    @inline(__always)
    private static func data(of raw: UnsafeMutableRawPointer?) -> UnsafeMutableRawPointer? {
        raw.flatMap { UnsafeMutablePointer<uv_handle_t>(OpaquePointer($0)).pointee.data }
    }
}

@available(*, unavailable)
extension UVHandle: Sendable {}
