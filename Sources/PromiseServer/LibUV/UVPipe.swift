internal import CLibUV
import Glibc

/// A libuv pipe: a Unix-socket listener, an accepted connection, or one end
/// of a child process's stdin/stdout/stderr. Loop-thread only.
///
/// At most one `write` is in flight at a time (callers queue their own bytes:
/// ``Connection`` batches everything sent meanwhile into the next write).
final class UVPipe: UVHandle {
    private var onConnection: ((UVError?) -> Void)?
    private var onRead: ((UnsafeRawBufferPointer) -> Void)?
    private var onEnd: ((UVError?) -> Void)?
    private var onWritten: ((UVError?) -> Void)?
    private var writeRequest: UnsafeMutablePointer<uv_write_t>?
    private(set) var isReading = false

    init(loop: UVLoop) throws(UVError) {
        try super.init(type: UV_NAMED_PIPE, "uv_pipe_init") { pointer in
            uv_pipe_init(loop.raw, UnsafeMutablePointer(OpaquePointer(pointer)), 0)
        }
    }

    deinit {
        writeRequest?.deallocate()
    }

    var pipe: UnsafeMutablePointer<uv_pipe_t> { UnsafeMutablePointer(OpaquePointer(pointer)) }
    var stream: UnsafeMutablePointer<uv_stream_t> { UnsafeMutablePointer(OpaquePointer(pointer)) }

    var loop: UVLoop { UVLoop.from(handle.pointee.loop) }

    // MARK: Listening

    /// Binds to a Unix socket path. libuv 1.44 truncates long paths silently,
    /// so the caller checks the length first (``SocketFile``).
    func bind(_ path: String) throws(UVError) {
        try uvCheck(uv_pipe_bind(pipe, path), "uv_pipe_bind")
    }

    /// Starts listening; `body` runs once per incoming connection (call ``accept()``).
    func listen(backlog: Int32, _ body: @escaping (UVError?) -> Void) throws(UVError) {
        onConnection = body
        try uvCheck(uv_listen(stream, backlog) { raw, status in
            guard let listener = UVHandle.object(UVPipe.self, from: UnsafeMutableRawPointer(raw)) else { return }
            listener.onConnection?(status < 0 ? UVError(code: status, function: "uv_listen") : nil)
        }, "uv_listen")
    }

    /// Accepts one pending connection into a new pipe.
    func accept() throws(UVError) -> UVPipe {
        let client = try UVPipe(loop: loop)
        do {
            try uvCheck(uv_accept(stream, client.stream), "uv_accept")
        } catch {
            client.close()
            throw error
        }
        return client
    }

    // MARK: Descriptor

    /// Takes over an open descriptor (a child process's end of a socket
    /// pair), made non-blocking. On success the pipe owns it and closes it
    /// when closed; on failure the caller still does.
    func open(_ fileDescriptor: Int32) throws(UVError) {
        try uvCheck(uv_pipe_open(pipe, fileDescriptor), "uv_pipe_open")
    }

    /// The OS file descriptor, while the pipe is open.
    var fileDescriptor: Int32? {
        var fd: uv_os_fd_t = -1
        guard !isClosing, uv_fileno(handle, &fd) == 0 else { return nil }
        return fd
    }

    /// The uid of the connected peer process (`SO_PEERCRED`).
    func peerUID() throws(UVError) -> UInt32 {
        guard let fd = fileDescriptor else { throw UVError(code: UV_EBADF.rawValue, function: "uv_fileno") }
        var uid: uid_t = 0
        try uvCheck(CLibUV_peer_uid(fd, &uid), "getsockopt(SO_PEERCRED)")
        return uid
    }

    /// True when the peer has closed both directions (not merely shut down
    /// its writing side). A non-blocking `poll`: libuv's stream API cannot
    /// tell the two apart, and `POLLHUP` on a Unix stream socket can.
    var peerHasHungUp: Bool {
        guard let fd = fileDescriptor else { return true }
        var entry = pollfd(fd: fd, events: 0, revents: 0)
        guard poll(&entry, 1, 0) == 1 else { return false }
        return entry.revents & Int16(POLLHUP | POLLERR | POLLNVAL) != 0
    }

