import Foundation
@testable import Promise
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The lock inside every promise, alone: it excludes, its sleepers are woken, and a waiter
/// behind a holder that does not let go sleeps in the kernel instead of spinning.
/// Serialized: each test puts 64 threads on the machine's cores.
@Suite("Futex lock", .serialized, .timeLimit(.minutes(3)))
struct FutexLockTests {
    @Test("64 threads incrementing a plain counter under the lock: every increment counts")
    func mutualExclusionUnderSixtyFourThreads() async {
        let threads = 64
        let increments = 20_000
        let counter = _Locked(0)
        let finished = await runOnThreads(threads, timeout: .seconds(120)) { _ in
            for _ in 0..<increments {
                // A read and a write some work apart, so that two holders at once
                // (on the two cores) would lose updates.
                counter.withLock { value in
                    let read = value
                    var work = read
                    for step in 0..<20 { work = work &* 31 &+ step }
                    value = read &+ 1 &+ (work == .min ? 1 : 0)
                }
            }
        }
        #expect(finished)
        #expect(counter.withLock { $0 } == threads * increments)
    }

    @Test("64 threads holding the lock long enough for the others to sleep: every sleeper is woken and every acquire counts")
    func sleepersAreWoken() async {
        let threads = 64
        let acquires = 200
        let counter = _Locked(0)
        let sawSleepers = _Locked(0)
        let finished = await runOnThreads(threads, timeout: .seconds(120)) { _ in
            for round in 0..<acquires {
                counter.withLock { value in
                    value &+= 1
                    // Held across a real sleep now and then: the waiters spin out
                    // and park, and only the unlocks can wake them.
                    if round % 20 == 0 { usleep(200) }
                }
                if counter.lock.hasSleepers { sawSleepers.withLock { $0 &+= 1 } }
            }
        }
        #expect(finished, "a thread slept through its wake-up: some unlock lost it")
        #expect(counter.withLock { $0 } == threads * acquires)
        // The test is about sleepers: it must have made some.
        #expect(sawSleepers.withLock { $0 } > 0)
    }

    @Test("a waiter behind a held lock sleeps in the kernel (not spinning), and runs once the lock is released")
    func aWaiterSleepsWhileTheLockIsHeldAndRunsOnRelease() async {
        let guarded = _Locked(0)
        let waiterThread = _Locked<pid_t>(0)
        guarded.lock.lock()
        let waiter = Thread {
            waiterThread.withLock { $0 = currentKernelThreadID() }
            guarded.withLock { $0 = 1 }
        }
        waiter.start()
        guard await eventually(timeout: .seconds(20), { waiterThread.withLock { $0 != 0 } }) else {
            guarded.lock.unlock()
            Issue.record("the waiter thread did not start")
            return
        }
        let tid = waiterThread.withLock { $0 }
        let sleeping = await eventually(timeout: .seconds(20)) {
            guarded.lock.hasSleepers && threadState(tid) == "S"
        }
        #expect(sleeping, "the waiter never went to sleep on the lock")
        // Asleep means it has not taken the lock held here.
        #expect(guarded.state == 0)
        guarded.lock.unlock()
        let ran = await eventually(timeout: .seconds(20)) { guarded.withLock { $0 } == 1 }
        #expect(ran, "the sleeping waiter was not woken by the unlock")
        let sleepersLeft = guarded.lock.hasSleepers
        #expect(!sleepersLeft)
    }
}

/// The kernel's id of the calling thread: the last part of /proc/thread-self's target
/// ("PID/task/TID"), since Swift's Glibc module has no gettid.
private func currentKernelThreadID() -> pid_t {
    let target = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/thread-self")) ?? ""
    return target.split(separator: "/").last.flatMap { pid_t($0) } ?? -1
}

/// The scheduler state of thread `tid` of this process ("R" running, "S" asleep…), from
/// /proc/self/task/TID/stat, whose third field it is (after the name in parentheses).
private func threadState(_ tid: pid_t) -> String? {
    guard let stat = try? String(contentsOfFile: "/proc/self/task/\(tid)/stat", encoding: .utf8),
          let close = stat.lastIndex(of: ")") else { return nil }
    return stat[stat.index(after: close)...].split(separator: " ").first.map(String.init)
}
