import Foundation
import PromiseClient
import PromiseJSON
import PromiseModel
import PromiseRPC
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// `wait --cancel-on-signal`: Ctrl-C on a script waiting for a pipeline
/// stops the pipeline, not only the script.
///
/// SIGINT and SIGTERM are blocked in the process and taken by a thread of
/// their own (`sigwait`), so that the main thread can stay blocked reading
/// the daemon's answer. On a signal that thread cancels the promise over a
/// connection of its own (the daemon then cancels its pending descendants,
/// and what it was the last consumer of, stopping their commands) and ends
/// the process with the shell's status for that signal: 130 for SIGINT, 143
/// for SIGTERM. Once the wait has been answered, a signal cancels nothing.
///
/// The two threads race when a signal comes as the answer does; one state
/// word decides which one goes on: once the signal thread has begun to
/// cancel, the main thread, whose answer is then that cancellation, must not
/// print it and exit 2 before the signal thread exits 130 or 143.
///
/// ```swift
/// let armed = SignalCancellation.arm(cancelling: "build/test", socketPath: path)
/// let record = try client.call("wait", ["id": "build/test"], timeout: nil)
/// armed.disarm()   // never returns if a signal is being handled
/// ```
final class SignalCancellation: Sendable {
    /// The signals that cancel.
    static let signals: [Int32] = [SIGINT, SIGTERM]

    /// ``armed``, then ``answered`` or ``interrupted``, once.
    private let state = Atomic<Int>(SignalCancellation.armed)
    private static let armed = 0
    private static let answered = 1
    private static let interrupted = 2

    private init() {}

    /// Blocks ``signals`` (in this thread, and so in threads started from it)
    /// and starts the thread that waits for them. Call before any other thread starts.
    static func arm(cancelling id: String, socketPath: String) -> SignalCancellation {
        arm(signals: signals) { received in
            Self.cancel(id, socketPath: socketPath)
            // _exit: the main thread is blocked in a read, and may hold locks exit's handlers want.
            _exit(128 + received)
        }
    }

    /// Plain `wait` for a person: Ctrl-C (SIGINT) ends it as it always did,
    /// by the signal, after a line on stderr that says what of the pipeline
    /// still runs and the command that stops it (``InterruptNote``).
    static func armNote(for id: String, socketPath: String) -> SignalCancellation {
        arm(signals: [SIGINT]) { received in
            if let note = InterruptNote.text(for: id, socketPath: socketPath) { Failure.report(note) }
            // Dies by the signal, so that the shell running a script stops it too.
            signal(received, SIG_DFL)
            var unblocked = Self.blockedSet(of: [received])
            pthread_sigmask(SIG_UNBLOCK, &unblocked, nil)
            raise(received)
            _exit(128 + received)
        }
    }

    private static func arm(signals: [Int32], onSignal: @escaping @Sendable (Int32) -> Void) -> SignalCancellation {
        let armed = SignalCancellation()
        var blocked = Self.blockedSet(of: signals)
        pthread_sigmask(SIG_BLOCK, &blocked, nil)
        let thread = Thread {
            var waitedFor = Self.blockedSet(of: signals)
            var received: Int32 = 0
            guard sigwait(&waitedFor, &received) == 0 else { return }
            let (won, _) = armed.state.compareExchange(
                expected: Self.armed, desired: Self.interrupted, ordering: .acquiringAndReleasing)
            if won { onSignal(received) }
            _exit(128 + received)
        }
        thread.start()
        return armed
    }

    /// The wait was answered: a signal from now on only ends the process.
    /// If a signal came first, this thread waits here for the signal
    /// thread to cancel and end the process.
    func disarm() {
        let (won, current) = state.compareExchange(
            expected: Self.armed, desired: Self.answered, ordering: .acquiringAndReleasing)
        guard !won, current == Self.interrupted else { return }
        while true { pause() }
    }

    private static func blockedSet(of signals: [Int32]) -> sigset_t {
        var set = sigset_t()
        sigemptyset(&set)
        for signal in signals { sigaddset(&set, signal) }
        return set
    }

    /// Cancels `id`, saying so on stderr; a failure is reported, not thrown:
    /// the process ends for the signal either way.
    private static func cancel(_ id: String, socketPath: String) {
        do {
            let client = try BlockingPromiseClient(socketPath: socketPath, timeout: .seconds(5))
            defer { client.close() }
            try client.call("cancel", ["id": .string(id)])
            Failure.report("interrupted: cancelled \(id)")
        } catch let error as RPCError where error.code == .alreadySettled {
            // Settled meanwhile: its pending descendants were cancelled all the same.
            Failure.report("interrupted: \(id) had already settled; its pending steps were cancelled")
        } catch let error as RPCError {
            Failure.report("interrupted: could not cancel \(id): \(Failure.describe(error))")
        } catch let error as PromiseClientError {
            Failure.report("interrupted: could not cancel \(id): \(error.message)")
        } catch {
            Failure.report("interrupted: could not cancel \(id): \(error)")
        }
    }
}