    // MARK: Reading

    /// Starts reading into the loop's shared buffer. `onRead` gets each chunk
    /// (valid only during the call); `onEnd` gets nil at end of stream, or
    /// the error. Reading stops by itself at the end.
    func startReading(
        onRead: @escaping (UnsafeRawBufferPointer) -> Void,
        onEnd: @escaping (UVError?) -> Void
    ) throws(UVError) {
        self.onRead = onRead
        self.onEnd = onEnd
        try resumeReading()
    }

    /// Reads what the socket holds now, without waiting, and hands it to
    /// `onRead` as libuv's reads are (see `ReadAhead`). Nothing is read
    /// while reading is paused. At end of stream or on an error it reads
    /// nothing, and libuv's next read meets either again and reports it.
    func readNow() {
        guard isReading, !isClosing, let onRead, let fd = fileDescriptor else { return }
        let buffer = loop.readBuffer
        // `recv` rather than `read`, as `tryWrite` sends: it skips the file
        // layer; and without glibc's wrapper (see `CLibUV_recv`).
        let count = CLibUV_recv(fd, buffer.baseAddress, buffer.count, Int32(MSG_DONTWAIT))
        guard count > 0 else { return }
        onRead(UnsafeRawBufferPointer(rebasing: buffer[..<count]))
    }

    /// Stops reading for now (back-pressure); ``resumeReading()`` goes on
    /// with the same callbacks. Bytes the peer sends meanwhile wait in the
    /// socket, and the peer's writes block once it is full.
    func pauseReading() {
        guard isReading, !isClosing else { return }
        isReading = false
        uv_read_stop(stream)
    }

    /// Reads again after ``pauseReading()``.
    func resumeReading() throws(UVError) {
        guard !isReading, !isClosing, onRead != nil else { return }
        try uvCheck(uv_read_start(stream, { handle, _, buffer in
            guard let handle, let buffer else { return }
            UVLoop.with(handle.pointee.loop) { loop in
                buffer.pointee.base = loop.readBuffer.baseAddress!.assumingMemoryBound(to: CChar.self)
                buffer.pointee.len = loop.readBuffer.count
            }
        }, { raw, count, buffer in
            UVHandle.withObject(UVPipe.self, from: UnsafeMutableRawPointer(raw)) { pipe in
                if count > 0, let base = buffer?.pointee.base {
                    pipe.onRead?(UnsafeRawBufferPointer(start: base, count: count))
                } else if count < 0 {
                    pipe.readDidEnd(count == Int(UV_EOF.rawValue) ? nil : UVError(code: Int32(count), function: "uv_read"))
                }
            }
        }), "uv_read_start")
        isReading = true
    }

    private func readDidEnd(_ error: UVError?) {
        stopReading()
        let onEnd = self.onEnd
        self.onEnd = nil
        onEnd?(error)
    }

    /// Stops reading for good: the callbacks are dropped.
    func stopReading() {
        onRead = nil
        guard isReading else { return }
        isReading = false
        if !isClosing {
            uv_read_stop(stream)
        }
    }

    // MARK: Writing

    /// True while a ``write(_:_:)`` has not completed.
    var isWriting: Bool { onWritten != nil }

    /// Bytes handed to `uv_write` that the socket has not taken yet.
    var writeQueueSize: Int {
        isClosing ? 0 : uv_stream_get_write_queue_size(stream)
    }

