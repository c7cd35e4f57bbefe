import Glibc

/// Time from `trigger()` until every socket in `fds` has received
/// `expectedBytes` bytes (or, when `untilNewline`, a `\n`), watched with
/// poll(2) from this one thread; sockets that are done leave the poll set.
/// The sockets must have nothing else pending.
func measureFanOut(
    fds: [Int32],
    expectedBytes: Int,
    untilNewline: Bool,
    timeout: Duration = .seconds(60),
    trigger: () throws -> Void
) throws -> Duration {
    for fd in fds { _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) }
    defer { for fd in fds { _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) } }
    var watched = fds.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
    var received = [Int32: Int]()
    var scratch = [UInt8](repeating: 0, count: 1 << 16)
    let clock = ContinuousClock()
    let start = clock.now
    try trigger()
    while !watched.isEmpty {
        guard clock.now - start < timeout else {
            throw SocketError(message: "fan-out: \(watched.count) of \(fds.count) subscribers got nothing within \(timeout)")
        }
        let ready = poll(&watched, nfds_t(watched.count), 100)
        if ready < 0 {
            if errno == EINTR { continue }
            throw SocketError("poll")
        }
        guard ready > 0 else { continue }
        var kept = 0
        for index in watched.indices {
            let entry = watched[index]
            var complete = false
            if entry.revents != 0 {
                while !complete {
                    let n = scratch.withUnsafeMutableBytes { read(entry.fd, $0.baseAddress!, $0.count) }
                    if n < 0 && errno == EINTR { continue }
                    if n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) { break }
                    if n <= 0 { throw SocketError(message: "fan-out: a subscriber was disconnected") }
                    let total = received[entry.fd, default: 0] + n
                    received[entry.fd] = total
                    complete = untilNewline ? scratch[0..<n].contains(UInt8(ascii: "\n")) : total >= expectedBytes
                }
            }
            if !complete {
                watched[kept] = pollfd(fd: entry.fd, events: Int16(POLLIN), revents: 0)
                kept += 1
            }
        }
        watched.removeLast(watched.count - kept)
    }
    return clock.now - start
}

/// Reads exactly `count` bytes, or up to and including a `\n` when `count`
/// is nil, from a blocking socket with nothing more pending behind them.
func readReply(_ fd: Int32, count: Int? = nil) throws -> [UInt8] {
    var bytes: [UInt8] = []
    var scratch = [UInt8](repeating: 0, count: 4096)
    while true {
        let want = count.map { $0 - bytes.count } ?? scratch.count
        let n = scratch.withUnsafeMutableBytes { read(fd, $0.baseAddress!, min(want, $0.count)) }
        if n < 0 && errno == EINTR { continue }
        if n <= 0 { throw SocketError(message: "connection closed while reading a reply") }
        bytes += scratch[0..<n]
        if let count, bytes.count >= count { return bytes }
        if count == nil, bytes.last == UInt8(ascii: "\n") { return bytes }
    }
}
