import Logging
import PromiseModel
import PromiseRPC
import PromiseRegistry

/// What the server hands to the code that builds its request handler, on the
/// loop thread, before the first client is accepted.
///
/// ```swift
/// try server.run { context in
///     let registry = Registry(limits: context.limits, services: context.services,
///                             executor: context.executor, logger: context.logger)
///     return Dispatcher(registry: registry, limits: context.limits, logger: context.logger)
/// }
/// ```
///
/// Not `Sendable`: ``services`` belongs to the loop thread.
public struct ServerContext {
    /// Timers and child processes on the loop; loop thread only.
    public let services: any LoopServices
    /// Runs work on the loop thread, from any thread.
    public let executor: LoopExecutor
    public let limits: DaemonLimits
    public let logger: Logger
}
