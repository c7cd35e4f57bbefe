import Foundation
import PromiseJSON

/// Typed values to and from the JSON the daemon keeps, through the JSON
/// text: `JSONEncoder` and `JSONDecoder` for any `Codable`, without them for
/// ``JSONValue`` itself and the plain scalars.
enum RemoteValueCoding {
    /// The JSON of `value`.
    static func encode<T: Encodable>(_ value: T, id: String) throws(PromiseConnectionError) -> JSONValue {
        switch value {
        case let json as JSONValue: return json
        case let text as String: return .string(text)
        case let number as Int: return .int(number)
        case let flag as Bool: return .bool(flag)
        default: break
        }
        do {
            let data = try JSONEncoder().encode(value)
            return try JSONValue(parsing: data)
        } catch {
            throw PromiseConnectionError(.encoding, "the value for \"\(id)\" does not encode as JSON: \(error)")
        }
    }

    /// `json` decoded as `type`.
    static func decode<T: Decodable>(_ json: JSONValue, as type: T.Type, id: String) throws(PromiseConnectionError) -> T {
        if let same = json as? T { return same }
        switch json {
        case .string(let text): if let text = text as? T { return text }
        case .int(let number): if let number = number as? T { return number }
        case .bool(let flag): if let flag = flag as? T { return flag }
        default: break
        }
        do {
            return try JSONDecoder().decode(type, from: Data(json.serialized()))
        } catch {
            throw PromiseConnectionError(
                .decoding, "the value of \"\(id)\" does not decode as \(type): \(Self.describe(error))",
                data: json)
        }
    }

    /// A decoding error in one line: what was wrong, and where in the value.
    private static func describe(_ error: any Error) -> String {
        guard let decodingError = error as? DecodingError else { return "\(error)" }
        let context: DecodingError.Context
        switch decodingError {
        case .typeMismatch(_, let found), .valueNotFound(_, let found), .keyNotFound(_, let found), .dataCorrupted(let found):
            context = found
        @unknown default:
            return "\(error)"
        }
        let path = context.codingPath.map { $0.intValue.map { "[\($0)]" } ?? ".\($0.stringValue)" }.joined()
        return path.isEmpty ? context.debugDescription : "\(context.debugDescription) (at \(path))"
    }
}