    /// Writes as much of `bytes` as the socket takes now, without blocking
    /// and without queueing. Returns the number of bytes written: 0 when the
    /// socket is full. For a connected socket only: on a child process's
    /// pipe it throws `ENOTSOCK`.
    ///
    /// What `uv_try_write` does, but with `send(2)` where it calls
    /// `write(2)`: on a socket, `send` skips the file layer
    /// (docs/PERFORMANCE.md), and the daemon makes one call per answer and
    /// per subscriber told. Like `uv_try_write`, it writes nothing while
    /// libuv still queues bytes of this pipe, so bytes keep their order.
    /// `send` is called without glibc's cancellation wrapper (`CLibUV_send`).
    func tryWrite(_ bytes: UnsafeRawBufferPointer) throws(UVError) -> Int {
        guard let fd = fileDescriptor else { throw UVError(code: UV_EBADF.rawValue, function: "uv_try_write") }
        guard writeQueueSize == 0 else { return 0 }
        while true {
            let sent = CLibUV_send(fd, bytes.baseAddress, bytes.count, Int32(MSG_DONTWAIT | MSG_NOSIGNAL))
            if sent >= 0 { return sent }
            switch errno {
            case EINTR: continue
            case EAGAIN, EWOULDBLOCK, ENOBUFS: return 0
            default: throw UVError(code: -errno, function: "send")
            }
        }
    }

    /// ``tryWrite(_:)`` of several buffers, in order, in one `sendmsg(2)`.
    /// At most `IOV_MAX` (1,024) buffers go in one call: the rest wait for the next.
    func tryWrite(buffers: UnsafeBufferPointer<uv_buf_t>) throws(UVError) -> Int {
        guard let fd = fileDescriptor else { throw UVError(code: UV_EBADF.rawValue, function: "uv_try_write") }
        guard writeQueueSize == 0, let start = buffers.baseAddress else { return 0 }
        let count = Int32(min(buffers.count, Self.maxBuffersPerCall))
        while true {
            let sent = CLibUV_sendBuffers(fd, start, count, Int32(MSG_DONTWAIT | MSG_NOSIGNAL))
            if sent >= 0 { return sent }
            switch errno {
            case EINTR: continue
            case EAGAIN, EWOULDBLOCK, ENOBUFS: return 0
            default: throw UVError(code: -errno, function: "sendmsg")
            }
        }
    }

    /// `IOV_MAX` on Linux.
    static let maxBuffersPerCall = 1_024

    private static func buffer(_ bytes: UnsafeRawBufferPointer) -> uv_buf_t {
        uv_buf_t(base: UnsafeMutablePointer(mutating: bytes.baseAddress?.assumingMemoryBound(to: CChar.self)),
                 len: bytes.count)
    }

    /// Queues one write of `bytes`, which must stay valid and unchanged until
    /// `completion` runs (with nil, or the error; `UV_ECANCELED` when the pipe
    /// is closed first). One write at a time.
    func write(_ bytes: UnsafeRawBufferPointer, _ completion: @escaping (UVError?) -> Void) throws(UVError) {
        var buffer = Self.buffer(bytes)
        try withUnsafeMutablePointer(to: &buffer) { (pointer) throws(UVError) in
            try write(buffers: UnsafeMutableBufferPointer(start: pointer, count: 1), completion)
        }
    }

    /// ``write(_:_:)`` of several buffers, in order. libuv copies the
    /// buffers' descriptions; the bytes they point at must stay valid and
    /// unchanged until `completion` runs.
    func write(buffers: UnsafeMutableBufferPointer<uv_buf_t>, _ completion: @escaping (UVError?) -> Void) throws(UVError) {
        precondition(onWritten == nil, "UVPipe: one write at a time")
        let request: UnsafeMutablePointer<uv_write_t>
        if let writeRequest {
            request = writeRequest
        } else {
            request = .allocate(capacity: 1)
            writeRequest = request
        }
        onWritten = completion
        let code = uv_write(request, stream, buffers.baseAddress, UInt32(buffers.count)) { request, status in
            guard let request, let pipe = UVHandle.object(UVPipe.self, from: UnsafeMutableRawPointer(request.pointee.handle))
            else { return }
            let completion = pipe.onWritten
            pipe.onWritten = nil
            completion?(status < 0 ? UVError(code: status, function: "uv_write") : nil)
        }
        if code < 0 {
            onWritten = nil
            throw UVError(code: code, function: "uv_write")
        }
    }

    override func willClose() {
        stopReading()
        onConnection = nil
        onEnd = nil
    }
}
