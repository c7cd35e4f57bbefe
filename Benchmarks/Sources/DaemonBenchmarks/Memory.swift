import Foundation
import Glibc

/// What holding settled promises costs the daemon.
struct MemoryResult {
    let promises: Int
    let residentBefore: Int
    let residentAfter: Int
    let requestsPerSecond: Double

    var bytesPerPromise: Double { Double(residentAfter - residentBefore) / Double(promises) }
}

/// Creates and resolves `promises` promises with a small value on `daemon`,
/// pipelined `batch` creates and their resolves per write, and reads its
/// resident size before and after.
func measureMemory(daemon: ServerProcess, promises: Int, batch: Int = 1000) throws -> MemoryResult {
    let fd = try connectUnix(daemon.socketPath)
    defer { close(fd) }
    let reader = BufferedReader(fd: fd, capacity: 1 << 20)
    try writeAll(fd, Array(#"{"jsonrpc":"2.0","id":0,"method":"info"}"#.utf8) + [10])
    _ = try reader.readLine()
    usleep(200_000)
    let before = daemon.residentBytes()

    let errorMarker = Array("\"error\":{".utf8)
    let clock = ContinuousClock()
    let start = clock.now
    var next = 0
    var out: [UInt8] = []
    out.reserveCapacity(batch * 200)
    while next < promises {
        let count = min(batch, promises - next)
        out.removeAll(keepingCapacity: true)
        for i in next..<next + count {
            out += #"{"jsonrpc":"2.0","id":\#(2 * i),"method":"create","params":{"id":"m\#(i)"}}"#.utf8
            out.append(10)
        }
        for i in next..<next + count {
            out += #"{"jsonrpc":"2.0","id":\#(2 * i + 1),"method":"resolve","params":{"id":"m\#(i)","value":1}}"#.utf8
            out.append(10)
        }
        try writeAll(fd, out)
        for _ in 0..<2 * count {
            let answer = try reader.readLine()
            if answer.contains(bytes: errorMarker) {
                throw SocketError(message: "memory run: \(String(decoding: answer, as: UTF8.self))")
            }
        }
        next += count
    }
    let (seconds, attoseconds) = (clock.now - start).components
    let elapsed = Double(seconds) + Double(attoseconds) / 1e18
    usleep(200_000)
    let after = daemon.residentBytes()
    return MemoryResult(promises: promises, residentBefore: before, residentAfter: after,
                        requestsPerSecond: Double(2 * promises) / elapsed)
}
