import Dispatch
import Foundation
import Logging
import PromiseDispatch
import PromiseModel
import PromiseRPC
import PromiseRegistry
import PromiseSQLiteStore
import PromiseServer
import PromiseStore

extension Promised {
    /// The limits from the command line, the rest at their defaults; the
    /// connection limit, unless given, is what fits in `openFiles`
    /// descriptors (see `OpenFileLimit`).
    func limits(openFiles: Int) -> DaemonLimits {
        var limits = DaemonLimits()
        if let maxLineBytes { limits.maxLineBytes = maxLineBytes }
        if let maxOutputBufferBytes { limits.maxOutputBufferBytes = maxOutputBufferBytes }
        if let maxBufferedBytes { limits.maxBufferedBytes = maxBufferedBytes }
        if let lineTimeout { limits.lineTimeoutSeconds = lineTimeout }
        if let maxPromises { limits.maxPromises = maxPromises }
        if let maxRunningProcesses { limits.maxRunningProcesses = maxRunningProcesses }
        for pool in pools {
            if pool.name == DaemonLimits.defaultPoolName { limits.maxRunningProcesses = pool.limit } else { limits.pools[pool.name] = pool.limit }
        }
        if let maxQueued { limits.maxQueued = maxQueued }
        if let maxProcessOutputBytes { limits.maxProcessOutputBytes = maxProcessOutputBytes }
        if let killGraceMs { limits.killGraceMilliseconds = killGraceMs }
        limits.stopStepsAtStop = stopSteps
        if let maxValueBytes { limits.maxValueBytes = maxValueBytes }
        if let maxReasonBytes { limits.maxReasonBytes = maxReasonBytes }
        if let reservedConnections { limits.reservedConnections = reservedConnections }
        if let maxWaitersForUncreatedIds { limits.maxWaitersForUncreatedIDs = maxWaitersForUncreatedIds }
        if let maxSubscriptionsToUncreatedIds { limits.maxSubscriptionsToUncreatedIDs = maxSubscriptionsToUncreatedIds }
        if let maxRecordChildren { limits.maxRecordChildren = maxRecordChildren }
        if let maxBatchAnswerBytes { limits.maxBatchAnswerBytes = maxBatchAnswerBytes }
        if let maxTotalLogBytes { limits.maxTotalLogBytes = maxTotalLogBytes }
        // Unless given, no more than a `logs` answer fits in a client's output buffer.
        limits.maxLogBytes = maxLogBytes ?? min(limits.maxLogBytes, DaemonLimits.maxLogBytes(fitting: limits.maxOutputBufferBytes))
        limits.maxConnections = maxConnections ?? OpenFileLimit.connections(fitting: openFiles, limits: limits)
        return limits
    }

    /// Raises the soft limit on open files to the hard limit and logs both:
    /// each client is a descriptor. Returns the soft limit now in force.
    func raiseOpenFileLimit(_ logger: Logger) -> Int {
        let files = OpenFileLimit.raiseToHardLimit()
        logger.info("Open-file limit", metadata: [
            "soft": "\(files.soft)", "hard": "\(files.hard)", "wasSoft": "\(files.previousSoft)",
        ])
        return files.soft
    }

    /// The store, unless `--in-memory`: `--store`, else the default folder.
    /// Its lock file names `socketPath`, for a second daemon to report.
    func openStore(socketPath: String, _ logger: Logger) throws -> SQLitePromiseStore? {
        if inMemory {
            logger.info("Keeping promises in memory only (--in-memory): nothing survives a restart")
            return nil
        }
        // Its errors name the path and SQLite's reason; ArgumentParser prints them without the usage text.
        return try SQLitePromiseStore(directory: store ?? SQLitePromiseStore.defaultDirectory(), socketPath: socketPath)
    }

    /// Loads the store, then serves until SIGTERM/SIGINT. The registry and
    /// the dispatcher are built (and the promises restored) on the loop
    /// thread, where they live, before the first client is served. The
    /// signals are taken by a thread of their own (``StopSignals``), so that
    /// they are honoured within a second even while the loop is busy; the
    /// caller has blocked them before any thread started. Once clients are
    /// served, `notification` tells a service manager the daemon is ready.
    func serve(limits: DaemonLimits, logger: Logger, notification: ServiceNotification) throws {
        // A store that hits a file-size limit must fail its write, not kill the daemon.
        signal(SIGXFSZ, SIG_IGN)
        let target = StopTarget()
        StopSignals.watch(stop: target.stop, acknowledge: target.acknowledge, logger: logger)
        let socketPath = SocketPath.resolve(explicit: socket)
        let store = try openStore(socketPath: socketPath, logger)
        let stepFolder = try store?.stepOutputFolder()
        var stored = StoreContents()
        if let store {
            do {
                stored = try store.load()
            } catch {
                throw PromiseStoreError("cannot read the store \(store.location): \(error)")
            }
        }
        let server = try Server(socketPath: socketPath, limits: limits, logger: logger,
                                handlesSignals: false)
        target.serve(server)
        let retain = retain.milliseconds
        let leaseGrace = UInt64(clamping: leaseGrace.milliseconds)
        let loaded = stored
        try server.run { context in
            let journal = store.map { store in
                GroupCommit(store: store, loop: context.executor,
                            writer: DispatchQueue(label: "promised.store", qos: .userInitiated),
                            services: context.services, logger: context.logger)
            }
            let registry = Registry(limits: context.limits, services: context.services,
                                    executor: context.executor, journal: journal, logger: context.logger)
            registry.retain(forMilliseconds: retain)
            registry.leaseGraceMilliseconds = leaseGrace
            registry.stepOutputFolder = stepFolder
            let summary = registry.restore(loaded)
            if let store {
                context.logger.info("Store loaded", metadata: [
                    "store": "\(store.location)", "pending": "\(summary.pending)",
                    "settled": "\(summary.settled)", "rejectedAtStart": "\(summary.rejected)",
                    "quarantined": "\(summary.quarantined)", "stepsReattached": "\(summary.reattached)",
                    "stepsSettledFromWrittenOutcome": "\(summary.settledFromWrittenOutcome)",
                ])
            }
            // Clients waiting in the backlog are served right after this returns, on this thread.
            if let problem = notification.ready() {
                context.logger.warning("Cannot tell the service manager that the daemon is ready",
                                       metadata: ["reason": "\(problem)"])
            }
            return Dispatcher(registry: registry, limits: context.limits, logger: context.logger)
        }
    }
}
