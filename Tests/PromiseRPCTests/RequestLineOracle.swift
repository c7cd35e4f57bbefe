@testable import PromiseJSON
@testable import PromiseModel
@testable import PromiseRPC
import Testing

/// The two readings of a line that request-line tests compare: the
/// dispatcher's (`RequestLine`, which reads the envelope straight from the
/// bytes) and the oracle it must agree with, the general parser
/// (`JSONValue(parsing:)`, then `JSONRPCEnvelope(_:)`): the same envelope,
/// or the same error at the same byte.
enum RequestLineOracle {
    /// What the general parser makes of `line`.
    static func general(_ line: [UInt8]) -> Result<RequestLine, JSONParseError> {
        Result { () throws(JSONParseError) -> RequestLine in
            switch try JSONValue(parsing: line) {
            case .array(let elements): .batch(elements.map(JSONRPCEnvelope.init))
            case let value: .single(JSONRPCEnvelope(value))
            }
        }
    }

    /// What `RequestLine` makes of `line`.
    static func read(_ line: [UInt8]) -> Result<RequestLine, JSONParseError> {
        Result { () throws(JSONParseError) -> RequestLine in try RequestLine(parsing: line) }
    }

    /// Expects each of `lines` to read as the general parser reads it, and to be a request line.
    static func expectAgreement(on lines: [String], sourceLocation: SourceLocation = #_sourceLocation) {
        for line in lines {
            let bytes = Array(line.utf8)
            let read = read(bytes)
            #expect(read == general(bytes), "\(line)", sourceLocation: sourceLocation)
            #expect((try? read.get()) != nil, "\(line)", sourceLocation: sourceLocation)
        }
    }

    /// Expects every prefix of each of `lines`, and every change of one of
    /// its bytes to one of `replacements`, to fail or read as the general
    /// parser says. Returns how many texts were compared.
    static func expectAgreementWhenDamaged(
        _ lines: [String], replacements: [UInt8], sourceLocation: SourceLocation = #_sourceLocation
    ) -> Int {
        var checked = 0
        for line in lines {
            let bytes = Array(line.utf8)
            for end in 0..<bytes.count {
                let prefix = Array(bytes[..<end])
                #expect(read(prefix) == general(prefix), "prefix \(end) of \(line)", sourceLocation: sourceLocation)
                checked += 1
            }
            for index in bytes.indices {
                for replacement in replacements {
                    var changed = bytes
                    changed[index] = replacement
                    #expect(read(changed) == general(changed), "byte \(index) of \(line) set to \(replacement)",
                            sourceLocation: sourceLocation)
                    checked += 1
                }
            }
        }
        return checked
    }
}
