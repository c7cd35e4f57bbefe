import Promise
import PromiseJSON

/// Why a remote promise was rejected: the `reason` of its record,
/// `{"code":int?, "message":string, "data":any?}`, and the error its core
/// `Promise<JSONValue>` is rejected with.
///
/// `reject` turns its `reason` param into one of these; errors the core makes
/// itself (cancellation, timeouts, combinator failures) are turned into reasons
/// by ``init(describing:inputIDs:)``.
///
/// ```swift
/// promise.reject(RemoteRejection(code: 2, message: "make failed"))
/// RemoteRejection(describing: CancellationError()).json   // {"message":"cancelled"}
/// ```
public struct RemoteRejection: Error, Sendable, Hashable, CustomStringConvertible {
    /// An application-defined code, e.g. a command's exit status.
    public var code: Int?
    public var message: String
    /// Anything else the rejecting side wants to pass on.
    public var data: JSONValue?
    /// The id of the promise where this rejection began: the one a client
    /// rejected, whose command failed, whose timeout or lease ran out, or the
    /// combinator that made this reason from its inputs'. It stays the same
    /// as the rejection passes on through `then` children and combinators,
    /// so a failure far down a pipeline names the step that failed.
    /// Nil for reasons made before origins were kept, and for cancellations.
    public var origin: String?

    public init(code: Int? = nil, message: String, data: JSONValue? = nil, origin: String? = nil) {
        self.code = code
        self.message = message
        self.data = data
        self.origin = origin
    }

    /// This rejection, beginning at promise `id` unless it already names
    /// where it began (a rejection passed on keeps its first origin).
    ///
    /// ```swift
    /// RemoteRejection(message: "boom").at("cc/f07").json   // {"message":"boom","origin":"cc/f07"}
    /// ```
    public func at(_ id: String) -> RemoteRejection {
        guard origin == nil else { return self }
        var stamped = self
        stamped.origin = id
        return stamped
    }

    /// Reads a reason as `reject` takes it: an object with a string "message"
    /// (and optionally a whole-number "code" and any "data"), or a bare string
    /// taken as the message.
    ///
    /// - Throws: ``InvalidReason`` naming `param` for anything else.
    package init(checking json: JSONValue, param: String = "reason") throws(InvalidReason) {
        switch json {
        case .string(let text):
            self.init(message: text)
        case .object(let members):
            guard case .string(let message)? = members["message"] else {
                throw InvalidReason(param: param, message: "\"\(param)\" must have a string \"message\"")
            }
            var code: Int?
            if let codeValue = members["code"], !codeValue.isNull {
                guard let number = codeValue.intValue else {
                    throw InvalidReason(param: param, message: "\"\(param).code\" must be a whole number")
                }
                code = number
            }
            // A null "data" is no data (beware: `nil` in a JSONValue context is `.null`).
            var data: JSONValue?
            if let member = members["data"], !member.isNull { data = member }
            // Kept as given: `reject` stamps its own id over it, a stored reason keeps its origin.
            self.init(code: code, message: message, data: data, origin: members["origin"]?.stringValue)
        default:
            throw InvalidReason(
                param: param, message: "\"\(param)\" must be an object with a \"message\", or a string")
        }
    }

    /// Why a JSON value is not a reason: the param it came in and what is wrong with it.
    package struct InvalidReason: Error, Hashable {
        package let param: String
        package let message: String
    }

    /// The reason as it appears in records: `{"code":…,"message":…,"data":…,"origin":…}`,
    /// without the members that are absent.
    public var json: JSONValue {
        var members: [String: JSONValue] = ["message": .string(message)]
        if let code { members["code"] = .int(code) }
        if let data { members["data"] = data }
        if let origin { members["origin"] = .string(origin) }
        return .object(members)
    }

    public var description: String {
        code.map { "\(message) (code \($0))" } ?? message
    }

