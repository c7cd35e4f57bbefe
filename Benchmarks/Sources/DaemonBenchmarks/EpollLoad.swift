import CEpoll
import Glibc

// The pinned comparison's load generator: one thread drives every client's
// connection, non-blocking, through epoll. With a thread per client and
// blocking I/O, the clients' core spent 81% of its time in the kernel,
// switching between 50 threads that each woke for one answer; that core,
// not the server's, set the pace for both servers, and the bigger messages
// of one protocol cost the generator more than the server's work did. One
// thread woken for every answer that is ready costs each side the reads and
// writes of its own bytes and little else, so the server's core limits.

/// How one protocol's pairs are written and their answers checked, for
/// ``measurePairs(_:clients:warmUp:duration:)``. Every answer is one line.
struct PairScript: Sendable {
    /// The server's Unix socket.
    let path: String
    /// What makes each client's keys unique in the run, before its number.
    let tag: String
    /// Appends request `step` (0 or 1) of pair `index` of the client whose
    /// key prefix is `key` (`c<tag><client>-`).
    let request: @Sendable (_ key: [UInt8], _ index: Int, _ step: Int, _ out: inout [UInt8]) -> Void
    /// Whether `line` (without its `\n`) is a good answer to request `step`.
    let accepts: @Sendable (_ step: Int, _ line: UnsafeRawBufferPointer) -> Bool
}

