import ArgumentParser
import PromiseClient
import PromiseJSON
import PromiseModel
import PromiseRPC

/// The exit statuses every command uses (pinned in the protocol notes), so a
/// script can tell the outcomes apart without parsing text.
extension ExitCode {
    /// 0: the command did its work; the promise is fulfilled (or still pending, for `get`).
    static let fulfilled = ExitCode.success
    /// 1: the promise was rejected.
    static let rejected = ExitCode(1)
    /// 2: the promise was cancelled.
    static let cancelled = ExitCode(2)
    /// 3: `wait --timeout` (or the promise's own timeout) passed first.
    static let timedOut = ExitCode(3)
    /// 4: no promise has that id.
    static let noSuchPromise = ExitCode(4)
    /// 5: the promise is already settled, or an id is already taken.
    static let alreadySettledOrExists = ExitCode(5)
    /// 64 (EX_USAGE): the command line is wrong; argument-parser uses it for its own errors too.
    /// Also a request longer than the daemon's line limit (-32004 with `data.limit` "maxLineBytes").
    static let usage = ExitCode.validationFailure
    /// 69 (EX_UNAVAILABLE): the daemon cannot be reached: nothing listens, it
    /// refused this client because it serves too many (-32004 with `data.limit`
    /// "maxConnections"), or the socket belongs to another user and was not used.
    static let daemonUnreachable = ExitCode(69)
    /// 70 (EX_SOFTWARE): anything else went wrong.
    static let internalError = ExitCode(70)

    /// The status for a promise in `state`: what `wait` and `get` exit with.
    init(state: BlockingPromiseClient.Record.State) {
        switch state {
        case .pending, .fulfilled: self = .fulfilled
        case .rejected: self = .rejected
        case .cancelled: self = .cancelled
        }
    }

    /// What `wait` exits with for a settled record: as ``init(state:)``, except
    /// that a rejection by the promise's own timeout (reason code -32005) is 3.
    static func forWaitedRecord(_ record: BlockingPromiseClient.Record) -> ExitCode {
        if record.state == .rejected && record.reasonCode == RPCError.Code.waitTimedOut.rawValue { return .timedOut }
        return ExitCode(state: record.state)
    }

    /// The status for an error answer of the daemon.
    init(rpcError: RPCError) {
        switch rpcError.code {
        case .noSuchPromise: self = .noSuchPromise
        case .alreadySettled, .alreadyExists: self = .alreadySettledOrExists
        case .waitTimedOut: self = .timedOut
        case .invalidParams, .invalidRequest, .methodNotFound: self = .usage
        case .limitExceeded where rpcError.data?["limit"]?.stringValue == "maxConnections":
            // Busy, not broken: a script may retry later.
            self = .daemonUnreachable
        case .limitExceeded where rpcError.data?["limit"]?.stringValue == "maxLineBytes":
            // The request itself is too large (a value, an environment): retrying cannot help.
            self = .usage
        default: self = .internalError
        }
    }

    /// The status for a failure of the connection itself.
    init(clientError: PromiseClientError) {
        switch clientError.code {
        case .daemonUnreachable, .connectionClosed, .socketPathTooLong, .foreignDaemon: self = .daemonUnreachable
        case .timedOut: self = .timedOut
        default: self = .internalError
        }
    }
}
