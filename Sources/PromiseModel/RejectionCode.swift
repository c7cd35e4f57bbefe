/// The error codes (docs/PROTOCOL.md, "Errors") that reasons the daemon
/// makes itself carry: a step refused for its params, a limit reached, a
/// timeout. The wire's `RPCError.Code` names the same numbers.
package enum RejectionCode {
    /// -32602: invalid params.
    package static let invalidParams = -32602
    /// -32004: a limit was reached.
    package static let limitExceeded = -32004
    /// -32005: a wait or a promise's own timeout ran out.
    package static let waitTimedOut = -32005
}
