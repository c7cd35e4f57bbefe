internal import CLibUV

/// A failed libuv call: the negative code it returned, libuv's name and text
/// for it, and the function that failed.
///
/// ```swift
/// do {
///     let server = try Server(socketPath: path, limits: limits, logger: logger)
/// } catch let error as UVError where error.name == "EADDRINUSE" {
///     // someone else is listening
/// }
/// ```
public struct UVError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The negative libuv error code (`UV_ENOENT`, …), which is `-errno` on Linux.
    public let code: Int32
    /// libuv's short name for the code, e.g. `"ENOENT"`.
    public let name: String
    /// libuv's text for the code, e.g. `"no such file or directory"`.
    public let message: String
    /// The call that failed, e.g. `"uv_pipe_bind"`.
    public let function: String

    public init(code: Int32, function: String) {
        self.code = code
        self.function = function
        name = String(cString: uv_err_name(code))
        message = String(cString: uv_strerror(code))
    }

    public var description: String {
        "\(function): \(message) (\(name))"
    }
}

/// The one funnel for libuv return codes: a negative code throws, anything
/// else is returned (some calls return a count).
@discardableResult
func uvCheck(_ code: Int32, _ function: String) throws(UVError) -> Int32 {
    if code < 0 {
        throw UVError(code: code, function: function)
    }
    return code
}
