// A minimal RESP2 encoder and reader: enough for SET, PUBLISH and SUBSCRIBE.
// Written by hand because the clients must be the same plain blocking
// sockets for every server; a Redis client library would add its own costs.

/// A RESP2 reply.
enum RESPReply: Equatable {
    case simple(String)
    case error(String)
    case integer(Int)
    case bulk([UInt8]?)
    case array([RESPReply]?)
}

enum RESP {
    /// A command as a RESP array of bulk strings.
    static func command(_ parts: [String]) -> [UInt8] {
        var bytes = Array("*\(parts.count)\r\n".utf8)
        for part in parts {
            let utf8 = Array(part.utf8)
            bytes += Array("$\(utf8.count)\r\n".utf8)
            bytes += utf8
            bytes += [13, 10]
        }
        return bytes
    }

    /// The next reply from `reader`.
    static func read(from reader: BufferedReader) throws -> RESPReply {
        var line = try reader.readLine()
        if line.last == 13 { line = line.dropLast() }
        guard let kind = line.first else { throw SocketError(message: "empty RESP line") }
        let rest = String(decoding: line.dropFirst(), as: UTF8.self)
        switch kind {
        case UInt8(ascii: "+"): return .simple(rest)
        case UInt8(ascii: "-"): return .error(rest)
        case UInt8(ascii: ":"): return .integer(Int(rest) ?? 0)
        case UInt8(ascii: "$"):
            guard let count = Int(rest), count >= 0 else { return .bulk(nil) }
            let bytes = Array(try reader.read(count: count + 2).dropLast(2))
            return .bulk(bytes)
        case UInt8(ascii: "*"):
            guard let count = Int(rest), count >= 0 else { return .array(nil) }
            var elements: [RESPReply] = []
            for _ in 0..<count { elements.append(try read(from: reader)) }
            return .array(elements)
        default:
            throw SocketError(message: "not RESP: \(String(decoding: line, as: UTF8.self))")
        }
    }

    /// The exact bytes Redis sends a subscriber for `message` on `channel`.
    static func pushedMessage(channel: String, message: String) -> [UInt8] {
        var bytes = Array("*3\r\n$7\r\nmessage\r\n".utf8)
        for part in [channel, message] {
            let utf8 = Array(part.utf8)
            bytes += Array("$\(utf8.count)\r\n".utf8) + utf8 + [13, 10]
        }
        return bytes
    }
}
