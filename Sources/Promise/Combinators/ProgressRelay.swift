#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Passes a combinator's progress on to its output in a loop rather than
/// nested: the output's `.inline` progress observers may be another
/// combinator's, which reports to its own output, one call deeper per link
/// of a chain of combinators.
///
/// The first report on a thread runs at once; reports made while it runs, on
/// that thread, are queued and run in order once it returns, before the
/// first report's caller gets control back.
@usableFromInline
enum _ProgressRelay {
    /// Reports queued by the relay running on this thread (nil when none runs).
    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key, nil)
        return key
    }()

    final class Queue {
        var reports: [() -> Void] = []
        var next = 0
    }

    /// Runs `report` now, or queues it behind the report this thread is running.
    @usableFromInline
    static func run(_ report: @escaping () -> Void) {
        if let running = pthread_getspecific(key) {
            Unmanaged<Queue>.fromOpaque(running).takeUnretainedValue().reports.append(report)
            return
        }
        let queue = Queue()
        pthread_setspecific(key, Unmanaged.passUnretained(queue).toOpaque())
        defer { pthread_setspecific(key, nil) }
        report()
        while queue.next < queue.reports.count {
            let next = queue.reports[queue.next]
            queue.next += 1
            next()
        }
    }
}
