import CEpoll
import Glibc

/// Time from `trigger()` until every socket in `fds` has received
/// `expectedBytes` bytes (or, when `untilNewline`, a `\n`), watched with
/// epoll from this one thread. The sockets must have nothing else pending.
///
/// epoll, not poll(2): a poll call costs time in proportion to every
/// socket still waiting, so with 10,000 subscribers the watcher, not the
/// server, set the pace (and a server that wrote faster was polled fewer
/// times, which hid part of the difference). A socket that is done has
/// nothing more to read, so it is never reported again.
func measureFanOut(
    fds: [Int32],
    expectedBytes: Int,
    untilNewline: Bool,
    timeout: Duration = .seconds(60),
    trigger: () throws -> Void
) throws -> Duration {
    let watcher = epoll_create1(0)
    guard watcher >= 0 else { throw SocketError("epoll_create1") }
    defer { close(watcher) }
    // Restored even when a registration fails halfway.
    defer { for fd in fds { _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) } }
    for (index, fd) in fds.enumerated() {
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        var event = epoll_event(events: EPOLLIN.rawValue, data: epoll_data_t(u32: UInt32(index)))
        guard epoll_ctl(watcher, EPOLL_CTL_ADD, fd, &event) == 0 else { throw SocketError("epoll_ctl") }
    }
    var received = [Int](repeating: 0, count: fds.count)
    var waiting = fds.count
    var events = [epoll_event](repeating: epoll_event(), count: 1024)
    var scratch = [UInt8](repeating: 0, count: 1 << 16)
    let clock = ContinuousClock()
    let start = clock.now
    try trigger()
    while waiting > 0 {
        guard clock.now - start < timeout else {
            throw SocketError(message: "fan-out: \(waiting) of \(fds.count) subscribers got nothing within \(timeout)")
        }
        let ready = epoll_wait(watcher, &events, Int32(events.count), 100)
        if ready < 0 {
            if errno == EINTR { continue }
            throw SocketError("epoll_wait")
        }
        for event in events[0..<Int(ready)] {
            let index = Int(event.data.u32)
            let fd = fds[index]
            while true {
                let n = scratch.withUnsafeMutableBytes { read(fd, $0.baseAddress!, $0.count) }
                if n < 0 && errno == EINTR { continue }
                if n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) { break }
                if n <= 0 { throw SocketError(message: "fan-out: a subscriber was disconnected") }
                received[index] += n
                let complete = untilNewline ? scratch[0..<n].contains(UInt8(ascii: "\n")) : received[index] >= expectedBytes
                if complete {
                    waiting -= 1
                    break
                }
            }
        }
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

/// One server's control connection and subscriber connections, closed
/// together when this goes.
final class FanOutSockets {
    let control: Int32
    let subscribers: [Int32]

    init(path: String, subscribers count: Int) throws {
        var opened: [Int32] = []
        do {
            for _ in 0...count { opened.append(try connectUnix(path)) }
        } catch {
            opened.forEach { _ = close($0) }
            throw error
        }
        control = opened[0]
        subscribers = Array(opened.dropFirst())
    }

    deinit {
        ([control] + subscribers).forEach { _ = close($0) }
    }
}

/// Connections subscribed to promised, one promise per round: a `settled`
/// notification ends its subscription, so each round subscribes anew.
final class PromisedFanOut {
    private let sockets: FanOutSockets

    /// Connects `subscribers` connections and creates the promises of `rounds` rounds.
    init(path: String, subscribers: Int, rounds: Int) throws {
        sockets = try FanOutSockets(path: path, subscribers: subscribers)
        for round in 0..<rounds {
            try writeAll(sockets.control, Array(#"{"jsonrpc":"2.0","id":"c\#(round)","method":"create","params":{"id":"fan-\#(round)"}}"#.utf8) + [10])
            _ = try readReply(sockets.control)
        }
    }

    /// Subscribes every connection to round `round`'s promise, then times
    /// its resolve until the last subscriber has the notification.
    func measure(round: Int) throws -> Duration {
        let subscribe = Array(#"{"jsonrpc":"2.0","id":1,"method":"subscribe","params":{"ids":["fan-\#(round)"]}}"#.utf8) + [10]
        for fd in sockets.subscribers { try writeAll(fd, subscribe) }
        for fd in sockets.subscribers {
            let answer = try readReply(fd)
            guard answer.contains(bytes: Array("\"subscribed\":1".utf8)) else {
                throw SocketError(message: "subscribe: \(String(decoding: answer, as: UTF8.self))")
            }
        }
        let elapsed = try measureFanOut(fds: sockets.subscribers, expectedBytes: 0, untilNewline: true) {
            try writeAll(sockets.control, Array(#"{"jsonrpc":"2.0","id":"r","method":"resolve","params":{"id":"fan-\#(round)","value":1}}"#.utf8) + [10])
        }
        _ = try readReply(sockets.control)
        return elapsed
    }
}

/// Connections subscribed to one Redis channel, which each PUBLISH reaches.
final class RedisFanOut {
    private let sockets: FanOutSockets
    private let reader: BufferedReader

    init(path: String, subscribers: Int) throws {
        sockets = try FanOutSockets(path: path, subscribers: subscribers)
        reader = BufferedReader(fd: sockets.control)
        let subscribe = RESP.command(["SUBSCRIBE", "fan"])
        let confirmation = Array("*3\r\n$9\r\nsubscribe\r\n$3\r\nfan\r\n:1\r\n".utf8)
        for fd in sockets.subscribers { try writeAll(fd, subscribe) }
        for fd in sockets.subscribers {
            let answer = try readReply(fd, count: confirmation.count)
            guard answer == confirmation else {
                throw SocketError(message: "SUBSCRIBE: \(String(decoding: answer, as: UTF8.self))")
            }
        }
    }

    /// Times one PUBLISH until the last subscriber has the message.
    func measure() throws -> Duration {
        let elapsed = try measureFanOut(
            fds: sockets.subscribers, expectedBytes: RESP.pushedMessage(channel: "fan", message: "1").count,
            untilNewline: false
        ) {
            try writeAll(sockets.control, RESP.command(["PUBLISH", "fan", "1"]))
        }
        let told = try RESP.read(from: reader)
        guard told == .integer(sockets.subscribers.count) else { throw SocketError(message: "PUBLISH: \(told)") }
        return elapsed
    }
}
