import Dispatch
import Foundation
import Promise
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

// The locks under oversubscription: 64 threads on however many cores there
// are (two on the benchmark machine), each taking one shared lock over and
// over for a tiny critical section. Prints one JSON object per line:
// `{"name":…,"threads":…,"cores":…,"operations":…,"nsPerOperation":…,"cpuNsPerOperation":…,"wallMs":…}`,
// each figure the median of the rounds. nsPerOperation is wall time over all
// operations of all threads; cpuNsPerOperation is the process's CPU time
// (user + system) over them: what waiting burns, which a spinning lock
// spends and a sleeping one does not.
//
// A lock round lasts a fixed time (every thread stops at the end of it)
// rather than a fixed count: the slowest lock here is thousands of times
// slower than the fastest, and a count that keeps the threads overlapping
// for the fast ones would take minutes for the slow one.
//
//   ContentionBenchmarks [--threads 64] [--round-ms 300] [--rounds 3] [--chains-per-thread 2000]

let arguments = CommandLine.arguments
func argument(_ flag: String, default value: Int) -> Int {
    guard let index = arguments.firstIndex(of: flag), index + 1 < arguments.count,
          let parsed = Int(arguments[index + 1]), parsed > 0 else { return value }
    return parsed
}
let threads = argument("--threads", default: 64)
let roundMilliseconds = argument("--round-ms", default: 300)
let rounds = argument("--rounds", default: 3)
/// Each `then` keeps a promise alive until the round ends: a fixed count.
let promiseChainsPerThread = argument("--chains-per-thread", default: 2_000)

/// One contended subject: `prepare` is called once per round and returns the
/// work one thread does (until `stop`; it returns how many operations it
/// did) and a check of the shared state against the total, run when every
/// thread is done.
struct Subject {
    let name: String
    let prepare: () -> (work: @Sendable (borrowing Atomic<Bool>) -> Int, check: (Int) -> Bool)
}

/// Operations between two looks at the stop flag.
let batch = 16

/// What the lock rows need of a lock.
protocol CounterLock: ~Copyable {
    func lock()
    func unlock()
}

extension OldSpinLock: CounterLock {}
extension _FutexLock: CounterLock {}
extension NSLock: CounterLock {}

/// A counter behind a lock; every critical section is a read and a write of
/// it, so that two holders at once would lose an increment.
final class LockedCounter<Lock: CounterLock & ~Copyable>: @unchecked Sendable {  // `lock` guards `value`.
    let lock: Lock
    var value = 0

    init(_ lock: consuming Lock) {
        self.lock = lock
    }
}

/// The row of a lock made by `makeLock`: each operation takes it, adds one to
/// the counter, and lets it go.
func counterSubject<Lock: CounterLock & ~Copyable>(_ name: String, _ makeLock: @escaping () -> Lock) -> Subject {
    Subject(name: name) {
        let counter = LockedCounter(makeLock())
        return ({ stop in
            untilStopped(stop) {
                counter.lock.lock()
                counter.value &+= 1
                counter.lock.unlock()
            }
        }, { counter.value == $0 })
    }
}

/// Runs `operation` in batches until `stop`; returns how many it ran.
@inline(__always)
func untilStopped(_ stop: borrowing Atomic<Bool>, _ operation: () -> Void) -> Int {
    var done = 0
    while !stop.load(ordering: .relaxed) {
        for _ in 0..<batch { operation() }
        done += batch
    }
    return done
}

let lockSubjects: [Subject] = [
    counterSubject("contention.lock.oldSpinLock") { OldSpinLock() },
    counterSubject("contention.lock.futexLock") { _FutexLock() },
    Subject(name: "contention.lock.synchronizationMutex") {
        let mutex = Mutex(0)
        return ({ stop in
            untilStopped(stop) { mutex.withLock { $0 &+= 1 } }
        }, { total in mutex.withLock { $0 } == total })
    },
    counterSubject("contention.lock.NSLock") { NSLock() },
    // The promise lock itself, reached through the public API: setting a
    // promise's name is one lock, one store and one unlock (nil over nil
    // releases nothing), with the call's own overhead around them.
    Subject(name: "contention.lock.promiseName") {
        let promise = Promise<Int>()
        return ({ stop in
            untilStopped(stop) { promise.name = nil }
        }, { _ in promise.isPending })
    },
]

