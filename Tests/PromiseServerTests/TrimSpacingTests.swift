@testable import PromiseServer
import Testing

/// How long the daemon waits between two heap trims (`ConnectionMemory`).
@Suite("heap trim spacing")
struct TrimSpacingTests {
    @Test("a quick trim is followed by the next one second later at the earliest")
    func quickTrimWaitsTheInterval() {
        #expect(ConnectionMemory.nextTrimAllowed(now: 5_000, tookMilliseconds: 0) == 6_000)
        #expect(ConnectionMemory.nextTrimAllowed(now: 5_000, tookMilliseconds: 10) == 6_000)
    }

    @Test("a slow trim is followed by the next after a hundred times its duration")
    func slowTrimWaitsItsCost() {
        #expect(ConnectionMemory.nextTrimAllowed(now: 5_000, tookMilliseconds: 11) == 6_100)
        #expect(ConnectionMemory.nextTrimAllowed(now: 5_000, tookMilliseconds: 300) == 35_000)
    }
}
