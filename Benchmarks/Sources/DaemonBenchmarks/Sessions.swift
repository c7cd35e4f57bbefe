import Glibc

// One pair per protocol: two request/answer round trips on one connection,
// with an id of its own. The echo floor sends the very lines promised gets.

private let errorMarker = Array("\"error\":{".utf8)

/// A session's connection, closed when the session is dropped: rounds taken
/// in turn open a connection per client per round.
private final class SessionSocket {
    let fd: Int32
    let reader: BufferedReader

    init(path: String) throws {
        fd = try connectUnix(path)
        reader = BufferedReader(fd: fd)
    }

    deinit {
        close(fd)
    }
}

/// The JSON-RPC lines of pair `index` of `client` (a tag unique in the run):
/// create, then resolve.
func promisedPairLines(client: String, index: Int) -> (create: [UInt8], resolve: [UInt8]) {
    let id = "c\(client)-\(index)"
    let create = #"{"jsonrpc":"2.0","id":\#(2 * index),"method":"create","params":{"id":"\#(id)"}}"# + "\n"
    let resolve = #"{"jsonrpc":"2.0","id":\#(2 * index + 1),"method":"resolve","params":{"id":"\#(id)","value":1}}"# + "\n"
    return (Array(create.utf8), Array(resolve.utf8))
}

func echoSession(path: String, client: String) throws -> (Int) throws -> Void {
    let socket = try SessionSocket(path: path)
    return { index in
        let (fd, reader) = (socket.fd, socket.reader)
        let (create, resolve) = promisedPairLines(client: client, index: index)
        try writeAll(fd, create)
        _ = try reader.readLine()
        try writeAll(fd, resolve)
        _ = try reader.readLine()
    }
}

func promisedSession(path: String, client: String) throws -> (Int) throws -> Void {
    let socket = try SessionSocket(path: path)
    return { index in
        let (fd, reader) = (socket.fd, socket.reader)
        let (create, resolve) = promisedPairLines(client: client, index: index)
        try writeAll(fd, create)
        let created = try reader.readLine()
        if created.contains(bytes: errorMarker) {
            throw SocketError(message: "create: \(String(decoding: created, as: UTF8.self))")
        }
        try writeAll(fd, resolve)
        let resolved = try reader.readLine()
        if resolved.contains(bytes: errorMarker) {
            throw SocketError(message: "resolve: \(String(decoding: resolved, as: UTF8.self))")
        }
    }
}

/// SET then PUBLISH: store the value, then tell whoever listens.
func redisSession(path: String, client: String) throws -> (Int) throws -> Void {
    let socket = try SessionSocket(path: path)
    return { index in
        let (fd, reader) = (socket.fd, socket.reader)
        let key = "c\(client)-\(index)"
        try writeAll(fd, RESP.command(["SET", key, "1"]))
        let set = try RESP.read(from: reader)
        guard set == .simple("OK") else { throw SocketError(message: "SET: \(set)") }
        try writeAll(fd, RESP.command(["PUBLISH", key, "1"]))
        let published = try RESP.read(from: reader)
        guard case .integer = published else { throw SocketError(message: "PUBLISH: \(published)") }
    }
}

/// `batch` pairs at once: one batch line of `batch` creates, then one of
/// `batch` resolves — the throughput of settling, not of one round trip.
func promisedBatchSession(path: String, client: String, batch: Int) throws -> (Int) throws -> Void {
    let socket = try SessionSocket(path: path)
    return { index in
        let (fd, reader) = (socket.fd, socket.reader)
        var creates: [[UInt8]] = []
        var resolves: [[UInt8]] = []
        for member in 0..<batch {
            let (create, resolve) = promisedPairLines(client: client, index: index * batch + member)
            creates.append(create.dropLast())
            resolves.append(resolve.dropLast())
        }
        for (name, members) in [("create", creates), ("resolve", resolves)] {
            try writeAll(fd, [UInt8(ascii: "[")] + Array(members.joined(separator: [UInt8(ascii: ",")])) + Array("]\n".utf8))
            let answer = try reader.readLine()
            if answer.contains(bytes: errorMarker) {
                throw SocketError(message: "\(name): \(String(decoding: answer.prefix(300), as: UTF8.self))")
            }
        }
    }
}