extension PairScript {
    /// create then resolve, the very lines ``promisedPairLines(client:index:)`` makes.
    static func promised(path: String, tag: String) -> PairScript {
        let head = Array(#"{"jsonrpc":"2.0","id":"#.utf8)
        let create = Array(#","method":"create","params":{"id":""#.utf8)
        let resolve = Array(#","method":"resolve","params":{"id":""#.utf8)
        let createEnd = Array(#""}}"#.utf8) + [10]
        let resolveEnd = Array(#"","value":1}}"#.utf8) + [10]
        // A result, not an error: `{"id":N,"jsonrpc":"2.0","result":…}`.
        // Checked by its head, as Redis's answers are: searching each
        // 200-byte record for an error's key made this generator's core,
        // not the server's, the limit in promised's rounds (it ran at 100%
        // there, at 80% in Redis's).
        let resultHead = Array(#"{"id":"#.utf8)
        let resultTail = Array(#","jsonrpc":"2.0","result":"#.utf8)
        return PairScript(path: path, tag: tag, request: { key, index, step, out in
            out += head
            appendDecimal(2 * index + step, to: &out)
            out += step == 0 ? create : resolve
            out += key
            appendDecimal(index, to: &out)
            out += step == 0 ? createEnd : resolveEnd
        }, accepts: { _, line in
            guard line.has(resultHead, at: 0) else { return false }
            var end = resultHead.count
            while end < line.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(line[end]) { end += 1 }
            return line.has(resultTail, at: end)
        })
    }

    /// SET then PUBLISH, as ``redisSession(path:client:)`` sends them.
    static func redis(path: String, tag: String) -> PairScript {
        let set = Array("*3\r\n$3\r\nSET\r\n$".utf8)
        let publish = Array("*3\r\n$7\r\nPUBLISH\r\n$".utf8)
        let end = Array("\r\n$1\r\n1\r\n".utf8)
        return PairScript(path: path, tag: tag, request: { key, index, step, out in
            out += step == 0 ? set : publish
            appendDecimal(key.count + decimalDigits(index), to: &out)
            out += [13, 10]
            out += key
            appendDecimal(index, to: &out)
            out += end
        }, accepts: { step, line in
            // "+OK\r" for SET, an integer (":0\r") for PUBLISH.
            step == 0 ? line.elementsEqual("+OK\r".utf8) : line.first == UInt8(ascii: ":")
        })
    }
}

extension UnsafeRawBufferPointer {
    /// Whether `bytes` are here from `offset` on.
    fileprivate func has(_ bytes: [UInt8], at offset: Int) -> Bool {
        offset + bytes.count <= count && memcmp(baseAddress! + offset, bytes, bytes.count) == 0
    }
}

private func decimalDigits(_ number: Int) -> Int {
    var digits = 1
    var rest = number
    while rest >= 10 {
        rest /= 10
        digits += 1
    }
    return digits
}

/// Appends `number` (0 or more) in decimal, without making a `String`.
private func appendDecimal(_ number: Int, to out: inout [UInt8]) {
    let digits = decimalDigits(number)
    let start = out.count
    out.append(contentsOf: repeatElement(UInt8(ascii: "0"), count: digits))
    var rest = number
    for position in stride(from: start + digits - 1, through: start, by: -1) {
        out[position] = UInt8(ascii: "0") + UInt8(rest % 10)
        rest /= 10
    }
}

private func monotonicNanoseconds() -> UInt64 {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
}

/// One client: its connection and the pair it is in.
private struct LoadClient {
    let fd: Int32
    let key: [UInt8]
    var index = 0
    /// The request whose answer is awaited.
    var step = 0
    /// When the current pair's first request was written.
    var started: UInt64 = 0
    /// Answer bytes read and not yet taken as lines.
    var input: [UInt8] = []
    var isDone = false
}

/// `clients` connections to `script`'s server, each doing one pair (two
/// request/answer round trips) after another, all from this thread: each
/// answer read is followed at once by the client's next request. Pairs
/// that start during `warmUp` are not counted; no pair starts after
/// `warmUp + duration`, and those in flight are finished. The time counted
/// runs from the end of the warm-up until the last pair finished.
func measurePairs(_ script: PairScript, clients: Int, warmUp: Duration, duration: Duration) throws -> RoundTripResult {
    let watcher = epoll_create1(Int32(EPOLL_CLOEXEC))
    guard watcher >= 0 else { throw SocketError("epoll_create1") }
    defer { close(watcher) }
    var connections: [LoadClient] = []
    defer { for connection in connections { close(connection.fd) } }
    for client in 0..<clients {
        let fd = try connectUnix(script.path)
        connections.append(LoadClient(fd: fd, key: Array("c\(script.tag)\(client)-".utf8)))
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        var event = epoll_event(events: EPOLLIN.rawValue, data: epoll_data_t(u32: UInt32(client)))
        guard epoll_ctl(watcher, EPOLL_CTL_ADD, fd, &event) == 0 else { throw SocketError("epoll_ctl") }
    }

    func nanoseconds(_ duration: Duration) -> UInt64 {
        let (seconds, attoseconds) = duration.components
        return UInt64(seconds) * 1_000_000_000 + UInt64(attoseconds / 1_000_000_000)
    }
    let start = monotonicNanoseconds()
    let warmEnd = start + nanoseconds(warmUp)
    let end = warmEnd + nanoseconds(duration)
    var latencies: [UInt64] = []
    latencies.reserveCapacity(1 << 20)
    var lastFinish = warmEnd
    var running = clients
    var out: [UInt8] = []
    out.reserveCapacity(256)

    // The one request a client has outstanding always fits in an empty
    // socket buffer: a short write would be a broken server or socket.
    func send(_ client: inout LoadClient) throws {
        out.removeAll(keepingCapacity: true)
        script.request(client.key, client.index, client.step, &out)
        // send and recv, as promised writes: on a socket they skip the file
        // layer that write and read go through, for either server alike.
        let written = out.withUnsafeBytes { Glibc.send(client.fd, $0.baseAddress!, $0.count, Int32(MSG_NOSIGNAL)) }
        guard written == out.count else {
            throw SocketError(message: "a request was not written whole (\(written) of \(out.count) bytes, errno \(errno))")
        }
    }

    // Takes the whole answers `client` has read, each followed by its next request.
    func answered(_ client: inout LoadClient, client number: Int) throws {
        var taken = 0
        defer { client.input.removeSubrange(0..<taken) }
        while true {
            let (step, isDone) = (client.step, client.isDone)
            // memchr, as the servers look for their line ends.
            let found: (newline: Int, good: Bool)? = client.input.withUnsafeBytes { input -> (newline: Int, good: Bool)? in
                guard let newline = memchr(input.baseAddress! + taken, 10, input.count - taken) else { return nil }
                let end = UnsafeRawPointer(newline) - input.baseAddress!
                return (end, script.accepts(step, UnsafeRawBufferPointer(rebasing: input[taken..<end])))
            }
            guard let (newline, good) = found else { break }
            guard good, !isDone else {
                let line = String(decoding: client.input[taken..<newline].prefix(300), as: UTF8.self)
                throw SocketError(message: "client \(number), pair \(client.index), step \(step): \(line)")
            }
            taken = newline + 1
            if step == 0 {
                client.step = 1
            } else {
                let now = monotonicNanoseconds()
                if client.started >= warmEnd {
                    latencies.append(now - client.started)
                    lastFinish = max(lastFinish, now)
                }
                client.index += 1
                client.step = 0
                client.started = now
                if now >= end {
                    client.isDone = true
                    running -= 1
                    continue
                }
            }
            try send(&client)
        }
    }

    for index in connections.indices {
        connections[index].started = monotonicNanoseconds()
        try send(&connections[index])
    }
    var events = [epoll_event](repeating: epoll_event(), count: max(clients, 1))
    var scratch = [UInt8](repeating: 0, count: 1 << 16)
    var quietSince = monotonicNanoseconds()
    while running > 0 {
        let ready = epoll_wait(watcher, &events, Int32(events.count), 100)
        if ready < 0 {
            if errno == EINTR { continue }
            throw SocketError("epoll_wait")
        }
        if ready == 0 {
            guard monotonicNanoseconds() - quietSince < 10_000_000_000 else {
                throw SocketError(message: "no answer for 10 s (\(running) clients waiting)")
            }
            continue
        }
        quietSince = monotonicNanoseconds()
        for event in events[0..<Int(ready)] {
            let index = Int(event.data.u32)
            let count = scratch.withUnsafeMutableBytes { recv(connections[index].fd, $0.baseAddress!, $0.count, 0) }
            if count < 0 && (errno == EAGAIN || errno == EINTR) { continue }
            guard count > 0 else { throw SocketError(message: "client \(index): the server closed the connection") }
            connections[index].input += scratch[0..<count]
            try answered(&connections[index], client: index)
        }
    }
    guard !latencies.isEmpty else { throw SocketError(message: "no pair completed") }
    return RoundTripResult(clients: clients, latencies: latencies, seconds: Double(lastFinish - warmEnd) / 1e9)
}