    /// The reason for any error a remote promise can be rejected with.
    ///
    /// - `RemoteRejection`: itself.
    /// - `CancellationError`: `{"message":"cancelled"}`.
    /// - `PromiseError.timedOut` (a `create` with `timeoutMs`): code -32005, "timed out".
    /// - `AggregateError` (`all` with `all-errors`, `any` when every input
    ///   failed): `data.errors` lists `{"index","id","reason"}` per failed input
    ///   (each reason with its own `origin`); `inputIDs` gives the ids of the
    ///   combinator's inputs, by index, and `origin` the combinator's id.
    /// - a ``RemoteRejectionConvertible`` error (a JSON-RPC error): the reason it gives.
    /// - anything else: its description as the message.
    public init(describing error: any Error, inputIDs: [String]? = nil, origin: String? = nil) {
        switch error {
        case let rejection as RemoteRejection:
            self = rejection
        case is CancellationError:
            self.init(message: "cancelled")
        case let promiseError as PromiseError:
            // Compared, not switched over: the core may add cases.
            if promiseError == .timedOut {
                self.init(code: RejectionCode.waitTimedOut, message: "timed out")
            } else if promiseError == .cycle {
                self.init(message: "the promise would wait on itself (cycle)")
            } else if promiseError == .emptyInput {
                self.init(message: "no input promises")
            } else {
                self.init(message: String(describing: promiseError))
            }
        case let aggregate as AggregateError:
            let failures: [JSONValue] = aggregate.failures.map { failure in
                var entry: [String: JSONValue] = [
                    "index": .int(failure.index),
                    "reason": RemoteRejection(describing: failure.error).json,
                ]
                if let inputIDs, inputIDs.indices.contains(failure.index) {
                    entry["id"] = .string(inputIDs[failure.index])
                }
                return .object(entry)
            }
            let total = inputIDs.map { " of \($0.count)" } ?? ""
            self.init(
                message: "\(failures.count)\(total) input promises were rejected",
                data: ["errors": .array(failures)], origin: origin)
        case let convertible as any RemoteRejectionConvertible:
            self = convertible.remoteRejection
        default:
            self.init(message: String(describing: error))
        }
    }
}

/// Bounding the reasons the daemon makes from other reasons.
///
/// An `any` whose inputs all failed, or an `all` with `all-errors`, lists
/// each failure's reason in its own (`data.errors`); over a chain of such
/// combinators every level wraps the one below, four JSON levels at a time,
/// and over many inputs the list grows with them. Past the limits a reason
/// keeps what users need, the origin of the failure: the innermost causes,
/// each with the id of the promise that failed first and its message.
extension RemoteRejection {
    /// This reason, if its JSON nests at most `maxDepth` levels and takes at
    /// most `maxBytes` bytes; otherwise a summary that does, with the same
    /// code and message: `data.errors` lists the innermost causes (the
    /// entries, at any level of nested `data.errors`, whose reason lists no
    /// errors of its own) as `{"id", "via"?, "reason":{"code"?, "message", "origin"?}}`,
    /// where `via` is the input of this promise through which the cause came
    /// (left out when it is the cause itself), as many as fit, in order;
    /// `data.truncated` is true and `data.omitted` counts the causes left out
    /// (a failed input not looked into counts as one). A message too long to
    /// fit is cut, ending with "…"; each cause's `data` is dropped.
    ///
    /// ```swift
    /// // x1 = any([x0]), x2 = any([x1]), …, x0 rejected "disk full": each link
    /// // nests four levels deeper, and x32's reason would be 129 levels deep.
    /// x32Reason.bounded(maxDepth: 128, maxBytes: 65_536).json
    /// // {"message":"1 of 1 input promises were rejected",
    /// //  "data":{"errors":[{"id":"x0","via":"x31","reason":{"message":"disk full"}}],
    /// //          "omitted":0,"truncated":true}}
    /// ```
    public func bounded(maxDepth: Int, maxBytes: Int) -> RemoteRejection {
        let whole = json
        if whole.serializedByteCount(upTo: maxBytes) <= maxBytes && whole.depth <= maxDepth { return self }
        var summary = RemoteRejection(
            code: code, message: Self.cut(message, toBytes: max(16, maxBytes / 4)), origin: origin)
        // What the summary takes without its causes: its code, its message and
        // `{"errors":[],"omitted":N,"truncated":true}` with room for any N.
        let frame = summary.json.serializedByteCount() + #","data":{"errors":[],"omitted":,"truncated":true}"#.utf8.count + 20
        var causes = CauseList(budget: maxBytes - frame)
        if maxDepth >= 5, case .array(let failures)? = data?["errors"] {
            // 5: the summary's reason, data, errors, a cause and its reason.
            for failure in failures { causes.collect(failure, via: failure["id"]?.stringValue) }
        } else if case .array(let failures)? = data?["errors"] {
            causes.omitted = failures.count
        }
        var members: [String: JSONValue] = ["truncated": true, "omitted": .int(causes.omitted)]
        if maxDepth >= 3 { members["errors"] = .array(causes.kept) }  // the summary's reason, data, errors
        summary.data = maxDepth >= 2 ? .object(members) : nil
        return summary
    }

