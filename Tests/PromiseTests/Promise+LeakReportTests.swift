import Foundation
import Promise
import Testing

/// The leak report is process-wide: these tests run one at a time, turn it
/// on for their own promises only, and look only at those (other suites
/// running meanwhile may make and free promises too).
@Suite("PromiseLeakReport", .serialized, .timeLimit(.minutes(5)))
struct PromiseLeakReportTests {
    @Test("a promise freed while pending with a handler on it is reported with name, serial number, type, handler count and chain")
    func freedPendingPromiseWithHandlerIsReported() {
        // Arrange.
        let leaks = Recorder<PromiseLeakReport.LeakedPromise>()
        let serial = withLeakReport(recordingInto: leaks) { () -> UInt64 in
            // Act: a pending promise with two observers, then dropped.
            let orphan = Promise<Int>().named("orphan")
            orphan.onSettled { _ in }
            orphan.onCancel {}
            return orphan.serialNumber
        }

        // Assert.
        let reported = leaks.values.filter { $0.serialNumber == serial }
        #expect(reported.count == 1)
        guard let leak = reported.first else { return }
        #expect(leak.name == "orphan")
        #expect(leak.typeName == "Promise<Int>")
        #expect(leak.handlerCount == 2)
        #expect(leak.age >= .zero && leak.age < .seconds(30))
        #expect(leak.chain == "Promise<Int> #\(serial) \"orphan\" generation 0: pending")
        #expect(leak.description.hasPrefix("Promise leaked: freed while pending, 2 handlers will never run (age "))
        #expect(leak.description.hasSuffix("\n  Promise<Int> #\(serial) \"orphan\" generation 0: pending"))
    }

