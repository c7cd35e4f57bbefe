import Foundation
import Glibc

/// How long a durable daemon takes to start over a large store.
struct RestartResult {
    let promises: Int
    let consumers: Int
    /// From starting the process to the socket accepting a connection.
    let secondsToListen: Double
    /// From starting the process to the answer of a first `info`.
    let secondsToAnswer: Double
}

/// Fills the durable daemon made by `start` with `promises` promises —
/// `consumers` pending `all` combinators over one pending promise, the rest
/// created and resolved — stops it (SIGTERM), and times a second start over
/// the same store until it answers.
func measureRestart(promises: Int, consumers: Int, batch: Int = 1000,
                    start: () throws -> ServerProcess) throws -> RestartResult {
    let first = try start()
    try fill(first.socketPath, promises: promises, consumers: consumers, batch: batch)
    first.stop()

    let clock = ContinuousClock()
    let began = clock.now
    let second = try start()
    defer { second.stop() }
    let listening = clock.now - began
    let fd = try connectUnix(second.socketPath)
    defer { close(fd) }
    try writeAll(fd, Array(#"{"jsonrpc":"2.0","id":0,"method":"info"}"#.utf8) + [10])
    let info = try BufferedReader(fd: fd).readLine()
    let answered = clock.now - began
    let expected = Array("\"promises\":\(promises)".utf8)
    guard info.contains(bytes: expected) else {
        throw SocketError(message: "restart: expected \(promises) promises, got \(String(decoding: info.prefix(300), as: UTF8.self))")
    }
    return RestartResult(promises: promises, consumers: consumers,
                         secondsToListen: seconds(listening), secondsToAnswer: seconds(answered))
}

/// Pipelined creates: the gate, its consumers, then settled promises, `batch` lines per write.
private func fill(_ path: String, promises: Int, consumers: Int, batch: Int) throws {
    let fd = try connectUnix(path)
    defer { close(fd) }
    let reader = BufferedReader(fd: fd, capacity: 1 << 20)
    let errorMarker = Array("\"error\":{".utf8)
    var lines: [String] = [#"{"jsonrpc":"2.0","id":0,"method":"create","params":{"id":"gate"}}"#]
    for index in 0..<consumers {
        lines.append(#"{"jsonrpc":"2.0","id":1,"method":"all","params":{"ids":["gate"],"id":"consumer\#(index)"}}"#)
    }
    for index in 0..<(promises - consumers - 1) {
        lines.append(#"{"jsonrpc":"2.0","id":2,"method":"create","params":{"id":"settled\#(index)"}}"#)
        lines.append(#"{"jsonrpc":"2.0","id":3,"method":"resolve","params":{"id":"settled\#(index)","value":1}}"#)
    }
    var next = 0
    while next < lines.count {
        let chunk = lines[next..<min(next + batch, lines.count)]
        try writeAll(fd, Array(chunk.joined(separator: "\n").utf8) + [10])
        for _ in chunk {
            let answer = try reader.readLine()
            if answer.contains(bytes: errorMarker) {
                throw SocketError(message: "restart fill: \(String(decoding: answer.prefix(300), as: UTF8.self))")
            }
        }
        next += chunk.count
    }
}

private func seconds(_ duration: Duration) -> Double {
    let (whole, attoseconds) = duration.components
    return Double(whole) + Double(attoseconds) / 1e18
}
