import Logging
import PromiseRPC

extension Promised {
    /// The limits from the command line, the rest at their defaults.
    var limits: DaemonLimits {
        var limits = DaemonLimits()
        if let maxLineBytes { limits.maxLineBytes = maxLineBytes }
        if let maxConnections { limits.maxConnections = maxConnections }
        if let maxOutputBufferBytes { limits.maxOutputBufferBytes = maxOutputBufferBytes }
        if let maxPromises { limits.maxPromises = maxPromises }
        if let maxRunningProcesses { limits.maxRunningProcesses = maxRunningProcesses }
        if let killGraceMs { limits.killGraceMilliseconds = killGraceMs }
        return limits
    }

    /// Says where promises are kept. The durable store is not built yet.
    func logStorage(_ logger: Logger) {
        if inMemory { return }
        logger.warning("The durable store is not implemented yet: promises are kept in memory only",
                       metadata: store.map { ["store": "\($0)"] } ?? [:])
    }

    /// Serves until SIGTERM/SIGINT: the registry and the dispatcher are built
    /// on the loop thread, where they live.
    func serve(limits: DaemonLimits, logger: Logger) throws {
        let server = try Server(socketPath: SocketPath.resolve(explicit: socket), limits: limits, logger: logger)
        try server.run { context in
            let registry = Registry(limits: context.limits, services: context.services,
                                    executor: context.executor, logger: context.logger)
            return Dispatcher(registry: registry, limits: context.limits, logger: context.logger)
        }
    }
}