    @Test("a child whose handler an executor dropped is reported with the chain it waited on")
    func leakedChildReportsItsChain() {
        // Arrange.
        let leaks = Recorder<PromiseLeakReport.LeakedPromise>()
        let (parentSerial, childSerial) = withLeakReport(recordingInto: leaks) { () -> (UInt64, UInt64) in
            let parent = Promise<String>().named("fetch")
            let child = parent.then(on: DroppingExecutor()) { $0.count }.named("parse")
            child.onSettled { _ in }
            // Act: the handler goes to an executor that drops it, so
            // nothing will ever settle the child, and nothing holds it.
            parent.fulfill("abc")
            return (parent.serialNumber, child.serialNumber)
        }

        // Assert.
        let reported = leaks.values.filter { $0.serialNumber == childSerial }
        #expect(reported.count == 1)
        #expect(reported.first?.handlerCount == 1)
        #expect(reported.first?.chain == """
            Promise<Int> #\(childSerial) "parse" generation 1: pending
              ← Promise<String> #\(parentSerial) "fetch" generation 0: fulfilled(abc)
            """)
        #expect(leaks.values.filter { $0.serialNumber == parentSerial }.isEmpty)
    }

    @Test("promises freed without handlers, or after settling, are not reported")
    func harmlessPromisesAreNotReported() {
        // Arrange.
        let leaks = Recorder<PromiseLeakReport.LeakedPromise>()
        let serials = withLeakReport(recordingInto: leaks) { () -> [UInt64] in
            // Act.
            let noHandlers = Promise<Int>()
            let settled = Promise<Int>()
            settled.onSettled { _ in }
            settled.fulfill(1)
            let cancelled = Promise<Int>()
            cancelled.onCancel {}
            cancelled.cancel()
            return [noHandlers.serialNumber, settled.serialNumber, cancelled.serialNumber]
        }

        // Assert.
        #expect(leaks.values.filter { serials.contains($0.serialNumber) }.isEmpty)
    }

    @Test("an abandoned then-chain keeps itself alive and is listed by pendingPromises, oldest first, with age and chain")
    func abandonedChainIsListedAsPending() async throws {
        // Arrange: a root and its child, every outside reference dropped
        // except a weak one to clean up with.
        let leaks = Recorder<PromiseLeakReport.LeakedPromise>()
        weak var weakRoot: Promise<Int>?
        let (rootSerial, childSerial) = withLeakReport(recordingInto: leaks) { () -> (UInt64, UInt64) in
            let root = Promise<Int>().named("abandoned root")
            let child = root.then { $0 + 1 }.named("abandoned child")
            weakRoot = root
            return (root.serialNumber, child.serialNumber)
        }
        try await Task.sleep(for: .milliseconds(60))

        // Act.
        let listed = PromiseLeakReport.pendingPromises().filter { [rootSerial, childSerial].contains($0.serialNumber) }
        let old = PromiseLeakReport.pendingPromises(olderThan: .milliseconds(50)).map(\.serialNumber)
        let ancient = PromiseLeakReport.pendingPromises(olderThan: .seconds(3_600)).map(\.serialNumber)

        // Assert: the parent↔child cycle keeps both alive, unreported.
        #expect(weakRoot != nil)
        #expect(leaks.values.filter { [rootSerial, childSerial].contains($0.serialNumber) }.isEmpty)
        #expect(listed.map(\.serialNumber) == [rootSerial, childSerial])
        #expect(listed.map(\.name) == ["abandoned root", "abandoned child"])
        #expect(listed.allSatisfy { $0.typeName == "Promise<Int>" && $0.age >= .milliseconds(50) })
        #expect(listed.last?.chain == """
            Promise<Int> #\(childSerial) "abandoned child" generation 1: pending
              ← Promise<Int> #\(rootSerial) "abandoned root" generation 0: pending
            """)
        // The age as the entry holds it (a loaded machine can take a second or more to get here).
        let rootAge = try #require(listed.first?.age)
        let tenths = rootAge.components.seconds * 10 + rootAge.components.attoseconds / 100_000_000_000_000_000
        #expect(listed.first?.description
            == "Promise<Int> #\(rootSerial) \"abandoned root\" generation 0: pending, for \(tenths / 10).\(tenths % 10) s")
        #expect(old.contains(rootSerial) && old.contains(childSerial))
        #expect(!ancient.contains(rootSerial) && !ancient.contains(childSerial))

        // Settled, they leave the list.
        weakRoot?.fulfill(1)
        try await Task.sleep(for: .milliseconds(200))
        let after = PromiseLeakReport.pendingPromises().map(\.serialNumber)
        #expect(!after.contains(rootSerial) && !after.contains(childSerial))
    }

    @Test("only pending promises made while the report is on are listed, and serial numbers keep counting without flag bits when it is on")
    func onlyPromisesMadeWhileOnAreWatched() {
        // Arrange.
        #expect(!PromiseLeakReport.isEnabled)
        let unwatched = Promise<Int>()
        let unwatchedChild = unwatched.then { $0 }
        defer { unwatched.fulfill(0) }
        let leaks = Recorder<PromiseLeakReport.LeakedPromise>()

        // Act.
        let (first, second, settled, listed) = withLeakReport(recordingInto: leaks) {
            () -> (UInt64, UInt64, UInt64, [UInt64]) in
            #expect(PromiseLeakReport.isEnabled)
            let first = Promise<Int>()
            let second = Promise<Int>()
            let settled = Promise<Int>()
            settled.fulfill(3)
            defer { first.fulfill(1); second.fulfill(2) }
            let listed = PromiseLeakReport.pendingPromises().map(\.serialNumber)
            return withExtendedLifetime(settled) { (first.serialNumber, second.serialNumber, settled.serialNumber, listed) }
        }

        // Assert.
        #expect(!PromiseLeakReport.isEnabled)
        #expect(!listed.contains(unwatched.serialNumber) && !listed.contains(unwatchedChild.serialNumber))
        #expect(listed.contains(first) && listed.contains(second))
        #expect(!listed.contains(settled), "a watched promise alive but settled is not listed")
        // Other suites make promises on other threads meanwhile, so the two
        // need not be adjacent; but turning the report on must not leave its
        // flag bits in serial numbers, nor make them jump.
        #expect(second > first && second - first < 1 << 20)
        #expect(first < 1 << 62 && second < 1 << 62)
    }
}

/// Runs `body` with the report on and its handler recording into `leaks`,
/// then restores both; the promises `body` drops are freed before it returns.
private func withLeakReport<T>(recordingInto leaks: Recorder<PromiseLeakReport.LeakedPromise>, _ body: () -> T) -> T {
    let previousHandler = PromiseLeakReport.handler
    PromiseLeakReport.handler = { leaks.append($0) }
    PromiseLeakReport.isEnabled = true
    defer {
        PromiseLeakReport.isEnabled = false
        PromiseLeakReport.handler = previousHandler
    }
    return body()
}

/// An executor that loses every piece of work it is given, as a stopped
/// executor does.
private struct DroppingExecutor: Executor {
    func execute(_ work: @escaping @Sendable () -> Void) {}
}