/// Promises shared by every thread: each thread chains a handler onto each of
/// 8 shared pending promises in turn, then tries to settle all of them (one
/// settle wins each) and the handlers run. An operation is one `then` or one
/// settle attempt; the count is fixed, `stop` is not looked at.
let sharedPromises = 8
/// Each thread writes only its own slot; the check reads them after every thread is done.
final class Children: @unchecked Sendable {
    var perThread: [[Promise<Int>]]
    init(_ count: Int) { perThread = Array(repeating: [], count: count) }
}
let promiseSubject = Subject(name: "contention.promises.chain+settle") {
    let shared = (0..<sharedPromises).map { _ in Promise<Int>() }
    let handled = Atomic<Int>(0)
    let children = Children(threads)
    let next = Atomic<Int>(0)
    return ({ _ in
        let slot = next.add(1, ordering: .relaxed).newValue - 1
        var mine: [Promise<Int>] = []
        mine.reserveCapacity(promiseChainsPerThread)
        for index in 0..<promiseChainsPerThread {
            mine.append(shared[(slot + index) % sharedPromises].then(on: .inline) { value in
                handled.add(1, ordering: .relaxed)
                return value &+ 1
            })
        }
        for (index, promise) in shared.enumerated() { promise.fulfill(index) }
        children.perThread[slot] = mine
        return promiseChainsPerThread + sharedPromises
    }, { _ in
        handled.load(ordering: .relaxed) == threads * promiseChainsPerThread
            && children.perThread.allSatisfy { $0.allSatisfy(\.isFulfilled) }
    })
}

struct Measurement {
    var wallNs: Double
    var cpuNs: Double
    var operations: Int
}

func cpuNanoseconds() -> Double {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    func ns(_ t: timeval) -> Double { Double(t.tv_sec) * 1e9 + Double(t.tv_usec) * 1e3 }
    return ns(usage.ru_utime) + ns(usage.ru_stime)
}

/// Starts `threads` threads, lets them all go at once when every one is
/// ready, stops them after the round's time (lock subjects), and measures
/// from the go to the last one's end.
func measure(_ subject: Subject, timed: Bool) -> Measurement {
    let (work, check) = subject.prepare()
    let ready = DispatchSemaphore(value: 0)
    let go = DispatchSemaphore(value: 0)
    let done = DispatchGroup()
    let stop = Atomic<Bool>(false)
    let total = Atomic<Int>(0)
    for _ in 0..<threads {
        done.enter()
        let thread = Thread {
            ready.signal()
            go.wait()
            total.add(work(stop), ordering: .relaxed)
            done.leave()
        }
        thread.stackSize = 1 << 20
        thread.start()
    }
    for _ in 0..<threads { ready.wait() }
    let clock = ContinuousClock()
    let cpuStart = cpuNanoseconds()
    let start = clock.now
    for _ in 0..<threads { go.signal() }
    if timed {
        usleep(UInt32(roundMilliseconds * 1000))
        stop.store(true, ordering: .relaxed)
    }
    done.wait()
    let elapsed = clock.now - start
    let cpu = cpuNanoseconds() - cpuStart
    let operations = total.load(ordering: .relaxed)
    guard check(operations) else {
        FileHandle.standardError.write(Data("\(subject.name): wrong result (the lock let two holders in)\n".utf8))
        exit(1)
    }
    let (seconds, attoseconds) = elapsed.components
    return Measurement(wallNs: Double(seconds) * 1e9 + Double(attoseconds) / 1e9, cpuNs: cpu, operations: operations)
}

let subjects = lockSubjects + [promiseSubject]
if arguments.contains("--list") {
    for subject in subjects { print(subject.name) }
    exit(0)
}
var samples = Array(repeating: [Measurement](), count: subjects.count)
// Rounds in turn, the order reversed every other round, so that a busy spell
// on the shared machine falls on every subject alike.
for round in 0..<rounds {
    let order = round % 2 == 0 ? Array(subjects.indices) : Array(subjects.indices.reversed())
    for index in order {
        samples[index].append(measure(subjects[index], timed: subjects[index].name.hasPrefix("contention.lock.")))
    }
}
for (index, subject) in subjects.enumerated() {
    func median(_ value: (Measurement) -> Double) -> Double { samples[index].map(value).sorted()[rounds / 2] }
    let fields = [
        "\"name\":\"\(subject.name)\"",
        "\"threads\":\(threads)",
        "\"cores\":\(ProcessInfo.processInfo.activeProcessorCount)",
        "\"operations\":\(Int(median { Double($0.operations) }))",
        "\"nsPerOperation\":\(String(format: "%.1f", median { $0.wallNs / Double($0.operations) }))",
        "\"cpuNsPerOperation\":\(String(format: "%.1f", median { $0.cpuNs / Double($0.operations) }))",
        "\"wallMs\":\(String(format: "%.1f", median { $0.wallNs / 1e6 }))",
    ]
    print("{" + fields.joined(separator: ",") + "}")
}
