internal import CLibUV
import Dispatch
import Foundation
import Glibc
import Logging

/// SIGTERM and SIGINT for a daemon, honoured within a second whatever the
/// loop is doing.
///
/// Watched on the loop (``Server``'s `handlesSignals`), a signal waits for
/// the loop: a request that held it for half an hour held SIGTERM as long.
/// Here a thread of its own takes the signals (`sigwait`), asks the server
/// to stop, and gives the loop ``grace`` to start stopping. If it does not,
/// the process exits at once: nothing acknowledged is lost that way, since
/// every answer waits for its change to be stored, and an exit mid-write is
/// what SQLite's journal is for. A second signal also exits at once.
///
/// The signals must be blocked in every thread, so call ``block()`` first
/// thing in `main`, before any thread starts (threads inherit the mask);
/// then build the server with `handlesSignals: false`.
///
/// ```swift
/// StopSignals.block()
/// let server = try Server(socketPath: path, logger: logger, handlesSignals: false)
/// StopSignals.watch(stop: server.stop, acknowledge: { server.executor.execute($0) }, logger: logger)
/// try server.run { context in makeDispatcher(context) }
/// ```
public enum StopSignals {
    /// How long the loop has to start stopping.
    public static let grace: Duration = .seconds(1)

    static let numbers = [SIGTERM, SIGINT]

    /// Blocks SIGTERM and SIGINT in the calling thread and in every thread it starts from now on.
    public static func block() {
        var mask = signalSet()
        pthread_sigmask(SIG_BLOCK, &mask, nil)
    }

    /// Starts the thread that waits for the signals; returns once it waits.
    ///
    /// - Parameters:
    ///   - stop: Asks the server to stop; returns at once (``Server/stop()``).
    ///   - acknowledge: Runs its argument on the loop, once the loop gets to
    ///     it; asked just before `stop`, in the same order.
    ///   - exit: Ends the process at once; `_exit` but in tests.
    /// - Returns: The waiting thread, which tests signal directly.
    @discardableResult
    public static func watch(
        stop: @escaping @Sendable () -> Void,
        acknowledge: @escaping @Sendable (@escaping @Sendable () -> Void) -> Void,
        logger: Logger,
        exit: @escaping @Sendable (Int32) -> Void = { Glibc._exit($0) }
    ) -> Watcher {
        let waiting = DispatchSemaphore(value: 0)
        let thread = ThreadBox()
        let watcher = Thread {
            // Blocked here too, for sigwait: the daemon blocked them before any
            // thread started; a test signals this thread alone.
            block()
            thread.value = pthread_self()
            waiting.signal()
            let first = waitForSignal()
            logger.notice("Stopping", metadata: ["signal": "\(name(of: first))"])
            let started = DispatchSemaphore(value: 0)
            // Asked before the stop, so that it runs just ahead of it: the
            // stop itself may hold the loop for longer than the grace (a
            // registry of millions of promises to let go), and a loop that
            // gets to it is not stuck.
            acknowledge { started.signal() }
            stop()
            let (seconds, attoseconds) = grace.components
            let deadline = DispatchTime.now() + .nanoseconds(Int(seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000))
            if started.wait(timeout: deadline) == .timedOut {
                logger.critical("The loop did not start stopping within \(grace): exiting now; every acknowledged change is stored",
                                metadata: ["signal": "\(name(of: first))"])
                return exit(1)
            }
            let second = waitForSignal()
            logger.critical("A second signal while stopping: exiting now", metadata: ["signal": "\(name(of: second))"])
            exit(1)
        }
        watcher.name = "promised-signals"
        watcher.start()
        waiting.wait()
        return Watcher(thread: thread.value!)
    }

    /// The thread that waits for the signals.
    public struct Watcher: Sendable {
        let thread: pthread_t

        /// Sends `signal` to that thread alone (for tests: a signal sent to
        /// the process could reach a thread that does not block it).
        func raise(_ signal: Int32) {
            pthread_kill(thread, signal)
        }
    }

    private static func waitForSignal() -> Int32 {
        var mask = signalSet()
        var number: Int32 = 0
        while sigwait(&mask, &number) != 0 {}
        return number
    }

    private static func signalSet() -> sigset_t {
        var mask = sigset_t()
        sigemptyset(&mask)
        for number in numbers { sigaddset(&mask, number) }
        return mask
    }

    private static func name(of number: Int32) -> String {
        number == SIGTERM ? "SIGTERM" : number == SIGINT ? "SIGINT" : "signal \(number)"
    }
}

/// Hands the watcher's thread id to ``StopSignals/watch(stop:acknowledge:logger:exit:)``.
private final class ThreadBox: @unchecked Sendable {  // Written before a semaphore signal, read after the wait.
    var value: pthread_t?
}
