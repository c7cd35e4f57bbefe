import PromiseJSON
import PromiseModel
import PromiseRPC

/// A promise as the daemon holds it: its record (docs/PROTOCOL.md, "The
/// promise record"), typed. Fields the daemon leaves out are nil; every field
/// it sent, known here or not, is in ``json``.
///
/// ```swift
/// let record = try await remote.get("build/lib")
/// switch record.state {
/// case .fulfilled: print(try record.value(as: Artifact.self))
/// case .rejected: print(record.reason?.message ?? "", "began at", record.reason?.origin ?? "?")
/// case .pending, .cancelled: break
/// }
/// ```
public struct PromiseRecord: Sendable, Hashable {
    /// The states of a remote promise. A record with any other state does not decode.
    public enum State: String, Sendable, Hashable, CaseIterable {
        case pending, fulfilled, rejected, cancelled
    }

    public var id: String
    public var state: State
    /// The value, present only when fulfilled (a fulfilled `null` is `.null`).
    public var value: JSONValue?
    /// Why it was rejected or cancelled, with the id where the rejection began (`origin`).
    public var reason: RemoteRejection?
    /// The id it follows (`then` children), else nil.
    public var parent: String?
    /// The `name` given at creation.
    public var name: String?
    /// How it was made: `created`, `then`, `all`, `any`, `race`, `allSettled`.
    public var kind: String?
    /// 0…1, never backwards; 1 once fulfilled.
    public var progress: Double?
    /// The last message given with a progress report.
    public var progressMessage: String?
    /// When it was made and settled, in milliseconds since 1970.
    public var createdMilliseconds: Int?
    public var settledMilliseconds: Int?
    /// True when its holder's connection closing rejects it.
    public var lease: Bool
    /// Exec steps: the command's process id while it runs.
    public var pid: Int?
    /// Exec steps: how the command exited (128 + N when killed by signal N).
    public var exitStatus: Int?
    /// Exec steps: the node of a cluster that runs or ran it.
    public var node: String?
    /// The record as the daemon sent it.
    public var json: JSONValue

    /// Reads a record.
    /// - Throws: ``PromiseConnectionError`` (``PromiseConnectionError/Code/invalidResponse``)
    ///   when `id` or `state` is missing or unknown, or a reason has no message.
    public init(_ json: JSONValue) throws(PromiseConnectionError) {
        guard case .object(let members) = json,
            case .string(let id)? = members["id"],
            case .string(let stateText)? = members["state"],
            let state = State(rawValue: stateText)
        else {
            throw PromiseConnectionError(.invalidResponse, "the daemon sent a malformed promise record: \(json)")
        }
        self.id = id
        self.state = state
        self.json = json
        value = state == .fulfilled ? (members["value"] ?? .null) : nil
        if let reasonJSON = members["reason"], !reasonJSON.isNull {
            do {
                reason = try RemoteRejection(json: reasonJSON)
            } catch {
                throw PromiseConnectionError(.invalidResponse, "the daemon sent a malformed reason for \(id): \(reasonJSON)")
            }
        }
        parent = members["parent"]?.stringValue
        name = members["name"]?.stringValue
        kind = members["kind"]?.stringValue
        progress = members["progress"]?.doubleValue
        progressMessage = members["progressMessage"]?.stringValue
        createdMilliseconds = members["created"]?.intValue
        settledMilliseconds = members["settled"]?.intValue
        lease = members["lease"]?.boolValue ?? false
        pid = members["pid"]?.intValue
        exitStatus = members["exitStatus"]?.intValue
        node = members["node"]?.stringValue
    }

    /// True once it is fulfilled, rejected or cancelled.
    public var isSettled: Bool { state != .pending }

    /// The value decoded as `type`.
    ///
    /// ```swift
    /// let artifact = try record.value(as: Artifact.self)
    /// ```
    /// - Throws: ``PromiseConnectionError`` with ``PromiseConnectionError/Code/decoding``
    ///   when it is not fulfilled or the value does not decode as `type`.
    public func value<T: Decodable>(as type: T.Type) throws(PromiseConnectionError) -> T {
        guard let value else {
            throw PromiseConnectionError(.decoding, "promise \"\(id)\" is \(state.rawValue), it has no value")
        }
        return try RemoteValueCoding.decode(value, as: type, id: id)
    }
}