    /// `text` cut to at most `limit` bytes of UTF-8 (the cut marked "…"), at a
    /// scalar boundary.
    package static func cut(_ text: String, toBytes limit: Int) -> String {
        guard text.utf8.count > limit else { return text }
        let ellipsis = "…"
        var end = text.utf8.index(text.utf8.startIndex, offsetBy: max(0, limit - ellipsis.utf8.count))
        while end > text.startIndex && end.samePosition(in: text.unicodeScalars) == nil {
            end = text.utf8.index(before: end)
        }
        return String(text.unicodeScalars[..<end]) + ellipsis
    }

    /// The causes a summary keeps, gathered within a byte budget.
    private struct CauseList {
        var budget: Int
        var kept: [JSONValue] = []
        var omitted = 0
        /// A cause is not kept with less room than this for its message.
        static let minimumMessageBytes = 64

        /// Adds the causes under one `data.errors` entry, reached through
        /// this promise's input `via`.
        mutating func collect(_ entry: JSONValue, via: String?) {
            guard budget > 0 else {
                omitted += 1
                return
            }
            guard let reason = entry["reason"] else {
                omitted += 1
                return
            }
            if case .array(let inner)? = reason["data"]?["errors"], !inner.isEmpty,
               inner.allSatisfy({ $0["reason"] != nil }) {
                // A reason made of other reasons: its causes lie below. A summary says how many it left out.
                omitted += reason["data"]?["omitted"]?.intValue ?? 0
                for nested in inner { collect(nested, via: via) }
                return
            }
            var cause: [String: JSONValue] = [:]
            let id = entry["id"]?.stringValue
            if let id { cause["id"] = .string(id) }
            if let via, via != id { cause["via"] = .string(via) }
            if id == nil, let index = entry["index"] { cause["index"] = index }
            var causeReason: [String: JSONValue] = [:]
            if let code = reason["code"], !code.isNull { causeReason["code"] = code }
            if let origin = reason["origin"]?.stringValue { causeReason["origin"] = .string(origin) }
            var message = reason["message"]?.stringValue ?? ""
            var entryBytes = 0
            // The first cause is kept even when its message alone is too long: cut to fit.
            // Cut by unescaped bytes in proportion, again if escapes (up to six bytes for
            // one) still make it too long.
            for _ in 0..<8 {
                causeReason["message"] = .string(message)
                cause["reason"] = .object(causeReason)
                entryBytes = JSONValue.object(cause).serializedByteCount() + 1  // and a comma
                guard entryBytes > budget, kept.isEmpty else { break }
                let quoted = JSONValue.quotedByteCount(message, limit: .max)
                let room = budget - (entryBytes - quoted) - 2
                guard room >= Self.minimumMessageBytes else { break }
                let bytes = message.utf8.count
                message = RemoteRejection.cut(message, toBytes: min(bytes - 1, bytes * room / max(1, quoted - 2)))
            }
            guard entryBytes <= budget else {
                budget = 0
                omitted += 1
                return
            }
            budget -= entryBytes
            kept.append(.object(cause))
        }
    }
}

extension RemoteRejection {
    /// Why a command fails its step whatever its exit status: its stdout,
    /// the step's value, was longer than `limit` bytes. `then … exec`
    /// (`maxProcessOutputBytes`; the daemon kills the command at the limit)
    /// and `promisectl run` (the same limit, read from `info`) both reject
    /// such a step with this reason rather than fulfil it with a value cut short.
    ///
    /// ```swift
    /// RemoteRejection.stdoutTooLarge(limit: 1_048_576).json
    /// // {"code":-32004,"message":"stdout was larger than 1048576 bytes (…)",
    /// //  "data":{"limit":"maxProcessOutputBytes","value":1048576}}
    /// ```
    public static func stdoutTooLarge(limit: Int) -> RemoteRejection {
        RemoteRejection(
            code: RejectionCode.limitExceeded,
            message: "stdout was larger than \(limit) bytes (the daemon's maxProcessOutputBytes; "
                + "promised --max-process-output-bytes sets it); write large output to a file and print its path",
            data: ["limit": "maxProcessOutputBytes", "value": .int(limit)])
    }
}

/// An error that says itself which reason a promise rejected with it
/// carries: the wire's errors, which the model does not know, give their
/// code, message and data.
public protocol RemoteRejectionConvertible: Error {
    var remoteRejection: RemoteRejection { get }
}
